import Foundation

/// The Broadcast Wave `bext` chunk (EBU Tech 3285): who made the recording, when, and where its
/// first sample sits on the day's clock. Parsed from the chunk's bytes; written back through
/// libsndfile (`SndFileEncoder`), which sets version 2 and adds its own coding-history line.
public struct BroadcastInfo: Sendable, Equatable {
    public var description: String
    public var originator: String
    public var originatorReference: String
    /// "yyyy-mm-dd" as stored (separators may be any character).
    public var originationDate: String
    /// "hh:mm:ss" as stored.
    public var originationTime: String
    /// The first sample's position, in samples since midnight counted at the file's sample rate.
    public var timeReference: UInt64
    public var version: UInt16
    /// 64 bytes, zero when unset.
    public var umid: [UInt8]
    /// Loudness value, range, max true peak, max momentary, max short-term: ×100 (version 2).
    public var loudness: [Int16]
    public var codingHistory: String

    /// Size of the fixed part of the chunk, in bytes; the coding history follows.
    static package let fixedSize = 602

    /// Parses a `bext` chunk's body; nil when shorter than the fixed part.
    public init?(chunk b: [UInt8]) {
        guard b.count >= Self.fixedSize else { return nil }
        func text(_ from: Int, _ count: Int) -> String {
            let slice = b[from..<(from + count)]
            let end = slice.firstIndex(of: 0) ?? slice.endIndex
            return Self.decode(Array(b[from..<end]))
        }
        func le16(_ at: Int) -> UInt16 { UInt16(b[at]) | UInt16(b[at + 1]) << 8 }
        description = text(0, 256)
        originator = text(256, 32)
        originatorReference = text(288, 32)
        originationDate = text(320, 10)
        originationTime = text(330, 8)
        var t: UInt64 = 0
        for i in (0..<8).reversed() { t = t << 8 | UInt64(b[338 + i]) }
        timeReference = t
        version = le16(346)
        umid = Array(b[348..<412])
        loudness = (0..<5).map { Int16(bitPattern: le16(412 + 2 * $0)) }
        codingHistory = b.count > Self.fixedSize ? text(Self.fixedSize, b.count - Self.fixedSize) : ""
    }

    /// Text fields are ASCII by the standard; recorders write Latin-1 or UTF-8. Valid UTF-8 is
    /// taken as such, anything else as Latin-1, so no byte is lost.
    static package func decode(_ bytes: [UInt8]) -> String {
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        return String(bytes.map { Character(Unicode.Scalar($0)) })
    }

    /// The origination date and time as one ISO 8601 local time ("2024-05-01T09:30:12"), or the
    /// date alone; nil when the date is not a date.
    public var origination: String? {
        let d = Array(originationDate.utf8), t = Array(originationTime.utf8)
        func digits(_ a: [UInt8], _ r: Range<Int>) -> String? {
            guard r.upperBound <= a.count, a[r].allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            return String(decoding: a[r], as: UTF8.self)
        }
        guard let y = digits(d, 0..<4), let m = digits(d, 5..<7), let day = digits(d, 8..<10), y != "0000" else { return nil }
        let date = "\(y)-\(m)-\(day)"
        guard let h = digits(t, 0..<2), let mi = digits(t, 3..<5), let s = digits(t, 6..<8) else { return date }
        return "\(date)T\(h):\(mi):\(s)"
    }

    /// The time reference after a rate change from `from` to `to` Hz, rounded to the nearest
    /// sample: the same instant counted at the new rate (48 kHz → 16 kHz divides it by 3).
    public static func scaled(_ reference: UInt64, from: Int, to: Int) -> UInt64 {
        guard from > 0, to > 0, from != to else { return reference }
        let (q, r) = reference.quotientAndRemainder(dividingBy: UInt64(from))
        // q·to + round(r·to / from): exact in 64 bits for any reference below 2^64 / to.
        return q &* UInt64(to) &+ (r * UInt64(to) + UInt64(from) / 2) / UInt64(from)
    }
}
