import Foundation
import SegnoCore

/// Reads Matroska/WebM chapters (issue 32, decision 0078): `Segment/Chapters/EditionEntry/
/// ChapterAtom` with `ChapterTimeStart`/`ChapterTimeEnd` (nanoseconds, not scaled by the segment's
/// timestamp scale) and the first `ChapterDisplay/ChapString`. Called by `ChapterReader` once per
/// Matroska or WebM file. A small EBML reader with bounded reads: it walks the segment's top-level
/// elements (at most `elements` of them), follows the `SeekHead` to `Chapters` when they come after
/// the first `Cluster`, and without such a pointer steps over the clusters by their sizes (one
/// 12-byte header read each, never their audio) until `Chapters`, a cluster of unknown size or the
/// end (decision 0078, amended); it reads no `Chapters` element larger than `limit` bytes.
/// The default edition is read (else the first); hidden or disabled chapters and nested
/// sub-chapters are left out, as players show them. Damage is a warning.
package enum MatroskaChapters {
    /// Largest `Chapters` element read, in bytes (999 chapters with long titles fit in a few hundred KiB).
    static package let limit = 4 << 20
    /// Most top-level elements walked before giving up on finding `Chapters`.
    static let elements = 10_000

    static let ebml: UInt32 = 0x1A45_DFA3, segment: UInt32 = 0x1853_8067, seekHead: UInt32 = 0x114D_9B74
    static let seek: UInt32 = 0x4DBB, seekID: UInt32 = 0x53AB, seekPosition: UInt32 = 0x53AC
    static let chapters: UInt32 = 0x1043_A770, cluster: UInt32 = 0x1F43_B675
    static let edition: UInt32 = 0x45B9, editionDefault: UInt32 = 0x45DB, atom: UInt32 = 0xB6
    static let timeStart: UInt32 = 0x91, timeEnd: UInt32 = 0x92, hidden: UInt32 = 0x98, enabled: UInt32 = 0x4598
    static let display: UInt32 = 0x80, string: UInt32 = 0x85

    static package func read(path: String, into m: inout RecordingMetadata) {
        _ = BoxReader.withFile(path) { read($0, into: &m) }
    }

    private static func read(_ file: BoxReader, into m: inout RecordingMetadata) {
        guard let head = header(file, at: 0), head.id == ebml, let size = head.size,
              let seg = header(file, at: head.body + size), seg.id == segment else { return }
        let end = seg.size.map { min(seg.body + $0, file.size) } ?? file.size
        var at = seg.body, later: Int64? = nil
        for _ in 0..<elements {
            // At the audio, a SeekHead's pointer is followed; without one the clusters are stepped over.
            guard at < end, let e = header(file, at: at), !(e.id == cluster && later != nil), let size = e.size else { break }
            if e.id == chapters { return parse(file, at: e.body, size, into: &m) }
            if e.id == seekHead, size <= 1 << 16, let b = file.read(e.body, Int(size)) { later = later ?? seekTarget(b, base: seg.body) }
            at = e.body + size
        }
        guard let later, let e = header(file, at: later), e.id == chapters, let size = e.size else {
            if later != nil { m.warnings.append("Matroska SeekHead points to Chapters at a place that holds none; not read") }
            return
        }
        parse(file, at: e.body, size, into: &m)
    }

    /// The position of `Chapters` a `SeekHead` names (relative to the segment's data).
    private static func seekTarget(_ b: [UInt8], base: Int64) -> Int64? {
        for s in children(b, 0..<b.count).items where s.id == seek {
            let fields = children(b, s.body).items
            guard let id = fields.first(where: { $0.id == seekID }), let pos = fields.first(where: { $0.id == seekPosition }),
                  Array(b[id.body]) == [0x10, 0x43, 0xA7, 0x70], let p = uint(b, pos.body), p < UInt64(Int64.max / 2) else { continue }
            return base + Int64(p)
        }
        return nil
    }

    private static func parse(_ file: BoxReader, at body: Int64, _ size: Int64, into m: inout RecordingMetadata) {
        let what = "Matroska Chapters"
        guard size <= Int64(limit) else { m.warnings.append("\(what) element of \(size) bytes is over \(limit) bytes; not read"); return }
        guard let b = file.read(body, Int(size)) else { m.warnings.append("\(what) element claims \(size) bytes, past the end of the file; not read"); return }
        let top = children(b, 0..<b.count)
        if top.damaged { m.warnings.append("\(what) element is damaged; what comes before the damage is read") }
        let editions = top.items.filter { $0.id == edition }
        guard let chosen = editions.first(where: { flag(b, $0.body, editionDefault) == 1 }) ?? editions.first else { return }
        let atoms = children(b, chosen.body)
        if atoms.damaged { m.warnings.append("Matroska EditionEntry is damaged; the chapters before the damage are read") }
        for a in atoms.items where a.id == atom {
            let fields = children(b, a.body).items
            func value(_ id: UInt32) -> UInt64? { fields.first { $0.id == id }.flatMap { uint(b, $0.body) } }
            guard value(hidden) != 1, value(enabled) != 0 else { continue }
            let title = titleOf(b, fields)
            guard let start = value(timeStart) else { m.warnings.append("Matroska chapter \"\(title)\" has no ChapterTimeStart; left out"); continue }
            m.addChapter(Chapter(start: Double(start) / 1e9, end: value(timeEnd).map { Double($0) / 1e9 }, title: title), from: what)
        }
    }

    /// The first `ChapterDisplay/ChapString` among an atom's `fields`, up to a NUL; "" when none.
    private static func titleOf(_ b: [UInt8], _ fields: [(id: UInt32, body: Range<Int>)]) -> String {
        guard let d = fields.first(where: { $0.id == display }),
              let s = children(b, d.body).items.first(where: { $0.id == string }) else { return "" }
        let bytes = b[s.body]
        return String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
    }

    /// The value of a one-byte flag child of `range`, if present.
    private static func flag(_ b: [UInt8], _ range: Range<Int>, _ id: UInt32) -> UInt64? {
        children(b, range).items.first { $0.id == id }.flatMap { uint(b, $0.body) }
    }

    /// The elements inside `range` of `b`; `damaged` when one claims more bytes than its parent holds
    /// (the walk stops there) or has an unknown size.
    static package func children(_ b: [UInt8], _ range: Range<Int>) -> (items: [(id: UInt32, body: Range<Int>)], damaged: Bool) {
        var out: [(id: UInt32, body: Range<Int>)] = []
        var at = range.lowerBound
        while at < range.upperBound {
            guard let (id, n) = vint(b, at, range.upperBound, keepMarker: true), n <= 4,
                  let (size, m) = vint(b, at + n, range.upperBound, keepMarker: false) else { return (out, true) }
            let body = at + n + m
            guard size != unknown(m), size <= UInt64(range.upperBound - body) else { return (out, true) }
            out.append((UInt32(id), body..<(body + Int(size))))
            at = body + Int(size)
        }
        return (out, false)
    }

    /// An element header in the file: its id, where its body starts, and its size (nil: unknown).
    private static func header(_ file: BoxReader, at: Int64) -> (id: UInt32, body: Int64, size: Int64?)? {
        guard at >= 0, at < file.size, let b = file.read(at, Int(min(12, file.size - at))),
              let (id, n) = vint(b, 0, b.count, keepMarker: true), n <= 4,
              let (size, m) = vint(b, n, b.count, keepMarker: false) else { return nil }
        return (UInt32(id), at + Int64(n + m), size == unknown(m) ? nil : Int64(size))
    }

    /// The all-ones value that means "unknown size" for a size of `length` bytes.
    private static func unknown(_ length: Int) -> UInt64 { (1 << (7 * UInt64(length))) - 1 }

    /// An EBML variable-length integer at `i` (before `end`): its value (with the length marker for
    /// ids) and its length in bytes; nil when malformed or cut.
    static package func vint(_ b: [UInt8], _ i: Int, _ end: Int, keepMarker: Bool) -> (UInt64, Int)? {
        guard i < end, b[i] != 0 else { return nil }
        let n = b[i].leadingZeroBitCount + 1
        guard i + n <= end else { return nil }
        var v = UInt64(keepMarker ? b[i] : b[i] & (0xFF >> n))
        for k in 1..<n { v = v << 8 | UInt64(b[i + k]) }
        return (v, n)
    }

    /// An unsigned integer element's value (0 to 8 bytes, big-endian); nil when longer.
    private static func uint(_ b: [UInt8], _ r: Range<Int>) -> UInt64? {
        guard r.count <= 8 else { return nil }
        return b[r].reduce(0) { $0 << 8 | UInt64($1) }
    }
}
