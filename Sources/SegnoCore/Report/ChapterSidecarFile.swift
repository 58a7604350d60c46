import Foundation

/// A `chapters` tap's sidecar read back for the report (issue 32 item 4): WebVTT chapters,
/// Podlove Simple Chapters, Podcasting 2.0 JSON or peaks.js segments, as written by `ChapterSidecar`. Times are
/// seconds of the stream where the tap stood.
public enum ChapterSidecarFile {
    /// The largest sidecar read (999 chapters of 1 KiB titles fit).
    public static let largest = 4 << 20

    /// The chapters (start in seconds, title) of the file at `path`, in order of start; nil when
    /// unreadable, oversized or not one of the four forms.
    public static func read(_ path: String) -> [(start: Double, title: String)]? {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int), size <= largest,
              let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else { return nil }
        return parse(text)
    }

    /// The chapters of a sidecar's text, whichever of the four forms it is.
    public static func parse(_ text: String) -> [(start: Double, title: String)]? {
        let chapters: [(start: Double, title: String)]?
        if text.hasPrefix("WEBVTT") {
            chapters = webVTT(text)
        } else if text.hasPrefix("<?xml") || text.contains("<psc:chapters") {
            chapters = podlove(text)
        } else {
            chapters = podcasting20(text) ?? peaksSegments(text)
        }
        return chapters?.sorted { $0.start < $1.start }
    }

    /// WebVTT: each cue's start and its first text line.
    static func webVTT(_ text: String) -> [(start: Double, title: String)] {
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init)
        var out: [(start: Double, title: String)] = []
        for (i, line) in lines.enumerated() where line.contains("-->") && i + 1 < lines.count {
            let startText = line.components(separatedBy: "-->")[0]
            if let start = ChapterTime.parse(startText) { out.append((start, lines[i + 1])) }
        }
        return out
    }

    /// Podlove Simple Chapters: `<psc:chapter start="…" title="…"/>`, attributes unescaped.
    static func podlove(_ text: String) -> [(start: Double, title: String)] {
        func attribute(_ name: String, in element: Substring) -> String? {
            guard let r = element.range(of: " \(name)=\"") else { return nil }
            let value = element[r.upperBound...].prefix { $0 != "\"" }
            return String(value).replacingOccurrences(of: "&#10;", with: "\n").replacingOccurrences(of: "&quot;", with: "\"")
                .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&amp;", with: "&")
        }
        var out: [(start: Double, title: String)] = []
        var rest = text[...]
        while let r = rest.range(of: "<psc:chapter ") {
            let element = rest[r.lowerBound...].prefix { $0 != ">" }
            if let s = attribute("start", in: element).flatMap(ChapterTime.parse) { out.append((s, attribute("title", in: element) ?? "")) }
            rest = rest[r.upperBound...]
        }
        return out
    }

    /// Podcasting 2.0 JSON: `{"chapters": [{"startTime", "title"}]}`.
    static func podcasting20(_ text: String) -> [(start: Double, title: String)]? {
        struct Item: Decodable { var startTime: Double; var title: String? }
        struct File: Decodable { var chapters: [Item] }
        guard let file = try? JSONDecoder().decode(File.self, from: Data(text.utf8)) else { return nil }
        return file.chapters.map { ($0.startTime, $0.title ?? "") }
    }

    /// peaks.js (`format: peaks`): `{"segments": [{"startTime", "endTime", "labelText"}], "points": …}`;
    /// the segments are the chapters (the points are markers).
    static func peaksSegments(_ text: String) -> [(start: Double, title: String)]? {
        struct Item: Decodable { var startTime: Double; var labelText: String? }
        struct File: Decodable { var segments: [Item] }
        guard let file = try? JSONDecoder().decode(File.self, from: Data(text.utf8)) else { return nil }
        return file.segments.map { ($0.startTime, $0.labelText ?? "") }
    }
}
