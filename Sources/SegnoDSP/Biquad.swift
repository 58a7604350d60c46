#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The coefficients of one second-order IIR section, normalised so that a0 = 1:
///
///     y[n] = b0·x[n] + b1·x[n−1] + b2·x[n−2] − a1·y[n−1] − a2·y[n−2]
///
/// A `Biquad` is a plain value with no state; `BiquadCascade` runs one or more of them over audio.
/// Designs come from `FilterDesign` (Butterworth, RBJ cookbook) and `EQBand`.
public struct Biquad: Sendable, Hashable, CustomStringConvertible {
    public var b0: Double
    public var b1: Double
    public var b2: Double
    public var a1: Double
    public var a2: Double

    /// Coefficients already normalised so that a0 = 1.
    public init(b0: Double, b1: Double, b2: Double, a1: Double, a2: Double) {
        self.b0 = b0
        self.b1 = b1
        self.b2 = b2
        self.a1 = a1
        self.a2 = a2
    }

    /// Coefficients as a design formula gives them; all are divided by `a0` (which must not be 0).
    public init(b0: Double, b1: Double, b2: Double, a0: Double, a1: Double, a2: Double) {
        precondition(a0 != 0, "a biquad needs a0 ≠ 0")
        self.init(b0: b0 / a0, b1: b1 / a0, b2: b2 / a0, a1: a1 / a0, a2: a2 / a0)
    }

    /// The section that passes its input through unchanged (y[n] = x[n]).
    public static let identity = Biquad(b0: 1, b1: 0, b2: 0, a1: 0, a2: 0)

    /// True if both poles lie strictly inside the unit circle (the section cannot blow up).
    public var isStable: Bool {
        // Jury's conditions for z² + a1·z + a2.
        abs(a2) < 1 && abs(a1) < 1 + a2
    }

    /// The exact complex frequency response H(e^{jω}) at `frequency` Hz for a stream at
    /// `sampleRate` Hz, as (real, imaginary). Used by tests and documentation, not per sample.
    public func response(at frequency: Double, sampleRate: Double) -> (re: Double, im: Double) {
        let w = 2 * Double.pi * frequency / sampleRate
        // z⁻¹ = e^{−jω}, z⁻² = e^{−2jω}
        let c1 = cos(w), s1 = -sin(w)
        let c2 = cos(2 * w), s2 = -sin(2 * w)
        let numRe = b0 + b1 * c1 + b2 * c2
        let numIm = b1 * s1 + b2 * s2
        let denRe = 1 + a1 * c1 + a2 * c2
        let denIm = a1 * s1 + a2 * s2
        let d = denRe * denRe + denIm * denIm
        return ((numRe * denRe + numIm * denIm) / d, (numIm * denRe - numRe * denIm) / d)
    }

    /// The exact magnitude response in dB at `frequency` Hz for a stream at `sampleRate` Hz
    /// (−∞ at an exact zero of the transfer function).
    public func magnitudeDB(at frequency: Double, sampleRate: Double) -> Double {
        let h = response(at: frequency, sampleRate: sampleRate)
        return 10 * log10(h.re * h.re + h.im * h.im)
    }

    public var description: String {
        "Biquad(b0: \(b0), b1: \(b1), b2: \(b2), a1: \(a1), a2: \(a2))"
    }
}
