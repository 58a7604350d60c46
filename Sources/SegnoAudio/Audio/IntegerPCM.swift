import SegnoCore
import SegnoWaveform
/// Float samples to integer PCM, for the encoders that write integers (libsndfile's PCM and FLAC,
/// ffmpeg's ALAC). A float `x` becomes `round(x · 2^(bits−1))` clipped to the depth's range, the
/// exact inverse of how libsndfile and ffmpeg decode integer PCM to float, so a 16-bit source
/// written as 16-bit comes back bit for bit. No dither is added; NaN becomes 0.
package enum IntegerPCM {
    /// Fills `dst[0..<src.count]` with 16-bit values; with `bits8`, values rounded at 8 bits and
    /// shifted into the high byte (libsndfile keeps them exactly with its `>> 8`).
    ///
    /// Rounds half away from zero as `Float.rounded()` does, but without a call to libm's `roundf`
    /// per sample, so the loop runs several samples at a time: ties to even (the waveform's
    /// rounding), then one up where that took a tie down. Clamping first gives the same values,
    /// the bounds being integers.
    static package func int16(_ src: UnsafeBufferPointer<Float>, into dst: UnsafeMutableBufferPointer<Int16>, bits8: Bool = false) {
        let scale: Float = bits8 ? 128 : 32768
        let shift: Int16 = bits8 ? 8 : 0
        for i in 0..<src.count {
            let c = clampedNoNaN(src[i] * scale, -scale, scale - 1)
            let a = abs(c)
            let (r, n) = roundNearest(a)
            let away = n &+ (r - a == -0.5 ? 1 : 0)
            dst[i] = Int16(truncatingIfNeeded: c < 0 ? 0 &- away : away) << shift
        }
    }

    /// Fills `dst[0..<src.count]` with 32-bit values; with `bits24`, values rounded at 24 bits and
    /// shifted into the high three bytes (how libsndfile and ffmpeg carry 24-bit samples in 32).
    static package func int32(_ src: UnsafeBufferPointer<Float>, into dst: UnsafeMutableBufferPointer<Int32>, bits24: Bool) {
        let full = bits24 ? Float(8_388_608) : Float(2_147_483_648)
        let hi = Double(bits24 ? 8_388_607 : 2_147_483_647)
        let shift: Int32 = bits24 ? 8 : 0
        for i in 0..<src.count {
            let v = Double((src[i] * full).rounded())
            dst[i] = v.isNaN ? 0 : Int32(max(-hi - 1, min(hi, v))) << shift
        }
    }
}
