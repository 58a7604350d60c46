import Foundation
import SegnoDSP

/// A recording's raw Chromaprint fingerprint: one 32-bit item per ~0.124 s of audio (algorithm 2:
/// 1365 samples at 11025 Hz). Stored in the state database (`fingerprint.items`) so that
/// `segno duplicates` never decodes audio again.
public struct AudioFingerprint: Sendable, Equatable, Codable {
    /// fpcalc's numbering: 1…5, chromaprint's default is 2.
    public var algorithm: Int
    /// The items, as `fpcalc -raw` prints them (unsigned).
    public var items: [UInt32]
    /// Seconds of audio fingerprinted (the stream at the tap, cut at `length`).
    public var duration: Double

    public init(algorithm: Int, items: [UInt32], duration: Double) {
        self.algorithm = algorithm
        self.items = items
        self.duration = duration
    }

    /// Seconds of audio one item advances by: 1365 / 11025 for every algorithm chromaprint 1.5 has.
    public static let itemSeconds = 1365.0 / 11025.0

    /// The items as a BLOB: 4 bytes each, little-endian (the `fingerprint.items` column).
    public var blob: Data {
        var d = Data(count: items.count * 4)
        d.withUnsafeMutableBytes { raw in
            for (i, v) in items.enumerated() { raw.storeBytes(of: v.littleEndian, toByteOffset: i * 4, as: UInt32.self) }
        }
        return d
    }

    /// Items from a BLOB written by `blob`; a trailing partial item is ignored.
    public static func items(blob: Data) -> [UInt32] {
        blob.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self)) }
        }
    }

    /// fpcalc's default (compressed, URL-safe base64) form, as AcoustID takes it; empty when
    /// there are no items. Made here, not by libchromaprint (which segno does not load), in
    /// chromaprint 1.5's format: a byte with chromaprint's algorithm number (fpcalc's − 1), the
    /// item count in 3 bytes big-endian, then for each item XORed with the one before, the
    /// distances between its set bits (lowest first; 1-based; 0 ends the item) packed 3 bits
    /// each, least significant first, a distance of 7 or more written as 7 with the rest packed
    /// after all of those in 5 bits each; base64 with `-` and `_`, no padding.
    public var compressed: String {
        guard !items.isEmpty else { return "" }
        var normal: [UInt8] = []
        var exceptional: [UInt8] = []
        normal.reserveCapacity(items.count * 4)
        var previous: UInt32 = 0
        for item in items {
            var x = item ^ previous
            previous = item
            var last = 0
            while x != 0 {
                let bit = x.trailingZeroBitCount + 1
                let distance = bit - last
                if distance >= 7 {
                    normal.append(7)
                    exceptional.append(UInt8(distance - 7))
                } else {
                    normal.append(UInt8(distance))
                }
                last = bit
                x &= x - 1
            }
            normal.append(0)
        }
        let n = items.count
        var bytes: [UInt8] = [UInt8(truncatingIfNeeded: algorithm - 1), UInt8(truncatingIfNeeded: n >> 16),
                              UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
        Self.pack(normal, bits: 3, into: &bytes)
        Self.pack(exceptional, bits: 5, into: &bytes)
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Appends `values` (each below 2^`bits`) packed least significant bit first, the last byte
    /// filled with zeros.
    private static func pack(_ values: [UInt8], bits: Int, into out: inout [UInt8]) {
        var acc: UInt32 = 0
        var have = 0
        for v in values {
            acc |= UInt32(v) << UInt32(have)
            have += bits
            while have >= 8 {
                out.append(UInt8(truncatingIfNeeded: acc))
                acc >>= 8
                have -= 8
            }
        }
        if have > 0 { out.append(UInt8(truncatingIfNeeded: acc)) }
    }
}

/// Why a fingerprint could not be made.
public enum FingerprintError: ClassifiedError, Sendable, CustomStringConvertible {
    /// An algorithm number fpcalc does not know.
    case badAlgorithm(Int)
    /// chromaprint refused to start (a format it cannot take).
    case start(String)
    /// chromaprint failed while taking or ending the stream.
    case feed
    /// There is no usable `segno-decode` helper (none found, or one of another protocol).
    case helperMissing(String)
    /// The helper failed or died while making the fingerprint.
    case helperFailed(String)

    public var description: String {
        switch self {
        case .badAlgorithm(let a): return "algorithm \(a) is not one of 1…5"
        case .start(let m): return "fingerprint: \(m)"
        case .feed: return "fingerprint: chromaprint failed on the stream"
        case .helperMissing(let why): return "segno-decode is missing or too old for fingerprints; reinstall (make install): \(why)"
        case .helperFailed(let why): return "fingerprint: \(why)"
        }
    }

    /// A format chromaprint refuses is the spec's (the stream at the tap); anything about the
    /// helper program is the environment's, retried by the next plain run.
    public var failureClass: FailureClass {
        switch self {
        case .badAlgorithm, .start: return .spec
        case .feed, .helperMissing, .helperFailed: return .environment
        }
    }
}
