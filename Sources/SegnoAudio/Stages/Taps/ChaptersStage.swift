import Foundation
import SegnoCore
import SegnoDSP

/// `chapters: { path: "{dir}/{stem}.chapters.vtt", format: vtt }` writes the recording's chapters
/// (markers when it has none), placed on the stream where the tap stands, as a sidecar (issue 32):
/// WebVTT chapters (`vtt`), Podlove Simple Chapters (`psc`, XML) or Podcasting 2.0 JSON chapters
/// (`json`). The format follows the path's extension (`.vtt`, `.psc`/`.xml`, `.json`) unless given.
public struct ChaptersConfig: TapConfig {
    public enum Format: String, CaseIterable, Sendable {
        case vtt, psc, json
    }
    public let pathTemplate: PathTemplate
    public let format: Format
    public var name: String { "chapters" }
    public var version: Int { 1 }
    public var options: [(String, String)] { [("path", pathTemplate.text), ("format", format.rawValue)] }

    public init(path: PathTemplate, format: Format) {
        self.pathTemplate = path
        self.format = format
    }

    public func makeTap(paths: [String], context: RecordingContext) throws -> any Tap {
        ChaptersTap(path: paths[0], format: format, list: context.metadata.chapterList)
    }

    /// The format a path's extension names, if any.
    static package func format(ofPath path: String) -> Format? {
        switch (path as NSString).pathExtension.lowercased() {
        case "vtt": return .vtt
        case "psc", "xml": return .psc
        case "json": return .json
        default: return nil
        }
    }
}

final package class ChaptersTap: Tap, TimelineUsing {
    package let path: String
    package let format: ChaptersConfig.Format
    package let list: ChapterList
    private var timeline: () -> [TimeMap] = { [] }
    private var frames = 0, rate = 0

    package init(path: String, format: ChaptersConfig.Format, list: ChapterList) {
        self.path = path
        self.format = format
        self.list = list
    }

    package func useTimeline(_ maps: @escaping () -> [TimeMap]) { timeline = maps }
    package func start(_ format: AudioFormat) throws { rate = format.sampleRate }
    package func observe(_ block: AudioBlock) throws { frames += block.frames }

    package func finish() throws -> [ProducedFile] {
        let length = rate > 0 ? Double(frames) / Double(rate) : 0
        let placed = ChapterWriter.chaptersOnly(list).mapped(timeline(), length: length).chapters
        try OutputFile.write(Array(ChapterSidecar.text(placed, format: format).utf8), to: path)
        return [ProducedFile(stage: "chapters", path: path, values: ["chapters": String(placed.count)])]
    }

    package func abandon() {}
}

/// The sidecar forms of a chapter list (output seconds, each with its end).
package enum ChapterSidecar {
    static package func text(_ chapters: [Chapter], format: ChaptersConfig.Format) -> String {
        switch format {
        case .vtt: return webVTT(chapters)
        case .psc: return podlove(chapters)
        case .json: return podcasting20(chapters)
        }
    }

    /// WebVTT chapters: one cue per chapter, its title the cue's text.
    static package func webVTT(_ chapters: [Chapter]) -> String {
        "WEBVTT\n" + chapters.enumerated().map { i, c in
            "\n\(i + 1)\n\(ChapterTime.text(c.start)) --> \(ChapterTime.text(c.end ?? c.start))\n\(c.title.replacingOccurrences(of: "-->", with: "->").replacingOccurrences(of: "\n", with: " "))\n"
        }.joined()
    }

    /// Podlove Simple Chapters 1.2 (podlove.org/simple-chapters): `<psc:chapter start= title=/>`.
    static package func podlove(_ chapters: [Chapter]) -> String {
        func attr(_ s: String) -> String {
            s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
                .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\n", with: "&#10;")
        }
        return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<psc:chapters version=\"1.2\" xmlns:psc=\"http://podlove.org/simple-chapters\">\n"
            + chapters.map { "  <psc:chapter start=\"\(ChapterTime.text($0.start))\" title=\"\(attr($0.title))\"/>\n" }.joined()
            + "</psc:chapters>\n"
    }

    /// Podcasting 2.0 JSON chapters 1.2.0: `{"version":"1.2.0","chapters":[{"startTime","endTime","title"}]}`.
    static package func podcasting20(_ chapters: [Chapter]) -> String {
        JSONValue.object([
            ("version", .string("1.2.0")),
            ("chapters", .array(chapters.map { c in
                var f: [(String, JSONValue)] = [("startTime", JSONValue.rounded(c.start, places: 3))]
                if let e = c.end { f.append(("endTime", JSONValue.rounded(e, places: 3))) }
                f.append(("title", .string(c.title)))
                return .object(f)
            })),
        ]).serialized() + "\n"
    }
}

extension ChaptersConfig {
    /// The spec's options for this stage: every check, before any audio flows (SoX's getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = v.isScalar ? SpecOptions(values: ["path": v], owner: v) : try v.options(declaredBy: declaration)
        let template = try StageRegistry.parseTemplate(o["path"]!)
        guard let format = try o["format"]?.choice(Format.self) ?? Self.format(ofPath: template.text) else {
            throw o["path"]!.error("cannot tell the chapter format from \"\(template.text)\"; add format: (vtt, psc, json)")
        }
        return ChaptersConfig(path: template, format: format)
    }

    public static let declaration = StageDeclaration(
        key: "chapters", kind: .tap,
        summary: "Writes the recording's chapters (markers when it has none), placed on the stream here, as WebVTT, Podlove Simple Chapters or Podcasting 2.0 JSON.",
        options: [
            .init("path", .pathTemplate, default: nil, help: "Where the chapters go: \"{dir}/{stem}.chapters.vtt\"."),
            .init("format", .choice, default: "from the path's extension (.vtt, .psc or .xml, .json)", .oneOf(Format.self),
                  help: "vtt: WebVTT chapters; psc: Podlove Simple Chapters (XML); json: Podcasting 2.0 JSON chapters."),
        ],
        shorthand: "`chapters: \"{stem}.chapters.vtt\"` is `{ path: \"{stem}.chapters.vtt\" }`",
        example: "chapters: { path: \"{dir}/{stem}.chapters.json\" }", capabilities: [.writesSidecars, .writesChapters])
}
