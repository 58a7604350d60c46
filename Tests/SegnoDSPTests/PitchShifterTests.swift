import Foundation
import Testing

@testable import SegnoDSP

struct PitchShifterTests {
    static let rate = 48_000

    /// Runs `input` (interleaved) through a shifter in blocks of `block` frames, then finish.
    private func shift(
        _ input: [Float], channels: Int = 1, semitones: Double, tempo: Double = 1, block: Int = 4096
    ) throws -> [Float] {
        var shifter = try PitchShifter(sampleRate: Self.rate, channels: channels, semitones: semitones, tempo: tempo)
        var out = AudioBlock(channels: channels)
        var result: [Float] = []
        let frames = input.count / channels
        input.withUnsafeBufferPointer { p in
            var i = 0
            while i < frames {
                let n = min(block, frames - i)
                shifter.process(p.baseAddress! + i * channels, frames: n, into: &out)
                result += out.validSamples
                i += n
            }
        }
        shifter.finish(into: &out)
        result += out.validSamples
        return result
    }

    private func sine(_ hz: Double, seconds: Double, amplitude: Double = 0.5, phase: Double = 0) -> [Float] {
        (0..<Int(seconds * Double(Self.rate))).map {
            Float(amplitude * sin(2 * Double.pi * hz * Double($0) / Double(Self.rate) + phase))
        }
    }

    private func noise(_ count: Int, seed: UInt64, amplitude: Float = 1) -> [Float] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return amplitude * (Float(state >> 40) / Float(1 << 23) - 1)
        }
    }

    /// Frequency of a clean sine from its upward zero crossings (linear interpolation), in Hz.
    private func zeroCrossingFrequency(_ x: ArraySlice<Float>) -> Double {
        var crossings: [Double] = []
        var i = x.startIndex + 1
        while i < x.endIndex {
            let a = Double(x[i - 1]), b = Double(x[i])
            if a < 0 && b >= 0 { crossings.append(Double(i - 1) + a / (a - b)) }
            i += 1
        }
        guard let first = crossings.first, let last = crossings.last, crossings.count > 2 else { return 0 }
        return Double(crossings.count - 1) / (last - first) * Double(Self.rate)
    }

    /// Share of the energy outside ±`band` Hz of `partials`, in dB, over the middle of `x`
    /// (one 4-term Blackman–Harris-windowed FFT of 2^16 points).
    private func artefactDB(_ x: [Float], partials: [Double], band: Double = 4) -> Double {
        let n = 1 << 16
        let start = (x.count - n) / 2
        let fft = RealFFT(size: n)
        var frame = [Float](repeating: 0, count: n)
        for t in 0..<n {
            let u = 2 * Double.pi * Double(t) / Double(n)
            let w = 0.35875 - 0.48829 * cos(u) + 0.14128 * cos(2 * u) - 0.01168 * cos(3 * u)
            frame[t] = x[start + t] * Float(w)
        }
        var re = [Float](repeating: 0, count: n / 2 + 1)
        var im = re
        var scratch = [Float](repeating: 0, count: fft.scratchCount)
        fft.forward(frame, real: &re, imag: &im, scratch: &scratch)
        let binHz = Double(Self.rate) / Double(n)
        var inside = 0.0, total = 0.0
        for k in 0..<re.count {
            let p = Double(re[k]) * Double(re[k]) + Double(im[k]) * Double(im[k])
            total += p
            if partials.contains(where: { abs(Double(k) * binHz - $0) <= band }) { inside += p }
        }
        return 10 * log10(max(total - inside, 1e-30) / total)
    }

    @Test("a sine comes out at the shifted pitch within 0.5 cent", arguments: [3.0, 12.0, -5.0, -12.0, 0.37, 7.0, 7.02, -0.01])
    func pitchOfSine(semitones: Double) throws {
        let out = try shift(sine(440, seconds: 1.5), semitones: semitones)
        let measured = zeroCrossingFrequency(out[12_000..<60_000])
        let cents = 1200 * log2(measured / (440 * pow(2, semitones / 12)))
        #expect(abs(cents) < 0.5, "\(semitones) st: off by \(cents) cents")
    }

    @Test("a two-tone signal keeps its artefacts below −45 dB", arguments: [3.0, 12.0, -5.0, 7.02])
    func twoToneArtefacts(semitones: Double) throws {
        let a = sine(440, seconds: 2, amplitude: 0.4), b = sine(610, seconds: 2, amplitude: 0.4)
        let input = zip(a, b).map { $0 + $1 }
        let out = try shift(input, semitones: semitones)
        let ratio = pow(2, semitones / 12)
        let db = artefactDB(out, partials: [440 * ratio, 610 * ratio])
        #expect(db < -45, "\(semitones) st: artefacts at \(db) dB")
    }

    @Test("tempo changes the speed but not the pitch")
    func tempoKeepsPitch() throws {
        let out = try shift(sine(440, seconds: 2), semitones: 0, tempo: 1.5)
        #expect(out.count == 64_000)
        let cents = 1200 * log2(zeroCrossingFrequency(out[8_000..<56_000]) / 440)
        #expect(abs(cents) < 0.5, "off by \(cents) cents")
    }

    @Test("the output has exactly round(input / tempo) frames",
          arguments: [(0.0, 1.0), (3.0, 1.0), (-5.0, 1.0), (0.0, 1.3), (4.0, 0.5), (-7.0, 2.0), (3.0, 0.25), (24.0, 4.0)])
    func exactFrameCount(semitones: Double, tempo: Double) throws {
        for frames in [0, 1, 333, 4_097, 20_011] {
            let out = try shift(noise(frames * 2, seed: 3, amplitude: 0.3), channels: 2, semitones: semitones, tempo: tempo)
            #expect(out.count == 2 * Int((Double(frames) / tempo).rounded()), "\(frames) frames, \(semitones) st, tempo \(tempo)")
        }
    }

    @Test("the output does not depend on the block sizes", arguments: [(3.0, 1.0), (-5.0, 1.0), (0.0, 0.8), (2.0, 1.25)])
    func blockSizeIndependence(semitones: Double, tempo: Double) throws {
        let tone = sine(330, seconds: 0.6, amplitude: 0.3)
        let hiss = noise(tone.count, seed: 11, amplitude: 0.1)
        var stereo = [Float](repeating: 0, count: 2 * tone.count)
        for i in tone.indices {
            stereo[2 * i] = tone[i] + hiss[i]
            stereo[2 * i + 1] = tone[i] - hiss[i]
        }
        // Clicks and a burst exercise the transient path too.
        for i in stride(from: 3_000, to: tone.count, by: 7_919) { stereo[2 * i] += 0.8 }
        for i in 20_000..<21_000 { stereo[2 * i + 1] += 0.5 * hiss[i] * 8 }
        let reference = try shift(stereo, channels: 2, semitones: semitones, tempo: tempo, block: 4096)
        for block in [1, 7, 1000] {
            let out = try shift(stereo, channels: 2, semitones: semitones, tempo: tempo, block: block)
            #expect(out == reference, "block size \(block) differs")
        }
    }

    @Test("processing AudioBlocks gives the same output as raw pointers")
    func audioBlockOverload() throws {
        let input = sine(300, seconds: 0.3)
        var shifter = try PitchShifter(sampleRate: Self.rate, channels: 1, semitones: -2, tempo: 1.1)
        var out = AudioBlock(channels: 1)
        var result: [Float] = []
        for start in stride(from: 0, to: input.count, by: 1_000) {
            let block = AudioBlock(interleaved: Array(input[start..<min(start + 1_000, input.count)]), channels: 1)
            shifter.process(block, into: &out)
            result += out.validSamples
        }
        shifter.process(AudioBlock(channels: 1), into: &out)
        result += out.validSamples
        shifter.finish(into: &out)
        result += out.validSamples
        #expect(result == (try shift(input, semitones: -2, tempo: 1.1)))
    }

    @Test("0 semitones at tempo 1 copies the input exactly")
    func passThrough() throws {
        let input = noise(5_000, seed: 5)
        #expect(try shift(input, semitones: 0, block: 333) == input)
    }

    @Test("silence in gives silence out", arguments: [3.0, -5.0])
    func silence(semitones: Double) throws {
        let out = try shift([Float](repeating: 0, count: 30_000), semitones: semitones)
        #expect(out.count == 30_000)
        #expect(out.allSatisfy { $0 == 0 })
    }

    @Test("full-scale noise gives finite, bounded output", arguments: [12.0, -12.0, 24.0, -24.0])
    func noiseStaysFinite(semitones: Double) throws {
        let out = try shift(noise(48_000, seed: 9), semitones: semitones)
        #expect(out.allSatisfy { $0.isFinite && abs($0) < 4 })
    }

    @Test("the output is aligned with the input", arguments: [(3.0, 1.0), (-5.0, 1.0), (12.0, 1.0), (0.0, 1.25)])
    func alignment(semitones: Double, tempo: Double) throws {
        // A 440 Hz burst from 0.5 s to 1 s; its energy centroid must land at the same time / tempo
        // (within 2 ms: the attack is kept sharp while the release is smeared a little).
        var input = [Float](repeating: 0, count: 72_000)
        let burst = sine(440, seconds: 0.5)
        for i in burst.indices { input[24_000 + i] = burst[i] }
        let out = try shift(input, semitones: semitones, tempo: tempo)
        func centroid(_ x: [Float]) -> Double {
            var m = 0.0, e = 0.0
            for (i, v) in x.enumerated() { m += Double(i) * Double(v * v); e += Double(v * v) }
            return m / e
        }
        let expected = centroid(input) / tempo
        let error = (centroid(out) - expected) / Double(Self.rate) * 1000
        #expect(abs(error) < 2, "\(semitones) st, tempo \(tempo): centroid off by \(error) ms")
    }

    @Test("clicks stay sharp and in place", arguments: [3.0, 12.0, -5.0])
    func clicksStaySharp(semitones: Double) throws {
        // A click every 200 ms: at least 99.9 % of the output energy must lie within 5 ms of
        // the input click times (a smearing vocoder spreads it over its 85 ms frames).
        var input = [Float](repeating: 0, count: 48_000)
        let clicks = Array(stride(from: 4_800, to: 48_000, by: 9_600))
        for t in clicks { input[t] = 0.8 }
        let out = try shift(input, semitones: semitones)
        var near = 0.0, total = 0.0
        for (i, v) in out.enumerated() {
            let e = Double(v * v)
            total += e
            if clicks.contains(where: { abs($0 - i) <= 240 }) { near += e }
        }
        #expect(near / total > 0.999, "\(semitones) st: \(near / total) of the energy near the clicks")
    }

    @Test("the phase difference between stereo channels is kept")
    func stereoImage() throws {
        // Right lags left by 60°; after +3 st the lag at the new frequency must still be 60°.
        let left = sine(500, seconds: 1.5), right = sine(500, seconds: 1.5, amplitude: 0.3, phase: -Double.pi / 3)
        var stereo = [Float](repeating: 0, count: 2 * left.count)
        for i in left.indices { stereo[2 * i] = left[i]; stereo[2 * i + 1] = right[i] }
        let out = try shift(stereo, channels: 2, semitones: 3)
        let f = 500 * pow(2, 3.0 / 12)
        var l = (0.0, 0.0), r = (0.0, 0.0)
        for i in 12_000..<60_000 {
            let a = 2 * Double.pi * f * Double(i) / Double(Self.rate)
            l.0 += Double(out[2 * i]) * cos(a); l.1 += Double(out[2 * i]) * sin(a)
            r.0 += Double(out[2 * i + 1]) * cos(a); r.1 += Double(out[2 * i + 1]) * sin(a)
        }
        let lag = (atan2(l.0, l.1) - atan2(r.0, r.1)) * 180 / Double.pi
        let wrapped = (lag + 540).truncatingRemainder(dividingBy: 360) - 180
        #expect(abs(wrapped - 60) < 1, "lag \(wrapped)°")
        let gain = hypot(r.0, r.1) / hypot(l.0, l.1)
        #expect(abs(gain - 0.6) < 0.01, "level ratio \(gain)")
    }

    @Test("out-of-range settings are rejected")
    func validation() {
        #expect(throws: PitchShifterError.semitonesOutOfRange(24.5)) {
            try PitchShifter(sampleRate: 48_000, channels: 1, semitones: 24.5)
        }
        #expect(throws: PitchShifterError.tempoOutOfRange(0.2)) {
            try PitchShifter(sampleRate: 48_000, channels: 1, semitones: 0, tempo: 0.2)
        }
        #expect(throws: PitchShifterError.tempoOutOfRange(4.5)) {
            try PitchShifter(sampleRate: 48_000, channels: 1, semitones: 0, tempo: 4.5)
        }
        #expect(throws: PitchShifterError.invalidChannels(0)) {
            try PitchShifter(sampleRate: 48_000, channels: 0, semitones: 1)
        }
        #expect(throws: PitchShifterError.self) {
            try PitchShifter(sampleRate: 48_000, channels: 1, semitones: .nan)
        }
    }
}
