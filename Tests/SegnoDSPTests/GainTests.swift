import Foundation
import SegnoDSP
import Testing

@Suite struct GainTests {
    @Test func decibelsConvertToAmplitudeFactors() {
        #expect(Gain.linear(fromDecibels: 0) == 1)
        #expect(abs(Gain.linear(fromDecibels: -20) - 0.1) < 1e-15)
        #expect(abs(Gain.linear(fromDecibels: 6.0206) - 2) < 1e-4)
        #expect(abs(Gain.decibels(fromLinear: 0.5) + 6.0206) < 1e-4)
        #expect(abs(Gain(decibels: -6).linear - 0.501187) < 1e-6)
    }

    @Test func applyScalesOnlyTheValidFrames() {
        var block = AudioBlock(interleaved: [0.5, -0.25, 1, 0.1, 0.2, 0.3], channels: 2)
        block.frames = 2
        Gain(decibels: 20 * log10(2)).apply(to: &block)
        #expect(block.samples == [1, -0.5, 2, 0.2, 0.2, 0.3])
    }

    @Test func zeroDecibelsIsIdentity() {
        let gain = Gain(decibels: 0)
        #expect(gain.isIdentity)
        let input: [Float] = [0.3, -0.7, .leastNonzeroMagnitude]
        var block = AudioBlock(interleaved: input, channels: 1)
        gain.apply(to: &block)
        #expect(block.samples == input)
    }

    @Test func productsThatWouldBeSubnormalBecomeZero() {
        var block = AudioBlock(interleaved: [1e-36, -1e-36, 0.5], channels: 1)
        Gain(decibels: -60).apply(to: &block)
        #expect(block.samples[0] == 0 && block.samples[1] == 0)
        #expect(abs(block.samples[2] - 0.0005) < 1e-9)
    }
}
