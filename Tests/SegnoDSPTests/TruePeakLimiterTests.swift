import Foundation
import SegnoDSP
import Testing

/// The look-ahead true-peak limiter: a fixed latency, the same output whatever the block size,
/// untouched audio under the threshold, and peaks (sample and 4×-oversampled) held under it.
@Suite struct TruePeakLimiterTests {
    /// 2 s of stereo: a quiet 440 Hz tone with 5 ms bursts of a loud 3 kHz tone (+6 dBFS) every
    /// 250 ms in the first half second.
    static func signal(rate: Int = 48000) -> [Float] {
        (0..<(2 * rate)).flatMap { f -> [Float] in
            let t = Double(f) / Double(rate)
            let v = f < rate / 2 && f % 12000 < 240 ? 2 * sin(2 * .pi * 3000 * t) : 0.05 * sin(2 * .pi * 440 * t)
            return [Float(v), Float(v * 0.8)]
        }
    }

    static func limit(_ x: [Float], blockFrames: Int) -> (y: [Float], latency: Int) {
        var l = TruePeakLimiter(ceiling: -1, channels: 2, sampleRate: 48000)
        var out: [Float] = []
        var start = 0
        while start < x.count {
            let n = min(blockFrames * 2, x.count - start)
            var b = AudioBlock(interleaved: Array(x[start..<(start + n)]), channels: 2)
            l.process(&b)
            out += b.validSamples
            start += n
        }
        return (out, l.latency)
    }

    @Test(arguments: [1, 7, 480, 4096])
    func sameOutputWhateverTheBlockSize(blockFrames: Int) {
        let x = Self.signal()
        #expect(Self.limit(x, blockFrames: blockFrames).y == Self.limit(x, blockFrames: 100_000).y)
    }

    @Test func peaksStayUnderTheCeilingAndQuietAudioPassesDelayed() {
        let x = Self.signal()
        let (y, latency) = Self.limit(x, blockFrames: 1024)
        #expect(latency > 0 && latency < 480)
        let ceiling = Float(pow(10, -1.0 / 20))
        #expect((y.map(abs).max() ?? 0) <= ceiling)
        // 4× oversampled by linear-phase sinc interpolation offline: still under (with the margin).
        let left = stride(from: 0, to: y.count, by: 2).map { Double(y[$0]) }
        var truePeak = 0.0
        for m in 16..<(left.count - 16) where abs(left[m]) > 0.5 {
            for k in 1...3 {
                let f = Double(k) / 4
                var v = 0.0
                for j in -15...16 { let d = f - Double(j); v += left[m + j] * sin(.pi * d) / (.pi * d) }
                truePeak = max(truePeak, abs(v))
            }
        }
        #expect(truePeak <= Double(ceiling) * 1.01, "true peak \(20 * log10(truePeak)) dBTP")
        // Long after the last burst (15 release time constants) the tone is exactly the input,
        // `latency` frames later.
        let f = 48000 * 19 / 10
        #expect(y[2 * (f + latency)] == x[2 * f])
        #expect(y[2 * (f + latency) + 1] == x[2 * f + 1])
    }
}

/// The vectorised peak search against the scalar limiter it replaced (`ReferenceLimiter`):
/// the same samples bit for bit, for mono to six channels, block sizes that are and are not
/// multiples of eight, loud and quiet passages, and sample rates whose window differs.
@Suite struct TruePeakLimiterReferenceTests {
    /// Noise, reproducible, in 2-second cycles: a loud burst (well over the ceiling) in the first
    /// 20 ms, near silence to 0.4 s, then loud but under the ceiling long enough for the gain to
    /// come back to exactly 1 (the limiter at rest, its fast path) before the next burst.
    static func noise(seconds: Double, rate: Int, channels: Int, seed: UInt64) -> [Float] {
        var state = seed
        return (0..<(Int(seconds * Double(rate)) * channels)).map { i in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let u = Float(Int64(bitPattern: state >> 11) % 2_000_000) / 1_000_000 - 1
            let t = Double(i / channels) / Double(rate)
            let level: Float = t.truncatingRemainder(dividingBy: 2) < 0.02 ? 1.8 : (t.truncatingRemainder(dividingBy: 2) < 0.4 ? 0.002 : 0.3)
            return u * level
        }
    }

    /// The blocks alternate between the size given and three times it plus one; `TruePeakLimiter.step`
    /// (the most frames it limits in one go) is among the sizes, and past it.
    @Test(arguments: [(1, 48000, 1), (2, 48000, 7), (2, 44100, 480), (3, 16000, 1000), (6, 96000, 4096), (1, 8000, 13),
                      (1, 16000, TruePeakLimiter.step), (2, 48000, TruePeakLimiter.step + 1)])
    func equalsTheScalarLimiterBitForBit(channels: Int, rate: Int, blockFrames: Int) {
        let x = Self.noise(seconds: 4.5, rate: rate, channels: channels, seed: UInt64(channels * 7919 + rate))
        var fast = TruePeakLimiter(ceiling: -1, channels: channels, sampleRate: rate)
        var slow = ReferenceLimiter(ceiling: -1, channels: channels, sampleRate: rate)
        var y: [Float] = [], z: [Float] = []
        var start = 0, size = blockFrames
        while start < x.count {
            let n = min(size * channels, x.count - start)
            var a = AudioBlock(interleaved: Array(x[start..<(start + n)]), channels: channels)
            var b = a
            fast.process(&a)
            slow.process(&b)
            y += a.validSamples
            z += b.validSamples
            start += n
            size = size == blockFrames ? blockFrames * 3 + 1 : blockFrames  // a larger block now and then
        }
        #expect(fast.latency == slow.latency)
        #expect(fast.deepestGain == slow.deepestGain && fast.deepestGain < 0.9)
        #expect(y.count == z.count)
        let firstDifference = (0..<min(y.count, z.count)).first { y[$0].bitPattern != z[$0].bitPattern }
        #expect(firstDifference == nil, "sample \(firstDifference ?? 0): \(y[firstDifference ?? 0]) against \(z[firstDifference ?? 0])")
    }
}
