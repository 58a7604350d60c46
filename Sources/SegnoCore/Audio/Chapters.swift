import Foundation

/// A chapter or a marker: where it starts, where it ends when the container says, and its title.
/// Seconds on the SOURCE timeline while a recording is carried (decision 0072); mapped to each
/// output's place (`mapped`) only when written.
public struct Chapter: Sendable, Equatable, Codable {
    public var start: Double
    public var end: Double?
    public var title: String

    public init(start: Double, end: Double? = nil, title: String) {
        self.start = start
        self.end = end
        self.title = title
    }
}

/// Bounds on what is read and carried, so a hostile file (a million `CHAP` frames, a `cue ` chunk
/// of 2^32 points) costs no more than a sane one. Quoted in docs/reference/limits.md.
public enum ChapterLimits {
    /// Most chapters, and most markers, carried per recording; the rest are dropped with a warning.
    /// 999: the most Vorbis comments' three-digit `CHAPTERnnn` numbers.
    public static let count = 999
    /// Longest title carried, in bytes of UTF-8; a longer one is cut at a character boundary.
    public static let titleBytes = 1024
    /// Most Vorbis chapter comments carried (`CHAPTERnnn`, `…NAME`, `…URL` for each of `count`
    /// chapters), apart from `TagLimits.values`, so a file with the most chapters keeps them all.
    public static let vorbisKeys = 3 * count

    /// True for `chapter001`, `chapter001name`, `chapter001url` (any case): the Vorbis-comment
    /// chapter keys, which travel as chapters, not tags.
    public static func isVorbisChapterKey(_ key: String) -> Bool {
        let k = key.lowercased()
        guard k.hasPrefix("chapter") else { return false }
        var rest = k.dropFirst(7)
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty else { return false }
        rest = rest.dropFirst(digits.count)
        return rest.isEmpty || rest == "name" || rest == "url"
    }
}

/// A recording's chapters and markers, source time, in order of start.
public struct ChapterList: Sendable, Equatable {
    public var chapters: [Chapter] = []
    public var markers: [Chapter] = []
    /// True when the chapters are a capture's stream titles (`StreamChapters`), not the container's:
    /// what `chapters: { from: [stream] }` takes, and `from: [markers]` does not.
    public var fromStream = false
    public init(chapters: [Chapter] = [], markers: [Chapter] = []) {
        self.chapters = chapters
        self.markers = markers
    }
    public var isEmpty: Bool { chapters.isEmpty && markers.isEmpty }

    /// Both lists at their place on the stream after `maps` (applied first to last): a time inside
    /// a removed stretch moves to the cut; a chapter left with no length (it lay inside a removed
    /// stretch) is dropped, a marker never is. `length` is the output's length in seconds: a time
    /// past it is clamped to it and a chapter starting at or after it is dropped; a chapter without
    /// an end ends where the next begins, the last at `length`.
    public func mapped(_ maps: [TimeMap], length: Double) -> ChapterList {
        func place(_ t: Double) -> Double { min(max(0, maps.reduce(t) { $1.toOutput($0) }), length) }
        var out = ChapterList()
        let starts = chapters.map { place($0.start) }
        for (i, c) in chapters.enumerated() {
            let start = starts[i]
            let nextStart = starts[(i + 1)...].first { $0 > start } ?? length
            let end = c.end.map(place) ?? nextStart
            guard start < length, end > start else { continue }
            out.chapters.append(Chapter(start: start, end: end, title: c.title))
        }
        out.markers = markers.map { Chapter(start: place($0.start), end: $0.end.map(place), title: $0.title) }
            .filter { $0.start < length || length == 0 }
        return out
    }
}

extension RecordingMetadata {
    /// Adds a chapter (or, with `marker`, a marker) in source seconds, within `ChapterLimits`:
    /// a time that is not finite or is negative, or an end before its start, is left out with a
    /// warning; past `ChapterLimits.count` the rest are dropped with one warning.
    mutating package func addChapter(_ c: Chapter, marker: Bool = false, from container: String) {
        let what = marker ? "marker" : "chapter"
        guard c.start.isFinite, c.start >= 0, c.start < 1e9 else {
            warnings.append("\(container) \(what) \"\(c.title)\" starts at \(c.start) s; left out")
            return
        }
        var c = c
        if let e = c.end, !(e.isFinite && e > c.start && e < 1e9) { c.end = nil }
        if c.title.utf8.count > ChapterLimits.titleBytes {
            var t = c.title
            while t.utf8.count > ChapterLimits.titleBytes { t.removeLast() }
            c.title = t
        }
        let count = marker ? chapterList.markers.count : chapterList.chapters.count
        guard count < ChapterLimits.count else {
            let line = "more than \(ChapterLimits.count) \(what)s in the \(container); the rest are dropped"
            if !warnings.contains(line) { warnings.append(line) }
            return
        }
        if marker { chapterList.markers.append(c) } else { chapterList.chapters.append(c) }
    }

    /// Sorts both lists by start (stable), once every reader has added its own.
    mutating package func sortChapters() {
        func sorted(_ l: [Chapter]) -> [Chapter] {
            l.enumerated().sorted { ($0.element.start, $0.offset) < ($1.element.start, $1.offset) }.map(\.element)
        }
        chapterList.chapters = sorted(chapterList.chapters)
        chapterList.markers = sorted(chapterList.markers)
    }
}

/// Chapter times as text: Vorbis comments' `HH:MM:SS.mmm`, WebVTT's too.
public enum ChapterTime {
    /// "01:02:03.456" for 3723.456 s (milliseconds, rounded).
    public static func text(_ seconds: Double) -> String {
        let ms = Int((max(0, seconds) * 1000).rounded())
        return String(format: "%02d:%02d:%02d.%03d", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
    }

    /// Seconds of "HH:MM:SS.mmm", "MM:SS.mmm" or "SS.mmm" (the fraction optional, any length);
    /// nil when malformed.
    public static func parse(_ text: String) -> Double? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var total = 0.0
        for (i, p) in parts.enumerated() {
            let last = i == parts.count - 1
            guard !p.isEmpty, p.count <= 16, p.allSatisfy({ $0.isASCII && ($0.isNumber || (last && $0 == ".")) }),
                  let v = Double(p), v.isFinite else { return nil }
            total = total * 60 + v
        }
        return total
    }
}
