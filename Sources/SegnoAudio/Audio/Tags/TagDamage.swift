import Foundation
import SegnoCore

/// Checks that say which tag TagLib passed over, so a damaged tag is a warning naming it rather
/// than a silent loss. Called by `TagReader` once per file; they read only tag bytes.
package enum TagDamage {
    /// An ID3v2 tag whose header is there but from which TagLib read no frame (a frame's size
    /// runs past the tag, say).
    static package func id3v2(path: String, read m: RecordingMetadata) -> String? {
        guard let f = FileNameBytes.reading(path) else { return nil }
        defer { try? f.close() }
        guard let head = try? f.read(upToCount: 10), head.count == 10, head.starts(with: Data("ID3".utf8)) else { return nil }
        let frames = m.raw.contains { $0.key.count >= 4 && !$0.key.hasPrefix("APE:") && !$0.key.hasPrefix("ID3v1:") }
        return frames || !m.pictures.isEmpty ? nil : "the ID3v2 tag is damaged (no frame could be read); its tags are not carried"
    }

    /// FLAC Vorbis comments that are not valid UTF-8: TagLib drops them, so they are decoded here
    /// with U+FFFD for the bad bytes, added under their name, and named in a warning.
    static package func flacComments(path: String, into m: inout RecordingMetadata) {
        guard let f = FileNameBytes.reading(path) else { return }
        defer { try? f.close() }
        guard let magic = try? f.read(upToCount: 4), magic == Data("fLaC".utf8) else { return }
        var at: UInt64 = 4
        for _ in 0..<64 {
            guard (try? f.seek(toOffset: at)) != nil, let h = try? f.read(upToCount: 4), h.count == 4 else { return }
            let type = h[0] & 0x7F, last = h[0] & 0x80 != 0
            let length = Int(h[1]) << 16 | Int(h[2]) << 8 | Int(h[3])
            if type == 4 {
                guard let body = try? f.read(upToCount: length), body.count == length else { return }
                scanVorbis([UInt8](body), into: &m)
                return
            }
            if last { return }
            at += 4 + UInt64(length)
        }
    }

    private static func scanVorbis(_ b: [UInt8], into m: inout RecordingMetadata) {
        func le32(_ i: Int) -> Int? { i + 4 <= b.count ? Int(UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24) : nil }
        guard let vendor = le32(0), let count = le32(4 + vendor) else { return }
        var i = 8 + vendor
        for _ in 0..<min(count, 100_000) {
            guard let n = le32(i), i + 4 + n <= b.count else { return }
            let entry = b[(i + 4)..<(i + 4 + n)]
            i += 4 + n
            guard String(validating: entry, as: UTF8.self) == nil, let eq = entry.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let key = String(decoding: entry[entry.startIndex..<eq], as: UTF8.self).lowercased()
            let value = String(decoding: entry[(eq + 1)...], as: UTF8.self)
            m.add(key, value)
            m.warnings.append("Vorbis comment \(key.uppercased()) is not valid UTF-8; kept with U+FFFD for the bad bytes")
        }
    }
}
