import Foundation
import SegnoAudio
import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import Testing

/// libsoxr's converter restarted on its grid (decision 0100): a fresh converter fed the stream
/// from a grid point a warm-up before a checkpoint arrives at the unbroken pass's state, so every
/// sample after the checkpoint is bit for bit the same; an arrival that differs is refused.
@Suite struct SoxrRestartTests {
    static let block = 4096

    /// Feeds `x[from..<to]` to `t` in blocks on the 4096-frame grid (the first one up to it) and
    /// returns what came out; `finish` at the end when `to` is the stream's end.
    static func feed(_ t: SoxrResampleTransform, _ x: [Float], channels: Int, from: Int, to: Int, finish: Bool) throws -> [Float] {
        var out: [Float] = []
        var at = from
        var b = AudioBlock(channels: channels, capacity: block)
        while at < to {
            let n = min(to - at, block - at % block)
            b.reset(channels: channels, capacity: n)
            for i in 0..<(n * channels) { b.samples[i] = x[at * channels + i] }
            b.frames = n
            try t.process(&b)
            out += b.samples[0..<(b.frames * channels)]
            at += n
        }
        if finish {
            b.frames = 0
            try t.finish(&b)
            out += b.samples[0..<(b.frames * channels)]
        }
        return out
    }

    static let conversions: [(Int, Int, ResampleConfig.Quality)] = [
        (44100, 16000, .soxrVHQ), (48000, 16000, .soxrVHQ), (48000, 16000, .soxrHQ),
        (8000, 16000, .soxrVHQ), (48000, 44100, .soxrVHQ), (22050, 48000, .soxrHQ),
    ]

    static func converter(_ rate: Int, _ quality: ResampleConfig.Quality) throws -> SoxrResampleTransform {
        try #require(try ResampleConfig(rate: rate, quality: quality).makeTransform() as? SoxrResampleTransform)
    }

    @Test(arguments: conversions)
    func aConverterRestartedOnItsGridArrivesAtTheUnbrokenPass(c: (Int, Int, ResampleConfig.Quality)) throws {
        let (inRate, outRate, quality) = c
        let channels = 2
        let whole = try Self.converter(outRate, quality)
        _ = try whole.start(AudioFormat(sampleRate: inRate, channels: channels))
        let grid = try #require(whole.restartGrid(sourceRate: inRate), "\(inRate) → \(outRate)")
        let step = inRate / gcd(inRate, outRate)
        #expect(grid.period % step == 0 && grid.warmUp > 0)
        // The checkpoint: a block boundary past two periods and the warm-up, off the grid.
        let checkpoint = (2 * grid.period + grid.warmUp + 3 * Self.block) / Self.block * Self.block
        let frames = checkpoint + inRate * 2
        let x = Signal.noise(frames: frames, channels: channels, amplitude: 0.5)
        let head = try Self.feed(whole, x, channels: channels, from: 0, to: checkpoint, finish: false)
        var w = StateBytes.Writer()
        whole.saveArrival(into: &w)
        let rest = try Self.feed(whole, x, channels: channels, from: checkpoint, to: frames, finish: true)
        #expect(head.count > 0 && rest.count > 0)

        for start in [grid.start(before: checkpoint), grid.start(before: checkpoint) - grid.period] {
            let again = try Self.converter(outRate, quality)
            _ = try again.start(AudioFormat(sampleRate: inRate, channels: channels))
            #expect(again.restartGrid(sourceRate: inRate) == grid)
            var r = StateBytes.Reader(w.bytes)
            try again.restart(at: start, arrival: &r)
            #expect(start % grid.period == 0 && checkpoint - start >= grid.warmUp)
            _ = try Self.feed(again, x, channels: channels, from: start, to: checkpoint, finish: false)
            try again.checkArrival()
            let resumed = try Self.feed(again, x, channels: channels, from: checkpoint, to: frames, finish: true)
            #expect(resumed.count == rest.count)
            #expect(resumed.map(\.bitPattern) == rest.map(\.bitPattern), "\(inRate) → \(outRate) restarted at \(start)")
        }
    }

    /// Off the grid (one step of whole output frames later) libsoxr's float core rounds
    /// differently, and the arrival check says so; a tampered arrival is refused too.
    @Test func anArrivalOffTheGridOrTamperedIsRefused() throws {
        let (inRate, outRate) = (48000, 16000)
        let whole = try Self.converter(outRate, .soxrHQ)
        _ = try whole.start(AudioFormat(sampleRate: inRate, channels: 1))
        let grid = try #require(whole.restartGrid(sourceRate: inRate))
        let checkpoint = (grid.period + grid.warmUp + 2 * Self.block) / Self.block * Self.block
        let x = Signal.noise(frames: checkpoint, channels: 1, amplitude: 0.5)
        _ = try Self.feed(whole, x, channels: 1, from: 0, to: checkpoint, finish: false)
        var w = StateBytes.Writer()
        whole.saveArrival(into: &w)
        var tampered = w.bytes
        tampered[tampered.count - 1] ^= 0x01

        for (start, bytes) in [(grid.start(before: checkpoint) + 3, w.bytes), (grid.start(before: checkpoint), tampered)] {
            let again = try Self.converter(outRate, .soxrHQ)
            _ = try again.start(AudioFormat(sampleRate: inRate, channels: 1))
            _ = again.restartGrid(sourceRate: inRate)
            var r = StateBytes.Reader(bytes)
            try again.restart(at: start, arrival: &r)
            _ = try Self.feed(again, x, channels: 1, from: start, to: checkpoint, finish: false)
            #expect(throws: StateBytes.Mismatch.self) { try again.checkArrival() }
        }
    }

    /// The search stops at `SoxrRestartGrid.maxPeriodSeconds` of input: a grid exactly that long
    /// is found, one frame longer is not (then the recording keeps no checkpoint).
    @Test func theSearchStopsAtItsLimit() throws {
        let grid = try #require(SoxrRestartGrid.find(inputRate: 44100, outputRate: 16000, recipe: SoxrResampleTransform.highQuality, tail: 1024))
        #expect(grid.period < Int(SoxrRestartGrid.maxPeriodSeconds * 44100))
        let at = SoxrRestartGrid.find(inputRate: 44100, outputRate: 16000, recipe: SoxrResampleTransform.highQuality, tail: 1024,
                                      maxPeriodSeconds: (Double(grid.period) + 0.5) / 44100)
        #expect(at == grid)
        let past = SoxrRestartGrid.find(inputRate: 44100, outputRate: 16000, recipe: SoxrResampleTransform.highQuality, tail: 1024,
                                        maxPeriodSeconds: (Double(grid.period) - 0.5) / 44100)
        #expect(past == nil)
    }

    private func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
}
