import CSegnoTags
import Foundation
import SegnoCore

/// Writes chapters and markers, already at the output's place (`ChapterList.mapped`), into an
/// output segno is encoding, after its encoder closed the file and before it is renamed into
/// place (issue 32):
/// - FLAC, Ogg Vorbis, Opus: `CHAPTERnnn` / `CHAPTERnnnNAME` comments, with the tags (`comments`);
/// - MP3: ID3v2.4 `CHAP` + `CTOC` (TagLib, `segno_tags_write_chapters`);
/// - WAV, RF64: `cue ` + `LIST/adtl` chunks appended (`labl` titles; `ltxt` lengths for chapters);
/// - M4A: through ffmpeg (`FFmpegEncoder`), from `ffmetadata`.
/// Formats without markers get the markers as chapters too, as ffmpeg reads a WAV's cue points.
package enum ChapterWriter {
    /// What a format with chapters only carries: the chapters and the markers, in order of start
    /// (a marker runs to the next start; a chapter keeps its end).
    static package func chaptersOnly(_ l: ChapterList) -> ChapterList {
        guard !l.markers.isEmpty else { return ChapterList(chapters: l.chapters) }
        let all = l.chapters.map { ($0, 0) } + l.markers.map { (Chapter(start: $0.start, title: $0.title), 1) }
        let sorted = all.enumerated().sorted { ($0.element.0.start, $0.element.1, $0.offset) < ($1.element.0.start, $1.element.1, $1.offset) }
        var out = sorted.map(\.element.0)
        for i in out.indices where out[i].end == nil { out[i].end = i + 1 < out.count ? max(out[i + 1].start, out[i].start) : nil }
        return ChapterList(chapters: Array(out.prefix(ChapterLimits.count)))
    }

    /// True when the format holds chapters as Vorbis comments.
    static package func inComments(_ f: OutputFormat) -> Bool { f == .flac || f == .ogg || f == .opus }

    /// `CHAPTER001=00:00:00.000`, `CHAPTER001NAME=…`, numbered from 1 in order of start.
    static package func comments(_ l: ChapterList) -> [TagEntry] {
        chaptersOnly(l).chapters.prefix(ChapterLimits.count).enumerated().flatMap { i, c -> [TagEntry] in
            let key = String(format: "chapter%03d", i + 1)
            return [TagEntry(key, ChapterTime.text(c.start))] + (c.title.isEmpty ? [] : [TagEntry(key + "name", c.title)])
        }
    }

    /// ID3v2.4 `CHAP` + `CTOC` into the closed MP3 at `temporary`. Times in milliseconds.
    static package func id3(temporary: String, path: String, _ l: ChapterList) throws {
        let list = chaptersOnly(l).chapters
        let titles = list.map { strdup($0.title) }
        defer { for t in titles { free(t) } }
        func ms(_ t: Double) -> UInt32 { UInt32(clamping: Int((t * 1000).rounded())) }
        let chapters = list.enumerated().map { i, c in
            segno_tags_chapter(start_ms: ms(c.start), end_ms: ms(c.end ?? c.start), title: UnsafePointer(titles[i]))
        }
        var error = [CChar](repeating: 0, count: 256)
        let rc = chapters.withUnsafeBufferPointer { b in
            FileNameBytes.withCPath(temporary) { segno_tags_write_chapters($0, b.baseAddress, b.count, &error, error.count) }
        }
        if rc != 0 {
            throw AudioError.encodeFailed(path: path, detail: "chapters not written: \(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        }
    }

    /// The `cue ` chunk and a `LIST/adtl` chunk for `l` at `rate` Hz: chapters and markers in
    /// order of start, cue point IDs from 1; each gets a `labl` with its title, a chapter an `ltxt`
    /// ("rgn ") with its length in samples, after all the `labl`s (ffmpeg stops reading `adtl` at
    /// the first chunk that is not one). Sample positions round to the nearest frame.
    static package func riffChunks(_ l: ChapterList, rate: Int) -> [UInt8] {
        let points = (l.chapters.map { ($0, true) } + l.markers.map { ($0, false) }).enumerated()
            .sorted { ($0.element.0.start, $0.offset) < ($1.element.0.start, $1.offset) }.map(\.element)
        guard !points.isEmpty, rate > 0 else { return [] }
        func frames(_ t: Double) -> UInt32 { UInt32(clamping: Int((t * Double(rate)).rounded())) }
        var cue = le32(UInt32(points.count))
        var labels = Array("adtl".utf8), texts: [UInt8] = []
        for (i, (c, isChapter)) in points.enumerated() {
            let id = UInt32(i + 1), at = frames(c.start)
            cue += le32(id) + le32(at) + Array("data".utf8) + le32(0) + le32(0) + le32(at)
            labels += chunk("labl", le32(id) + Array(c.title.utf8) + [0])
            if isChapter, let e = c.end {
                let length = frames(e) &- at
                texts += chunk("ltxt", le32(id) + le32(length) + Array("rgn ".utf8) + [UInt8](repeating: 0, count: 8))
            }
        }
        return chunk("cue ", cue) + chunk("LIST", labels + texts)
    }

    /// Appends `chunks` (whole RIFF chunks) to the closed WAV or RF64 at `temporary` and fixes
    /// the container's size (RIFF's header, RF64's `ds64`).
    static package func appendRIFF(temporary: String, path: String, chunks: [UInt8]) throws {
        guard !chunks.isEmpty else { return }
        func fail(_ why: String) -> AudioError { .encodeFailed(path: path, detail: "chapters not written: \(why)") }
        guard let f = FileHandle(forUpdatingAtPath: temporary) else { throw fail("cannot open the file") }
        defer { try? f.close() }
        guard let head = try? f.read(upToCount: 12), head.count == 12 else { throw fail("no RIFF header") }
        var end = try f.seekToEnd()
        var bytes = chunks
        if end & 1 == 1 { bytes.insert(0, at: 0) }  // chunks start on an even offset
        try f.write(contentsOf: Data(bytes))
        end += UInt64(bytes.count)
        switch String(decoding: head[0..<4], as: UTF8.self) {
        case "RIFF":
            guard end - 8 <= UInt64(UInt32.max) else { throw fail("the file would pass 4 GiB") }
            try f.seek(toOffset: 4)
            try f.write(contentsOf: Data(le32(UInt32(end - 8))))
        case "RF64":
            try f.seek(toOffset: 12)
            guard let ds = try f.read(upToCount: 8), ds.count == 8, String(decoding: ds.prefix(4), as: UTF8.self) == "ds64" else {
                throw fail("RF64 without a ds64 chunk first")
            }
            try f.seek(toOffset: 20)
            let size = end - 8
            try f.write(contentsOf: Data(le32(UInt32(truncatingIfNeeded: size)) + le32(UInt32(truncatingIfNeeded: size >> 32))))
        default: throw fail("not a RIFF file")
        }
    }

    /// An `ffmetadata` file's text: one `[CHAPTER]` per chapter, milliseconds.
    static package func ffmetadata(_ l: ChapterList) -> String {
        func escaped(_ s: String) -> String {
            var out = ""
            for ch in s { if "=;#\\\n".contains(ch) { out.append("\\") }; out.append(ch) }
            return out
        }
        func ms(_ t: Double) -> Int { Int((t * 1000).rounded()) }
        var text = ";FFMETADATA1\n"
        for c in chaptersOnly(l).chapters {
            text += "[CHAPTER]\nTIMEBASE=1/1000\nSTART=\(ms(c.start))\nEND=\(ms(c.end ?? c.start))\ntitle=\(escaped(c.title))\n"
        }
        return text
    }

    private static func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
    /// A RIFF chunk: id, little-endian size, body, a pad byte after an odd body.
    static package func chunk(_ id: String, _ body: [UInt8]) -> [UInt8] {
        Array(id.utf8) + le32(UInt32(body.count)) + body + (body.count & 1 == 1 ? [0] : [])
    }
}

extension TagPlan {
    /// A plan with these tags only (chapters written as comments where the recording has no tags).
    package init(tags: [TagEntry]) {
        self.tags = tags
    }
}
