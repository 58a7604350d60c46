import Foundation
import SegnoCore

/// Reads chapters and markers (issue 32) into `RecordingMetadata.chapterList`, source seconds.
/// Called by `TagReader.read` once per file, after TagLib and `ChunkTags`:
/// - ID3v2 `CHAP` (start, end, the `TIT2` sub-frame), from TagLib's read in its child process
///   (`segno:CHAP` raw entries, taken out of `raw` here);
/// - Vorbis comments `CHAPTERnnn=HH:MM:SS.mmm` / `CHAPTERnnnNAME` (FLAC, Ogg, Opus);
/// - MP4 Nero `chpl` in `moov/udta` (what ffmpeg writes and reads), else the QuickTime chapter
///   track (`MP4ChapterTrack`: what Apple's tools write; decision 0090);
/// - Matroska/WebM `Chapters` (`MatroskaChapters`, decision 0078);
/// - RIFF `cue ` with `LIST/adtl` (`labl`, `note`, `ltxt`), from `ChunkTags`: a cue point with an
///   `ltxt` length is a chapter with an end, any other a marker; then iXML sync points as markers
///   (`IXMLMarkers`).
/// Everything is bounded by `ChapterLimits` and the readers' own limits; damage is a warning.
package enum ChapterReader {
    /// The raw key TagLib's reader gives ID3v2 `CHAP` frames under.
    static package let id3Key = "segno:CHAP"

    static package func read(path: String, kind: ContentSniffer.Kind, into m: inout RecordingMetadata) {
        id3(into: &m)
        vorbis(into: &m)
        if kind == .mp4 || kind == .threeGP { mp4(path: path, into: &m) }
        if kind == .matroska || kind == .webm { MatroskaChapters.read(path: path, into: &m) }
        m.sortChapters()
    }

    /// `segno:CHAP` entries: "START_MS\tEND_MS\tTITLE".
    private static func id3(into m: inout RecordingMetadata) {
        let entries = m.raw.filter { $0.key == id3Key }
        guard !entries.isEmpty else { return }
        m.raw.removeAll { $0.key == id3Key }
        for e in entries {
            let parts = e.value.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, let s = UInt32(parts[0]), let t = UInt32(parts[1]) else { continue }
            // 0xFFFFFFFF is the standard's "no time" (then the byte offsets count, which segno does not read).
            guard s != .max else { m.warnings.append("ID3v2 CHAP \"\(parts[2])\" gives no start time; left out"); continue }
            m.addChapter(Chapter(start: Double(s) / 1000, end: t == .max ? nil : Double(t) / 1000, title: String(parts[2])), from: "ID3v2 tag")
        }
    }

    /// True for `chapter001`, `chapter001name`, `chapter001url` (any case): the Vorbis-comment
    /// chapter keys, which travel as chapters, not tags.
    static package func isVorbisChapterKey(_ key: String) -> Bool { ChapterLimits.isVorbisChapterKey(key) }

    /// `CHAPTERnnn` / `CHAPTERnnnNAME` among the raw Vorbis comments.
    private static func vorbis(into m: inout RecordingMetadata) {
        var starts: [Int: String] = [:], names: [Int: String] = [:]
        for e in m.raw where isVorbisChapterKey(e.key) {
            let k = e.key.lowercased().dropFirst(7)
            let digits = k.prefix { $0.isNumber }
            guard digits.count <= 6, let n = Int(digits) else { continue }
            if k.hasSuffix("name") { names[n] = e.value } else if !k.hasSuffix("url") { starts[n] = e.value }
        }
        for n in starts.keys.sorted() {
            guard let t = ChapterTime.parse(starts[n]!) else {
                m.warnings.append("Vorbis comment CHAPTER\(n) has a time that is not HH:MM:SS.mmm (\"\(starts[n]!.prefix(40))\"); left out")
                continue
            }
            m.addChapter(Chapter(start: t, title: names[n] ?? ""), from: "Vorbis comments")
        }
    }

    /// Nero `chpl` in `moov/udta`: version, flags, (v1: 4 reserved bytes), a count byte, then per
    /// chapter a 64-bit start in 100 ns and a title of at most 255 bytes. Without chapters from it,
    /// the QuickTime chapter track: never both, which would double ffmpeg's files (decision 0090).
    private static func mp4(path: String, into m: inout RecordingMetadata) {
        _ = BoxReader.withFile(path) { mp4($0, into: &m) }
    }

    private static func mp4(_ file: BoxReader, into m: inout RecordingMetadata) {
        guard let top = file.children(0, file.size, upToACutBox: true), let moov = top.first(where: { $0.type == "moov" }) else { return }
        let before = m.chapterList.chapters.count
        if let udta = file.child("udta", of: moov), let chpl = file.child("chpl", of: udta) {
            let length = chpl.end - chpl.body
            if length <= 1 << 20, let b = file.read(chpl.body, Int(length)) {
                parseChpl(b, into: &m)
            } else {
                m.warnings.append("MP4 chpl box of \(length) bytes not read")
            }
        }
        if m.chapterList.chapters.count == before, let boxes = file.children(moov.body, moov.end) {
            MP4ChapterTrack.read(file, moov: boxes, into: &m)
        }
    }

    static package func parseChpl(_ b: [UInt8], into m: inout RecordingMetadata) {
        guard b.count >= 5 else { return }
        var i = b[0] == 0 ? 4 : 8
        guard i < b.count else { return }
        let count = Int(b[i])
        i += 1
        for _ in 0..<count {
            guard i + 9 <= b.count else { m.warnings.append("MP4 chpl box ends inside a chapter; the rest are left out"); return }
            let start = be64(b, i)
            let n = Int(b[i + 8])
            guard i + 9 + n <= b.count else { m.warnings.append("MP4 chpl box ends inside a title; the rest are left out"); return }
            let title = String(decoding: b[(i + 9)..<(i + 9 + n)], as: UTF8.self)
            m.addChapter(Chapter(start: Double(start) / 10_000_000, title: title), from: "MP4 chpl box")
            i += 9 + n
        }
    }

    /// A RIFF file's `cue ` points with their `adtl` labels, notes and `ltxt` lengths, at `rate`.
    static package func riff(cue: [UInt8], adtl: [[UInt8]], rate: Int, into m: inout RecordingMetadata) {
        guard rate > 0, cue.count >= 4 else { return }
        let declared = Int(le32(cue, 0))
        let count = min(declared, (cue.count - 4) / 24)
        if count < declared { m.warnings.append("cue chunk claims \(declared) points but holds \(count); the rest are left out") }
        var labels: [UInt32: String] = [:], notes: [UInt32: String] = [:], texts: [UInt32: String] = [:], lengths: [UInt32: UInt32] = [:]
        for list in adtl {
            var i = 4
            while i + 8 <= list.count {
                let name = String(decoding: list[i..<(i + 4)], as: UTF8.self)
                let n = Int(le32(list, i + 4))
                guard n >= 4, i + 8 + n <= list.count else { m.warnings.append("adtl \(name) claims \(n) bytes, past its list; the rest are left out"); break }
                let body = Array(list[(i + 8)..<(i + 8 + n)])
                let id = le32(body, 0)
                switch name {
                case "labl": labels[id] = text(body[4...])
                case "note": notes[id] = text(body[4...])
                case "ltxt" where body.count >= 20:
                    lengths[id] = le32(body, 4)
                    texts[id] = text(body[20...])
                default: break
                }
                i += 8 + n + (n & 1)
            }
        }
        for k in 0..<count {
            let at = 4 + k * 24
            let id = le32(cue, at), offset = le32(cue, at + 20)
            let start = Double(offset) / Double(rate)
            let title = labels[id] ?? notes[id] ?? texts[id] ?? ""
            if let l = lengths[id], l > 0 {
                m.addChapter(Chapter(start: start, end: Double(UInt64(offset) + UInt64(l)) / Double(rate), title: title), from: "cue chunk")
            } else {
                m.addChapter(Chapter(start: start, title: title), marker: true, from: "cue chunk")
            }
        }
    }

    private static func le32(_ b: [UInt8], _ i: Int) -> UInt32 {
        guard i >= 0, i + 4 <= b.count else { return 0 }
        return UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }

    /// NUL-terminated text, UTF-8 when valid, else Latin-1.
    private static func text(_ b: ArraySlice<UInt8>) -> String {
        let end = b.firstIndex(of: 0) ?? b.endIndex
        return BroadcastInfo.decode(Array(b[b.startIndex..<end])).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
