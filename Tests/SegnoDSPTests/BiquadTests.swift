import Foundation
import SegnoDSP
import Testing

@Suite struct BiquadTests {
    @Test func identityHasFlatZeroDecibelResponse() {
        for f in [0.0, 100, 1000, 12000, 23999] {
            #expect(Biquad.identity.magnitudeDB(at: f, sampleRate: 48000) == 0)
        }
    }

    @Test func initialiserNormalisesByA0() {
        let q = Biquad(b0: 2, b1: 4, b2: 6, a0: 2, a1: 1, a2: 0.5)
        #expect(q == Biquad(b0: 1, b1: 2, b2: 3, a1: 0.5, a2: 0.25))
    }

    @Test func responseOfATwoTapAverageIsCosineOfHalfTheAngle() {
        // y = (x[n] + x[n−1]) / 2 has |H| = |cos(ω/2)| and phase −ω/2.
        let average = Biquad(b0: 0.5, b1: 0.5, b2: 0, a1: 0, a2: 0)
        for f in [100.0, 6000, 12000, 20000] {
            let w = 2 * Double.pi * f / 48000
            let h = average.response(at: f, sampleRate: 48000)
            #expect(abs(h.re - cos(w / 2) * cos(w / 2)) < 1e-12)
            #expect(abs(h.im + cos(w / 2) * sin(w / 2)) < 1e-12)
            #expect(abs(average.magnitudeDB(at: f, sampleRate: 48000) - 20 * log10(cos(w / 2))) < 1e-9)
        }
    }

    @Test func responseOfAOnePoleFeedbackMatchesTheClosedForm() {
        // y = x + 0.5·y[n−1]: H = 1 / (1 − 0.5·e^{−jω}).
        let pole = Biquad(b0: 1, b1: 0, b2: 0, a1: -0.5, a2: 0)
        #expect(abs(pole.magnitudeDB(at: 0, sampleRate: 48000) - 20 * log10(2)) < 1e-12)
        #expect(abs(pole.magnitudeDB(at: 24000, sampleRate: 48000) - 20 * log10(2.0 / 3)) < 1e-9)
    }

    @Test func stabilityFollowsThePoleRadius() {
        #expect(Biquad(b0: 1, b1: 0, b2: 0, a1: -1.9, a2: 0.95).isStable)
        #expect(!Biquad(b0: 1, b1: 0, b2: 0, a1: -2, a2: 1.01).isStable)
        #expect(!Biquad(b0: 1, b1: 0, b2: 0, a1: -1.5, a2: -0.6).isStable)
    }
}
