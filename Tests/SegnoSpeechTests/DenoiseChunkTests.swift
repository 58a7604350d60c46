import Foundation
import SegnoAudio
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
@testable import SegnoSpeech
import Testing

/// `denoise` in chunks (decision 0099): `DenoiseChunks` with engines whose output is known, then
/// DeepFilterNet itself through the stage: the same bytes two chunks at a time or one after the
/// other, whatever the block sizes, and close to one engine over the whole recording.
@Suite struct DenoiseChunkTests {
    /// Delays its input by `delay` samples, plus a trace of its own history (frames heard × 1e-4,
    /// so a lane's warm-up and the chunks it heard before show in its output).
    final class TracingEngine: FrameDenoiser {
        let delay: Int
        let traced: Bool
        private var history: [Float]
        private var heard = 0
        init(delay: Int, traced: Bool) {
            self.delay = delay
            self.traced = traced
            history = [Float](repeating: 0, count: delay)
        }
        func process(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
            let n = DenoiseEngine.frame
            let all = history + Array(UnsafeBufferPointer(start: input, count: n))
            for i in 0..<n { output[i] = all[i] + (traced ? Float(heard) * 1e-4 : 0) }
            history = Array(all[n...])
            heard += 1
        }
    }

    /// `x` (interleaved) through `DenoiseChunks` in blocks of `block` frames.
    static func run(_ x: [Float], channels: Int, block: Int, overlap: Bool, traced: Bool = false, delay: Int = 1440) throws -> [Float] {
        let chunks = try DenoiseChunks(channels: channels, delay: delay) { (0..<channels).map { _ in TracingEngine(delay: delay, traced: traced) } }
        if overlap { chunks.overlap() }
        var out = AudioBlock(channels: channels)
        var y: [Float] = []
        let frames = x.count / channels
        var at = 0
        try x.withUnsafeBufferPointer { p in
            while at < frames {
                let n = min(block, frames - at)
                try chunks.append(p.baseAddress! + at * channels, frames: n)
                out.frames = 0
                chunks.emit(maxFrames: n, into: &out)
                y += out.samples[0..<(out.frames * channels)]
                at += n
            }
        }
        try chunks.finish()
        out.frames = 0
        chunks.emit(maxFrames: nil, into: &out)
        y += out.samples[0..<(out.frames * channels)]
        return y
    }

    static let second = DenoiseEngine.rate

    /// The first index where `a` and `b` differ (or where one ends), nil when equal.
    static func firstDifference(_ a: [Float], _ b: [Float]) -> Int? {
        a.indices.first { $0 >= b.count || a[$0] != b[$0] } ?? (a.count == b.count ? nil : a.count)
    }

    @Test func theOutputIsTheInputLinedUpAcrossChunksAndFades() throws {
        // 25.3 s of stereo: three chunks, the last partial; a delaying engine gives the input back.
        let frames = 25 * Self.second + 14_401
        let x = Signal.noise(frames: frames * 2, amplitude: 0.5, seed: 9)
        let y = try Self.run(x, channels: 2, block: 4096, overlap: false)
        #expect(y.count == x.count)
        let worst = zip(x, y).map { abs($0 - $1) }.max() ?? 1
        #expect(worst < 1e-6, "the chunks moved or lost samples: \(worst)")
    }

    @Test func twoAtATimeOrOneAfterTheOtherAndAnyBlocksGiveTheSameSamples() throws {
        let frames = 31 * Self.second + 777
        let x = Signal.noise(frames: frames, amplitude: 0.5, seed: 4)
        let one = try Self.run(x, channels: 1, block: 4096, overlap: false, traced: true)
        #expect(one.count == x.count)
        for (block, overlap) in [(4096, true), (1000, true), (333, false), (frames, false), (frames, true), (96_000, true)] {
            let other = try Self.run(x, channels: 1, block: block, overlap: overlap, traced: true)
            #expect(other.count == one.count)
            let differ = Self.firstDifference(one, other)
            #expect(differ == nil, "blocks of \(block), overlap \(overlap): first difference at sample \(differ ?? -1)")
        }
    }

    @Test func eachChunkIsHeardByItsLaneAfterAWarmUpAndFadesIn() throws {
        // The traced engine's offset tells which lane made a sample and how many frames it had heard.
        let frames = 30 * Self.second
        let x = [Float](repeating: 0, count: frames)
        let y = try Self.run(x, channels: 1, block: 4096, overlap: true, traced: true)
        let f = DenoiseEngine.frame, c = DenoiseChunks.chunkFrames * f, delayFrames = 3
        func heard(_ sample: Int) -> Int { Int((y[sample] / 1e-4).rounded()) }
        // Chunk 0 (lane 0): sample s is made when frame s/f + delay has been heard.
        #expect(heard(f * 10) == 10 + delayFrames)
        // Chunk 1 (lane 1, fresh): heard its warm-up first; chunk 2 (lane 0 again): chunk 0, its
        // delay and fade, then its own warm-up.
        let fade = DenoiseChunks.fadeFrames * f
        #expect(heard(c + fade + f * 5) == DenoiseChunks.warmFrames + 5 + 2 + delayFrames)
        let lane0 = DenoiseChunks.chunkFrames + delayFrames + DenoiseChunks.fadeFrames
        #expect(heard(2 * c + fade + f * 5) == lane0 + DenoiseChunks.warmFrames + 5 + 2 + delayFrames)
        // Inside the fade the two lanes' outputs mix: strictly between the two.
        let before = Float(DenoiseChunks.chunkFrames + delayFrames) * 1e-4, after = Float(DenoiseChunks.warmFrames + delayFrames) * 1e-4
        let mid = y[c + fade / 2]
        #expect(mid < before && mid > after, "\(mid) between \(after) and \(before)")
    }

    @Test func aRecordingOfOneChunkIsDenoisedAsByOneEngine() throws {
        let frames = 9 * Self.second + 123
        let x = Signal.noise(frames: frames, amplitude: 0.5, seed: 2)
        let y = try Self.run(x, channels: 1, block: 4096, overlap: true, traced: true)
        // One engine over the whole: frame k's output carries k frames heard.
        let engine = TracingEngine(delay: 1440, traced: true)
        var whole: [Float] = []
        var frame = [Float](repeating: 0, count: DenoiseEngine.frame), o = frame
        let padded = x + [Float](repeating: 0, count: 1440 + DenoiseEngine.frame)
        for k in 0..<(padded.count / DenoiseEngine.frame) {
            for i in 0..<DenoiseEngine.frame { frame[i] = padded[k * DenoiseEngine.frame + i] }
            engine.process(frame, &o)
            whole += o
        }
        #expect(Array(whole[1440..<(1440 + frames)]) == y)
    }

    /// DeepFilterNet through the stage on 32 s of LibriVox speech in brown noise, 44.1 kHz: two
    /// chunks at a time (split) and one after the other give the same samples, and both stay
    /// within 25 dB of one engine over the whole (the chunks' warm-up and fades).
    @Test func deepFilterNetInChunksIsTheSameSplitOrNot() throws {
        var speech: [Float] = []
        for name in [Speech.short, Speech.amiable] { speech += try Speech.utterance(name, rate: 44100) + [Float](repeating: 0, count: 22050) }
        while speech.count < 32 * 44100 { speech += speech }
        let noise = Speech.noise(frames: speech.count, rms: 0.02)
        let x = zip(speech, noise).map { $0 + $1 }
        func denoise(overlap: Bool, block: Int, chunkFrames: Int = DenoiseChunks.chunkFrames) throws -> [Float] {
            let t = DenoiseTransform(config: DenoiseConfig(engine: .deepfilter), chunkFrames: chunkFrames)
            if overlap { t.overlap() }
            let tap = CollectTap()
            _ = try StageChain(elements: [.transform(t), .tap(tap)], blockFrames: block).run(decoder: MemoryDecoder(x, channels: 1, rate: 44100))
            return tap.samples
        }
        let one = try denoise(overlap: false, block: 4096)
        let two = try denoise(overlap: true, block: 1024)
        #expect(one.count == x.count && two.count == x.count)
        let differ = Self.firstDifference(one, two)
        #expect(differ == nil, "first difference at sample \(differ ?? -1)")
        let whole = try denoise(overlap: false, block: 4096, chunkFrames: 1 << 30)
        var signal = 0.0, error = 0.0
        for i in 0..<x.count { signal += Double(whole[i] * whole[i]); error += Double((whole[i] - one[i]) * (whole[i] - one[i])) }
        let db = 10 * log10(signal / max(error, 1e-20))
        #expect(db > 25, "chunks differ from one engine over the whole by only \(db) dB")
        // The first chunk (10 s) is the one engine's own, sample for sample (after the resampler's settling).
        let firstDiffer = Self.firstDifference(whole, one) ?? x.count
        #expect(Double(firstDiffer) / 44100 > 9.5, "differs from \(Double(firstDiffer) / 44100) s")
    }
}
