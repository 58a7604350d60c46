import CEbur128
import Foundation
import SegnoDSP
import Testing

/// `TruePeakMeter` against libebur128 itself (the library segno measured true peaks with before,
/// decision 0101): after every block, the true peak of every channel, bit for bit. The signal's
/// level rises through the stream, so the running peak moves at most blocks and most
/// interpolated values are compared, not only the last maximum.
@Suite struct TruePeakMeterTests {
    /// Reproducible noise and a sine near Nyquist (peaks between the samples), louder with time,
    /// bursts over full scale; with `hostile`, a NaN, infinities and subnormals along the way.
    static func signal(seconds: Double, rate: Int, channels: Int, hostile: Bool) -> [Float] {
        var state = UInt64(rate * 31 + channels)
        let frames = Int(seconds * Double(rate))
        var x = [Float](repeating: 0, count: frames * channels)
        for f in 0..<frames {
            let t = Double(f) / Double(rate)
            let rise = Float(0.05 + 0.9 * Double(f) / Double(frames))
            for c in 0..<channels {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let u = Float(Int64(bitPattern: state >> 11) % 2_000_000) / 1_000_000 - 1
                let tone = Float(sin(2 * Double.pi * 0.47 * Double(rate) * t + Double(c)))
                var v = rise * (c % 2 == 0 ? 0.6 * tone + 0.4 * u : u)
                if t.truncatingRemainder(dividingBy: 0.5) < 0.002 { v *= 1.9 }
                x[f * channels + c] = v
            }
        }
        if hostile {
            let at = { (s: Double) in Int(s * Double(rate)) * channels }
            x[at(0.11)] = .nan
            x[at(0.23) + channels - 1] = Float.leastNonzeroMagnitude
            x[at(0.37)] = -Float.leastNormalMagnitude / 3
            x[at(seconds - 0.05)] = .infinity
            x[at(seconds - 0.04) + channels - 1] = -.infinity
        }
        return x
    }

    @Test(arguments: [(1, 16000, 4096, false), (2, 48000, 4096, false), (2, 44100, 1000, true), (3, 8000, 7, false),
                      (1, 96000, 4096, true), (2, 192000, 333, false), (6, 48000, 13, false), (1, 48000, 1, false)])
    func equalsLibebur128BitForBitAfterEveryBlock(channels: Int, rate: Int, blockFrames: Int, hostile: Bool) throws {
        // Sixty blocks at least (each size, small and large, in turn).
        let seconds = max(0.3, Double(blockFrames * 4 * 30) / Double(rate))
        let x = Self.signal(seconds: seconds, rate: rate, channels: channels, hostile: hostile)
        var st: UnsafeMutablePointer<ebur128_state>? = ebur128_init(UInt32(channels), UInt(rate), Int32(EBUR128_MODE_TRUE_PEAK.rawValue))
        try #require(st != nil)
        defer { ebur128_destroy(&st) }
        var meter = TruePeakMeter(channels: channels, sampleRate: rate)
        #expect(meter.factor == (rate < 96000 ? 4 : rate < 192000 ? 2 : 0))
        var start = 0, size = blockFrames, compared = 0, moved = 0
        var last = [UInt64](repeating: 0, count: channels)
        while start < x.count {
            let n = min(size * channels, x.count - start)
            let block = AudioBlock(interleaved: Array(x[start..<(start + n)]), channels: channels)
            meter.add(block)
            _ = block.samples.withUnsafeBufferPointer { ebur128_add_frames_float(st, $0.baseAddress, block.frames) }
            for c in 0..<channels {
                var reference = 0.0
                ebur128_true_peak(st, UInt32(c), &reference)
                let mine = meter.truePeak(channel: c)
                if mine.bitPattern != reference.bitPattern {
                    Issue.record("channel \(c), after frame \((start + n) / channels): \(mine) against libebur128's \(reference)")
                    return
                }
                if reference.bitPattern != last[c] { moved += 1 }
                last[c] = reference.bitPattern
                compared += 1
            }
            start += n
            size = size == blockFrames ? blockFrames * 3 + 1 : blockFrames  // a larger block now and then
        }
        #expect(compared >= channels * 60)
        #expect(moved >= 10, "the running peak moved \(moved) times in \(compared) comparisons")
    }

    /// A sine at a quarter of the rate, sampled 45° off its crests: every sample is at 0.707 of
    /// the crest, which lies between two samples. The true peak finds the crest; below 192 kHz.
    @Test(arguments: [16000, 48000, 96000])
    func findsTheCrestBetweenTheSamples(rate: Int) {
        let x = (0..<rate).map { f in Float(0.5 * sin(Double.pi / 2 * Double(f) + Double.pi / 4)) }
        var meter = TruePeakMeter(channels: 1, sampleRate: rate)
        meter.add(AudioBlock(interleaved: x, channels: 1))
        #expect(abs((x.map(abs).max() ?? 0) - 0.3536) < 0.001)
        #expect(abs(meter.truePeak - 0.5) < 0.01, "\(meter.truePeak)")
    }
}
