import Foundation
import SegnoCore

/// Reads the metadata chunks TagLib does not: RIFF `LIST/INFO`, `bext` and `iXML` in WAV, RF64
/// and BW64; AIFF's text chunks (NAME, AUTH, ANNO, "(c) "); CAF's `info`. Walks chunk headers
/// with seeks, never reads audio, and reads no chunk larger than `limit` bytes: a size past the
/// end of the file or over the limit becomes a warning, and the walk stops or skips it.
package enum ChunkTags {
    /// Largest metadata chunk read, in bytes (coding histories and iXML are a few KiB).
    static package let limit = 4 << 20

    static package func read(path: String, kind: ContentSniffer.Kind, into m: inout RecordingMetadata) {
        guard let f = FileNameBytes.reading(path) else { return }
        defer { try? f.close() }
        let size = (try? f.seekToEnd()).map(Int64.init) ?? 0
        switch kind {
        case .wav, .rf64: riff(f, size: size, into: &m)
        case .aiff: aiff(f, size: size, into: &m)
        case .caf: caf(f, size: size, into: &m)
        default: return
        }
    }

    private static func bytes(_ f: FileHandle, at: Int64, _ count: Int) -> [UInt8]? {
        guard count >= 0, (try? f.seek(toOffset: UInt64(at))) != nil, let d = try? f.read(upToCount: count), d.count == count else { return nil }
        return [UInt8](d)
    }

    private static func le32(_ b: [UInt8], _ i: Int) -> UInt32 { UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24 }
    private static func be32(_ b: [UInt8], _ i: Int) -> UInt32 { UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3]) }
    private static func le64(_ b: [UInt8], _ i: Int) -> UInt64 { UInt64(le32(b, i)) | UInt64(le32(b, i + 4)) << 32 }
    private static func id(_ b: [UInt8], _ i: Int) -> String { String(decoding: b[i..<(i + 4)], as: UTF8.self) }

    /// A text value: NUL-terminated, UTF-8 when valid, else Latin-1.
    private static func text(_ b: ArraySlice<UInt8>) -> String {
        let end = b.firstIndex(of: 0) ?? b.endIndex
        return BroadcastInfo.decode(Array(b[b.startIndex..<end])).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Walks IFF-style chunks (4-byte id, 32-bit size, even padding) from byte 12: calls `visit`
    /// with each chunk's id, body offset and length until it returns false, the file ends, or a
    /// chunk claims more bytes than the file holds (a warning, except for the audio chunk, which a
    /// recorder that died leaves too long). `bigEndian` for AIFF; `length` may replace a size
    /// (RF64's data chunk).
    private static func walk(_ f: FileHandle, size: Int64, bigEndian: Bool, audio: String, into m: inout RecordingMetadata,
                             length fix: (String, Int64) -> Int64 = { $1 },
                             visit: (String, Int64, Int64, inout RecordingMetadata) -> Bool) {
        var at: Int64 = 12
        for _ in 0..<10_000 where at + 8 <= size {
            guard let h = bytes(f, at: at, 8) else { return }
            let name = id(h, 0)
            let length = fix(name, Int64(bigEndian ? be32(h, 4) : le32(h, 4)))
            let body = at + 8
            if body + length > size {
                if name != audio { m.warnings.append("\(name) chunk claims \(length) bytes, past the end of the file; not read") }
                return
            }
            if !visit(name, body, length, &m) { return }
            at = body + length + (length & 1)
        }
    }

    /// A metadata chunk's bytes, or nil with a warning when over `limit`.
    private static func body(_ f: FileHandle, _ name: String, at: Int64, _ length: Int64, into m: inout RecordingMetadata) -> [UInt8]? {
        guard length <= Int64(limit) else {
            m.warnings.append("\(name) chunk of \(length) bytes is over \(limit) bytes; not read")
            return nil
        }
        return bytes(f, at: at, Int(length))
    }

    private static func riff(_ f: FileHandle, size: Int64, into m: inout RecordingMetadata) {
        guard let head = bytes(f, at: 0, 12) else { return }
        let isRF64 = id(head, 0) != "RIFF"
        var dataSize64: UInt64? = nil
        var rate = 0, cue: [UInt8]? = nil, adtl: [[UInt8]] = []
        walk(f, size: size, bigEndian: false, audio: "data", into: &m,
             length: { name, n in isRF64 && name == "data" && n == 0xFFFF_FFFF ? dataSize64.map { Int64(clamping: $0) } ?? n : n }) { name, at, length, m in
            switch name {
            case "ds64":
                if length >= 24, let b = bytes(f, at: at, 24) { dataSize64 = le64(b, 8) }
            case "bext":
                guard let b = body(f, name, at: at, length, into: &m) else { break }
                if let info = BroadcastInfo(chunk: b) { m.broadcast = info } else { m.warnings.append("bext chunk of \(length) bytes is shorter than the standard's 602; not read") }
            case "iXML":
                guard var x = body(f, name, at: at, length, into: &m) else { break }
                while x.last == 0 { x.removeLast() }
                m.ixml = x
            case "LIST":
                guard let b = body(f, name, at: at, length, into: &m), b.count >= 4 else { break }
                if id(b, 0) == "INFO" { info(b, into: &m) } else if id(b, 0) == "adtl" { adtl.append(b) }
            case "fmt ":
                if length >= 8, let b = bytes(f, at: at, 8) { rate = Int(le32(b, 4)) }
            case "cue ":
                cue = body(f, name, at: at, length, into: &m)
            default: break
            }
            return true
        }
        if let cue { ChapterReader.riff(cue: cue, adtl: adtl, rate: rate, into: &m) }
        if let x = m.ixml { IXMLMarkers.read(x, rate: rate, timeReference: m.broadcast?.timeReference, into: &m) }
    }

    /// `LIST/INFO` sub-chunks: id, size, NUL-terminated text.
    private static func info(_ b: [UInt8], into m: inout RecordingMetadata) {
        var i = 4
        while i + 8 <= b.count {
            let key = id(b, i)
            let n = Int(le32(b, i + 4))
            guard i + 8 + n <= b.count else { m.warnings.append("INFO \(key) claims \(n) bytes, past its list; not read"); return }
            let value = text(b[(i + 8)..<(i + 8 + n)])
            m.addRaw(key, value)
            m.add(TagNames.fromInfo[key] ?? key.lowercased().trimmingCharacters(in: .whitespaces), value)
            i += 8 + n + (n & 1)
        }
    }

    private static func aiff(_ f: FileHandle, size: Int64, into m: inout RecordingMetadata) {
        walk(f, size: size, bigEndian: true, audio: "SSND", into: &m) { name, at, length, m in
            if let key = TagNames.fromAIFF[name], let b = body(f, name, at: at, length, into: &m) {
                let value = text(b[...])
                m.addRaw(name, value)
                m.add(key, value)
            }
            return true
        }
    }

    private static func caf(_ f: FileHandle, size: Int64, into m: inout RecordingMetadata) {
        var at: Int64 = 8
        var chunks = 0
        while at + 12 <= size, chunks < 10_000 {
            chunks += 1
            guard let h = bytes(f, at: at, 12) else { return }
            let name = id(h, 0)
            let length = Int64(bitPattern: UInt64(be32(h, 4)) << 32 | UInt64(be32(h, 8)))
            let body = at + 12
            if length < 0 || body + length > size { return }  // "size unknown" audio runs to the end
            if name == "info" {
                guard length <= Int64(limit), length >= 4, let b = bytes(f, at: body, Int(length)) else {
                    m.warnings.append("info chunk of \(length) bytes not read"); return
                }
                let count = Int(be32(b, 0))
                var parts = b[4...].split(separator: 0, omittingEmptySubsequences: false).map { text($0) }
                if parts.last == "" { parts.removeLast() }
                var i = 0
                while i + 1 < parts.count, i / 2 < count {
                    let key = parts[i], value = parts[i + 1]
                    m.addRaw(key, value)
                    m.add(TagNames.fromCAF[key.lowercased()] ?? key.lowercased(), value)
                    i += 2
                }
            }
            at = body + length
        }
    }
}
