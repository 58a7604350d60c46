import SegnoAudio
import SegnoCore
import SegnoCoreTestSupport
import Testing

/// `resample: { quality: polyphase }`: exact length, aligned with libsamplerate's best, and the
/// same output whatever the block size.
@Suite struct PolyphaseResampleTests {
    @Test(arguments: [(44100, 16000), (48000, 44100), (8000, 48000), (44100, 22050)])
    func exactLengthAndCloseToLibsamplerateBest(_ rates: (Int, Int)) throws {
        let (from, to) = rates
        let frames = from + 1234
        let x = Signal.sine(frequency: 1000, rate: from, frames: frames, channels: 2, amplitude: 0.5)
        let poly = try runChain(x, channels: 2, rate: from, [ResampleConfig(rate: to, quality: .polyphase)])
        let best = try runChain(x, channels: 2, rate: from, [ResampleConfig(rate: to, quality: .best)])
        let want = Int((Double(frames) * Double(to) / Double(from)).rounded())
        #expect(poly.frames == want)
        #expect(poly.format?.sampleRate == to)
        // Away from the edges (filters ring there differently) the two agree closely: aligned, same gain.
        let edge = to / 10 * 2
        let a = Array(poly.samples[edge..<(poly.samples.count - edge)]), b = Array(best.samples[edge..<(best.samples.count - edge)])
        #expect(maxAbsDifference(a, b) < 2e-3)
    }

    @Test func blockSizeDoesNotChangeTheOutput() throws {
        let x = Signal.noise(frames: 20000, channels: 2)
        let cfg = [ResampleConfig(rate: 16000, quality: .polyphase)] as [any TransformConfig]
        let ref = try runChain(x, channels: 2, rate: 44100, cfg, blockFrames: 4096).samples
        for block in [1, 7, 1000] {
            #expect(try runChain(x, channels: 2, rate: 44100, cfg, blockFrames: block).samples == ref)
        }
    }
}
