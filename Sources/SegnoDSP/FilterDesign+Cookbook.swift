#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Single sections from the RBJ Audio EQ Cookbook (Robert Bristow-Johnson's bilinear-transform
/// designs with the frequency pre-warped to `frequency`). These do not validate their arguments;
/// callers check them with the `validate…` helpers first. Frequencies in Hz, gains in dB.
extension FilterDesign {
    /// Second-order low-pass; the gain at `frequency` is `q` (−3.01 dB for q = 1/√2).
    public static func cookbookLowpass(frequency: Double, q: Double, sampleRate: Double) -> Biquad {
        let w = Warp(frequency: frequency, sampleRate: sampleRate, q: q)
        let b = (1 - w.cosine) / 2
        return Biquad(b0: b, b1: 2 * b, b2: b, a0: 1 + w.alpha, a1: -2 * w.cosine, a2: 1 - w.alpha)
    }

    /// Second-order high-pass; the gain at `frequency` is `q` (−3.01 dB for q = 1/√2).
    public static func cookbookHighpass(frequency: Double, q: Double, sampleRate: Double) -> Biquad {
        let w = Warp(frequency: frequency, sampleRate: sampleRate, q: q)
        let b = (1 + w.cosine) / 2
        return Biquad(b0: b, b1: -2 * b, b2: b, a0: 1 + w.alpha, a1: -2 * w.cosine, a2: 1 - w.alpha)
    }

    /// Band-pass with 0 dB at `frequency`; `alpha` from `Warp` sets its width.
    static func cookbookBandpass(_ w: Warp) -> Biquad {
        Biquad(b0: w.alpha, b1: 0, b2: -w.alpha, a0: 1 + w.alpha, a1: -2 * w.cosine, a2: 1 - w.alpha)
    }

    /// Notch (band-stop) with an exact zero at `frequency`.
    static func cookbookNotch(_ w: Warp) -> Biquad {
        Biquad(b0: 1, b1: -2 * w.cosine, b2: 1, a0: 1 + w.alpha, a1: -2 * w.cosine, a2: 1 - w.alpha)
    }

    /// Peaking EQ: exactly `gain` dB at `frequency`, 0 dB far from it.
    static func cookbookPeaking(_ w: Warp, gain: Double) -> Biquad {
        let a = pow(10, gain / 40)
        return Biquad(b0: 1 + w.alpha * a, b1: -2 * w.cosine, b2: 1 - w.alpha * a,
                      a0: 1 + w.alpha / a, a1: -2 * w.cosine, a2: 1 - w.alpha / a)
    }

    /// Low shelf: exactly `gain` dB at 0 Hz, `gain`/2 dB at `frequency`, 0 dB at Nyquist.
    static func cookbookLowShelf(_ w: Warp, gain: Double) -> Biquad {
        let a = pow(10, gain / 40)
        let k = 2 * a.squareRoot() * w.alpha
        let p = a + 1, m = a - 1
        return Biquad(b0: a * (p - m * w.cosine + k), b1: 2 * a * (m - p * w.cosine), b2: a * (p - m * w.cosine - k),
                      a0: p + m * w.cosine + k, a1: -2 * (m + p * w.cosine), a2: p + m * w.cosine - k)
    }

    /// High shelf: 0 dB at 0 Hz, `gain`/2 dB at `frequency`, exactly `gain` dB at Nyquist.
    static func cookbookHighShelf(_ w: Warp, gain: Double) -> Biquad {
        let a = pow(10, gain / 40)
        let k = 2 * a.squareRoot() * w.alpha
        let p = a + 1, m = a - 1
        return Biquad(b0: a * (p + m * w.cosine + k), b1: -2 * a * (m + p * w.cosine), b2: a * (p + m * w.cosine - k),
                      a0: p - m * w.cosine + k, a1: 2 * (m - p * w.cosine), a2: p - m * w.cosine - k)
    }

    /// The cookbook's intermediate values for one design: ω0 = 2π·frequency/sampleRate,
    /// cos ω0, and α (the width term) from either a Q or a bandwidth in octaves.
    struct Warp {
        let cosine: Double
        let alpha: Double

        /// α = sin ω0 / (2Q).
        init(frequency: Double, sampleRate: Double, q: Double) {
            let w0 = 2 * Double.pi * frequency / sampleRate
            self.cosine = cos(w0)
            self.alpha = sin(w0) / (2 * q)
        }

        /// α = sin ω0 · sinh(ln 2 / 2 · octaves · ω0 / sin ω0): the cookbook's bandwidth form, which
        /// compensates the bilinear transform's frequency warping.
        init(frequency: Double, sampleRate: Double, octaves: Double) {
            let w0 = 2 * Double.pi * frequency / sampleRate
            let s = sin(w0)
            self.cosine = cos(w0)
            self.alpha = s * sinh(log(2.0) / 2 * octaves * w0 / s)
        }

        /// The Q a bandwidth in octaves stands for at this frequency (sin ω0 / 2α).
        static func q(frequency: Double, sampleRate: Double, octaves: Double) -> Double {
            let w0 = 2 * Double.pi * frequency / sampleRate
            return sin(w0) / (2 * Warp(frequency: frequency, sampleRate: sampleRate, octaves: octaves).alpha)
        }
    }
}
