import Foundation
import SegnoDSP
import Testing

@Suite struct BiquadCascadeTests {
    let rate = 48000.0

    /// Deterministic white noise in [−amplitude, amplitude).
    func noise(_ count: Int, amplitude: Float = 0.9, seed: UInt64 = 1) -> [Float] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return (Float(state >> 40) / Float(1 << 24) * 2 - 1) * amplitude
        }
    }

    /// Runs `input` (interleaved, `channels`) through a fresh cascade in blocks of `blockFrames`.
    func run(_ sections: [Biquad], _ input: [Float], channels: Int, blockFrames: Int) -> [Float] {
        run(sections, input, channels: channels, blockSizes: [blockFrames])
    }

    /// Runs `input` through a fresh cascade in blocks whose sizes cycle through `blockSizes`.
    func run(_ sections: [Biquad], _ input: [Float], channels: Int, blockSizes: [Int]) -> [Float] {
        var cascade = BiquadCascade(sections: sections, channels: channels)
        var output = input
        let frames = input.count / channels
        output.withUnsafeMutableBufferPointer { buffer in
            var done = 0, next = 0
            while done < frames {
                let n = min(blockSizes[next % blockSizes.count], frames - done)
                cascade.process(buffer.baseAddress! + done * channels, frames: n)
                done += n
                next += 1
            }
        }
        return output
    }

    func designs() throws -> [[Biquad]] {
        [
            try FilterDesign.lowpass(frequency: 3000, order: 8, sampleRate: rate),  // pairs only
            try FilterDesign.highpass(frequency: 80, order: 6, sampleRate: rate),  // pair + single
            try FilterDesign.equalizer([
                EQBand(type: .parametric, frequency: 2500, bandwidth: 1, gain: 3),
                EQBand(type: .highShelf, frequency: 8000, gain: -6),
                EQBand(type: .resonantLowPass, frequency: 12000, bandwidth: 0.5),
            ], sampleRate: rate),
        ]
    }

    @Test(arguments: [1, 2])
    func outputIsBitIdenticalForBlockSizes1And7And4096(channels: Int) throws {
        let input = noise(20011 * channels)
        func bits(_ blockSizes: [Int], _ sections: [Biquad]) -> [UInt32] {
            run(sections, input, channels: channels, blockSizes: blockSizes).map(\.bitPattern)
        }
        for sections in try designs() {
            // (Booleans are computed outside #expect: a failing comparison of long arrays would
            // otherwise make the test library compute a slow element-by-element difference.)
            let whole = bits([4096], sections)
            let changed = whole != input.map(\.bitPattern)
            #expect(changed)
            for blockSizes in [[1], [7], [20011], [3, 1, 2, 5, 0, 63, 66, 129, 6]] {
                // The irregular sizes start and end blocks at every position within a group of four.
                let same = bits(blockSizes, sections) == whole
                #expect(same, "block sizes \(blockSizes)")
            }
        }
    }

    @Test func channelsAreFilteredIndependently() throws {
        let sections = try FilterDesign.lowpass(frequency: 1000, order: 4, sampleRate: rate)
        let left = noise(5000, seed: 7), right = noise(5000, seed: 8)
        var stereo = [Float](repeating: 0, count: 10000)
        for i in 0..<5000 { stereo[2 * i] = left[i]; stereo[2 * i + 1] = right[i] }
        let out = run(sections, stereo, channels: 2, blockFrames: 512)
        let outLeft = run(sections, left, channels: 1, blockFrames: 512)
        let outRight = run(sections, right, channels: 1, blockFrames: 512)
        var outLeftFromStereo: [Float] = [], outRightFromStereo: [Float] = []
        for i in 0..<5000 {
            outLeftFromStereo.append(out[2 * i])
            outRightFromStereo.append(out[2 * i + 1])
        }
        let sameLeft = outLeftFromStereo == outLeft, sameRight = outRightFromStereo == outRight
        #expect(sameLeft && sameRight)
    }

    @Test func emptyCascadePassesAudioThroughUnchanged() {
        let input = noise(1000)
        let same = run([], input, channels: 1, blockFrames: 100) == input
        #expect(same)
    }

    @Test func silenceAfterALoudSignalEndsWithZeroStateAndNoSubnormals() throws {
        let sections = try FilterDesign.highpass(frequency: 80, order: 2, sampleRate: rate)
            + FilterDesign.lowpass(frequency: 3000, order: 4, sampleRate: rate)
            + FilterDesign.equalizer([EQBand(type: .resonantLowShelf, frequency: 200, bandwidth: 0.3, gain: 12)],
                                     sampleRate: rate)
        var cascade = BiquadCascade(sections: sections, channels: 2)
        var block = AudioBlock(interleaved: noise(2 * 4096, amplitude: 1), channels: 2)
        cascade.process(&block)
        #expect(cascade.stateSnapshot().contains { $0 != 0 })
        var sawSubnormal = false
        for _ in 0..<(10 * 48000 / 4096) {  // ten seconds of digital silence
            for i in block.samples.indices { block.samples[i] = 0 }
            cascade.process(&block)
            sawSubnormal = sawSubnormal || block.samples.contains { $0.isSubnormal }
            sawSubnormal = sawSubnormal || cascade.stateSnapshot().contains { $0.isSubnormal }
        }
        #expect(!sawSubnormal)
        let stateIsZero = cascade.stateSnapshot().allSatisfy { $0 == 0 }
        let outputIsZero = block.samples.allSatisfy { $0 == 0 }
        #expect(stateIsZero && outputIsZero)
    }

    @Test func fastDecayingOutputNeverHoldsSubnormalFloats() {
        // Poles of radius 0.1: the output falls tenfold per frame, through the subnormal Float32
        // range well before the state reaches the flush threshold.
        var cascade = BiquadCascade(sections: [Biquad(b0: 1, b1: 0, b2: 0, a1: 0, a2: 0.01)], channels: 1)
        var samples = [Float](repeating: 0, count: 256)
        samples[0] = 1
        samples.withUnsafeMutableBufferPointer { cascade.process($0.baseAddress!, frames: 256) }
        let subnormal = samples.contains { $0.isSubnormal }
        #expect(!subnormal)
        #expect(samples[2] == -0.01)
    }

    @Test func resetForgetsThePreviousRecording() throws {
        let sections = try FilterDesign.lowpass(frequency: 500, order: 4, sampleRate: rate)
        let first = noise(3000, seed: 3), second = noise(3000, seed: 4)
        var cascade = BiquadCascade(sections: sections, channels: 1)
        var a = first
        a.withUnsafeMutableBufferPointer { cascade.process($0.baseAddress!, frames: 3000) }
        cascade.reset()
        #expect(cascade.stateSnapshot().allSatisfy { $0 == 0 })
        var b = second
        b.withUnsafeMutableBufferPointer { cascade.process($0.baseAddress!, frames: 3000) }
        let same = b == run(sections, second, channels: 1, blockFrames: 3000)
        #expect(same)
    }

    @Test func blockOverloadFiltersOnlyTheValidFrames() throws {
        let sections = try FilterDesign.lowpass(frequency: 500, sampleRate: rate)
        var cascade = BiquadCascade(sections: sections, channels: 1)
        var block = AudioBlock(interleaved: noise(100), channels: 1)
        let tail = Array(block.samples[50...])
        block.frames = 50
        cascade.process(&block)
        let tailUntouched = Array(block.samples[50...]) == tail
        let headFiltered = Array(block.samples[..<50]) == run(sections, Array(noise(100)[..<50]), channels: 1, blockFrames: 50)
        #expect(tailUntouched && headFiltered)
    }

    @Test func cascadeResponseIsTheProductOfItsSections() throws {
        let sections = try FilterDesign.lowpass(frequency: 2000, order: 6, sampleRate: rate)
        let cascade = BiquadCascade(sections: sections, channels: 1)
        for f in [100.0, 2000, 9000] {
            let sum = sections.reduce(0) { $0 + $1.magnitudeDB(at: f, sampleRate: rate) }
            let h = cascade.response(at: f, sampleRate: rate)
            #expect(abs(cascade.magnitudeDB(at: f, sampleRate: rate) - sum) < 1e-9)
            #expect(abs(10 * log10(h.re * h.re + h.im * h.im) - sum) < 1e-9)
        }
    }

    @Test func doublePrecisionStateKeepsALowHighpassAccurate() throws {
        // An 80 Hz high-pass in Float32 state leaves errors near −85 dB; the cascade must stay
        // within Float32 output rounding of a Double reference.
        let sections = try FilterDesign.highpass(frequency: 80, order: 4, sampleRate: rate)
        let input = noise(48000)
        let output = run(sections, input, channels: 1, blockFrames: 4096)
        var reference = input.map(Double.init)
        for s in sections {
            var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0
            for i in reference.indices {
                let x = reference[i]
                let y = s.b0 * x + s.b1 * x1 + s.b2 * x2 - s.a1 * y1 - s.a2 * y2
                (x2, x1, y2, y1) = (x1, x, y1, y)
                reference[i] = y
            }
        }
        var error = 0.0, power = 0.0
        for i in reference.indices {
            error += (Double(output[i]) - reference[i]) * (Double(output[i]) - reference[i])
            power += reference[i] * reference[i]
        }
        #expect(10 * log10(error / power) < -140)
    }
}
