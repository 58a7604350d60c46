/// A short list of loudness levels for list thumbnails: `count` amplitudes in [0, 1], the peak of
/// each of `count` equal stretches of the recording (what recorder apps keep in their cloud
/// metadata), and a compact text form that fits in S3 user metadata.
///
/// Levels are computed from waveform data (the finest zoom at hand): bucket i holds the points
/// [⌊i·L/N⌋, ⌊(i+1)·L/N⌋) of the L points, and its level is the largest |min| or |max| of any
/// channel there, divided by full scale (32768 for 16-bit data, 128 for 8-bit), at most 1.
/// When L < N some buckets hold no point and repeat the point at ⌊i·L/N⌋; for buckets that
/// each span several points, use data with L ≥ N (samples per pixel ≤ frames / N).
/// Empty data gives N zeros.
///
/// Text form (`encoded`): each level quantised to a byte, round(level × 255), then standard
/// base64 with padding. 100 levels take 136 ASCII characters; the 2 KB of S3 user metadata
/// (keys and values together) leave room for about 1400 levels.
public struct WaveformLevels: Sendable, Hashable {
    /// The levels, each in [0, 1].
    public let values: [Float]

    /// The default number of levels.
    public static let defaultCount = 100

    /// Levels of `data`. With `relativeToLoudest`, levels are divided by the loudest one so the
    /// largest is 1 (quiet recordings then look as tall as loud ones); silence stays 0.
    public init(_ data: WaveformData, count: Int = WaveformLevels.defaultCount,
                relativeToLoudest: Bool = false) throws(WaveformError) {
        guard count >= 1 else { throw .invalidSize("level count", count) }
        let length = data.length
        guard length > 0 else {
            values = [Float](repeating: 0, count: count)
            return
        }
        let fullScale: Float = data.bits == 8 ? 128 : 32768
        var out = [Float](repeating: 0, count: count)
        for b in 0..<count {
            let first = b * length / count
            let end = Swift.max(first + 1, (b + 1) * length / count)
            var peak = 0
            for i in first..<end {
                for c in 0..<data.channels {
                    peak = Swift.max(peak, abs(Int(data.min(channel: c, at: i))),
                                     abs(Int(data.max(channel: c, at: i))))
                }
            }
            out[b] = Swift.min(1, Float(peak) / fullScale)
        }
        if relativeToLoudest, let top = out.max(), top > 0 {
            for b in 0..<count { out[b] /= top }
        }
        values = out
    }

    /// Levels given directly (each clamped to [0, 1]; NaN becomes 0).
    public init(values: [Float]) {
        self.values = values.map { $0 >= 0 ? Swift.min($0, 1) : 0 }
    }

    /// Decodes the text form; levels come back as k / 255.
    public init(encoded text: String) throws(WaveformError) {
        guard let bytes = Base64.decode(text) else { throw .invalidLevelsEncoding }
        values = bytes.map { Float($0) / 255 }
    }

    /// Each level as a byte, round(level × 255).
    public var quantized: [UInt8] { values.map { UInt8(($0 * 255).rounded()) } }

    /// The text form: base64 of `quantized`, ASCII, safe in an HTTP header.
    public var encoded: String { Base64.encode(quantized) }
}

/// Standard base64 (RFC 4648 §4) with padding.
enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = UInt32(bytes[i])
            let b1 = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0
            let b2 = i + 2 < bytes.count ? UInt32(bytes[i + 2]) : 0
            let n = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(i + 1 < bytes.count ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(n & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// nil unless `text` is canonical padded base64.
    static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        var i = 0
        while i < chars.count {
            var n: UInt32 = 0
            var pad = 0
            for k in 0..<4 {
                let c = chars[i + k]
                let v: UInt32
                if c == UInt8(ascii: "=") {
                    // Padding only in the last group, only in its last two places, and only at the end.
                    guard i + 4 == chars.count, k >= 2 else { return nil }
                    pad += 1
                    v = 0
                } else {
                    guard pad == 0, let idx = alphabet.firstIndex(of: c) else { return nil }
                    v = UInt32(idx)
                }
                n = n << 6 | v
            }
            out.append(UInt8(n >> 16 & 0xFF))
            if pad < 2 { out.append(UInt8(n >> 8 & 0xFF)) }
            if pad < 1 { out.append(UInt8(n & 0xFF)) }
            i += 4
        }
        return out
    }
}
