/// How a Float32 sample in [−1, 1] becomes the int16 value that peaks are taken over, chosen so
/// the result equals what audiowaveform 1.10.3 would have decoded from the same source file.
///
/// audiowaveform decodes everything to int16 before taking peaks, and how it does so depends on
/// the source's sample format. segno decodes to Float32 (libsndfile `sf_read_float`, which
/// normalises integer PCM by 1/2^(bits−1)), so the generator must undo that normalisation the
/// same way for each kind of source:
///
/// | source (as libsndfile reports it)            | mode            | int16 value                       |
/// |----------------------------------------------|-----------------|-----------------------------------|
/// | PCM_S8, PCM_U8, PCM_16, PCM_24, PCM_32, FLAC, ALAC | `.integerPCM`   | ⌊x · 32768⌋, clamped         |
/// | FLOAT, DOUBLE                                 | `.floatingPoint`| trunc(x · 32767), clipped         |
/// | VORBIS, OPUS (and other lossy codecs)         | `.lossyCodec`   | round-half-even(x · 32767), clipped|
///
/// Checked against libsndfile 1.2.0 over every 8-, 16- and 24-bit value (WAV, AIFF, CAF, FLAC)
/// and 4 M random 32-bit values (a small C program reading the same files both ways):
/// - `.integerPCM` reproduces audiowaveform's `sf_readf_short` exactly for 8/16/24-bit: 16-bit is
///   unchanged, 24-bit becomes `v >> 8` (arithmetic shift, i.e. floor), unsigned 8-bit becomes
///   `(v − 128) << 8`, signed 8-bit `v << 8`.
///   32-bit PCM is not exact through Float32: the float has only 24 significant bits, and 0.065 %
///   of random samples come out one int16 step away from `v >> 16`. Feed such sources through
///   `PeakGenerator.process(int16:frames:)` (decoded with `sf_readf_short`) to be exact.
/// - `.floatingPoint` is audiowaveform's `static_cast<short>(x * 32767.0f)` (the product is a
///   Float32, truncated toward zero). audiowaveform wraps values beyond ±1 around (1.5 becomes a
///   large negative number); segno clips them to −32768…32767 instead.
/// - `.lossyCodec` is libsndfile's `sf_readf_short` for Vorbis and Opus, `lrintf(x * 32767.0f)`;
///   libsndfile wraps the overshoot lossy codecs produce beyond ±1, segno clips it.
///   audiowaveform decodes MP3 with libmad (⌊x · 32768⌋ of libmad's own output), so no Float32
///   path can match its MP3 peaks exactly; `.integerPCM` uses the same formula.
///
/// NaN becomes 0 in every mode.
public enum Int16Conversion: Sendable, Hashable, CaseIterable {
    /// Integer PCM read as float: ⌊x · 32768⌋, clamped to −32768…32767.
    case integerPCM
    /// Float or double PCM: trunc(x · 32767) computed in Float32, clipped to −32768…32767.
    case floatingPoint
    /// Lossy codecs through libsndfile (Vorbis, Opus): x · 32767 rounded half to even, clipped.
    case lossyCodec

    /// Converts one sample (tests and slow paths; the generator uses the same arithmetic inline).
    public func int16(_ x: Float) -> Int16 {
        switch self {
        case .integerPCM: return Int16(truncatingIfNeeded: IntegerPCMConverter.convert(x))
        case .floatingPoint: return Int16(truncatingIfNeeded: FloatingPointConverter.convert(x))
        case .lossyCodec: return Int16(truncatingIfNeeded: LossyCodecConverter.convert(x))
        }
    }
}

/// One of the three conversions as a type, so the sample loops are specialised per mode and the
/// conversion is inlined (no switch per sample).
protocol Int16Converter {
    /// The input sample type (Float, or Int16 for already-converted input).
    associatedtype Sample
    /// Maps a sample to an int16 value held in an Int32. Branch-free, so loops vectorise.
    static func convert(_ x: Sample) -> Int32
}

/// 1.5 · 2²³: adding it to a float of magnitude below 2²² rounds that float to the nearest
/// integer (ties to even) and leaves the integer in the low mantissa bits. This is a float→int
/// conversion that cannot trap and vectorises on plain SSE2 (no `roundps`).
@usableFromInline package let roundingMagic: Float = 12_582_912
@usableFromInline package let roundingMagicBits: Int32 = 0x4B40_0000

/// Replaces NaN by 0 and clamps to [lo, hi].
@inlinable @inline(__always)
package func clampedNoNaN(_ y: Float, _ lo: Float, _ hi: Float) -> Float {
    var c = y == y ? y : 0
    c = c < lo ? lo : c
    c = c > hi ? hi : c
    return c
}

/// Rounds `c` (|c| < 2²²) to the nearest integer, ties to even: the value as a float and as an Int32.
@inlinable @inline(__always)
package func roundNearest(_ c: Float) -> (Float, Int32) {
    let m = c + roundingMagic
    return (m - roundingMagic, Int32(bitPattern: m.bitPattern) &- roundingMagicBits)
}

enum IntegerPCMConverter: Int16Converter {
    @inline(__always)
    static func convert(_ x: Float) -> Int32 {
        let c = clampedNoNaN(x * 32768, -32768, 32767)
        let (r, n) = roundNearest(c)
        return n &- (r > c ? 1 : 0)
    }
}

enum FloatingPointConverter: Int16Converter {
    @inline(__always)
    static func convert(_ x: Float) -> Int32 {
        let c = clampedNoNaN(x * 32767, -32768, 32767)
        let a = abs(c)
        let (r, n) = roundNearest(a)
        let t = n &- (r > a ? 1 : 0)  // ⌊|c|⌋
        let sign: Int32 = c < 0 ? -1 : 0
        return (t ^ sign) &- sign  // −t when c < 0
    }
}

enum LossyCodecConverter: Int16Converter {
    @inline(__always)
    static func convert(_ x: Float) -> Int32 {
        let c = clampedNoNaN(x * 32767, -32768, 32767)
        return roundNearest(c).1
    }
}
