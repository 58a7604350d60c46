import Foundation
import SegnoCore
import SegnoDSP

/// `chapters: { path: "{dir}/{stem}.chapters.vtt", format: vtt, from: [markers, transcript], min: 60s, merge: false }`
/// writes the recording's chapters (markers when it has none), placed on the stream where the tap
/// stands, as a sidecar (issue 32): WebVTT chapters (`vtt`), Podlove Simple Chapters (`psc`,
/// XML), Podcasting 2.0 JSON chapters (`json`) or peaks.js segments and points (`peaks`). The
/// format follows the path's extension (`.vtt`, `.psc`/`.xml`, `.json`) unless given. With `from`
/// it makes them (decision 0082): from the first source that yields any (all of them with
/// `merge`), and the run's encodes embed them.
public struct ChaptersConfig: TapConfig {
    public enum Format: String, CaseIterable, Sendable {
        case vtt, psc, json, peaks
    }
    /// Where made chapters come from.
    public enum Source: String, CaseIterable, Sendable {
        case markers, stream, speakers, pauses, transcript
    }
    public let pathTemplate: PathTemplate
    public let format: Format
    /// The sources tried in order; empty: the recording's own chapters, as read.
    public let from: [Source]
    /// The shortest chapter made at pauses, speaker changes or topic boundaries, in seconds.
    public let min: Double
    /// True: every source's chapters together.
    public let merge: Bool
    public var name: String { "chapters" }
    public var version: Int { 1 }
    public var options: [(String, String)] {
        var o = [("path", pathTemplate.text), ("format", format.rawValue)]
        if !from.isEmpty {
            o += [("from", from.map(\.rawValue).joined(separator: ",")), ("min", canonicalNumber(min)), ("merge", String(merge))]
        }
        return o
    }

    public init(path: PathTemplate, format: Format, from: [Source] = [], min: Double = ChaptersConfig.standardMin, merge: Bool = false) {
        self.pathTemplate = path
        self.format = format
        self.from = from
        self.min = min
        self.merge = merge
    }

    public func makeTap(paths: [String], context: RecordingContext) throws -> any Tap {
        ChaptersTap(path: paths[0], format: format, list: context.metadata.chapterList, making: making)
    }

    /// What `from`, `min` and `merge` ask for; nil without `from`.
    var making: Making? { from.isEmpty ? nil : Making(from: from, min: min, merge: merge) }
    /// Made chapters go into the run's encodes: when this tap runs again, so do they (decision 0077's rule).
    public var findsKinds: Set<Findings.Kind> { making == nil ? [] : [.chapters] }
    /// A transcript, turns or pauses it makes chapters from: when their tap runs again, so does this one.
    public var usesKinds: Set<Findings.Kind> { making?.uses ?? [] }

    /// The format a path's extension names, if any.
    static package func format(ofPath path: String) -> Format? {
        switch (path as NSString).pathExtension.lowercased() {
        case "vtt": return .vtt
        case "psc", "xml": return .psc
        case "json": return .json
        default: return nil
        }
    }

    /// `from`, `min` and `merge` together.
    package struct Making: Sendable {
        package var from: [Source]
        package var min: Double
        package var merge: Bool

        /// The findings the sources wait for.
        package var uses: Set<Findings.Kind> {
            Set(from.flatMap { s -> [Findings.Kind] in
                switch s {
                case .markers, .stream: return []
                case .speakers: return [.turns]
                case .pauses: return [.pauses, .segments]
                case .transcript: return [.segments]
                }
            })
        }

        /// The chapters made, source seconds, each with its end: the first source's that yields
        /// any, or all of them merged. `own` is the recording's list, `duration` the source's
        /// length in seconds.
        package func chapters(own: ChapterList, found: Findings, duration: Double) -> [Chapter] {
            var lists: [[Chapter]] = []
            for s in from {
                let made = chapters(from: s, own: own, found: found, duration: duration)
                if made.isEmpty { continue }
                if !merge { return made }
                lists.append(made)
            }
            return lists.isEmpty ? [] : ChapterMaking.merged(lists, duration: duration)
        }

        func chapters(from source: Source, own: ChapterList, found: Findings, duration: Double) -> [Chapter] {
            switch source {
            case .markers: return own.fromStream ? [] : ChapterWriter.chaptersOnly(own).chapters
            case .stream: return own.fromStream ? own.chapters : []
            case .speakers: return ChapterMaking.atSpeakerChanges(found.turns ?? [], duration: duration, min: min)
            case .pauses: return ChapterMaking.atPauses(found.pauses ?? [], duration: duration, min: min, said: found.segments ?? [],
                                                        stopWords: StopWords.of(found.language))
            case .transcript: return ChapterMaking.atTopics(found.segments ?? [], duration: duration, min: min, stopWords: StopWords.of(found.language))
            }
        }
    }
}

final package class ChaptersTap: Tap, TimelineUsing, FindingTap, FindingsUsingTap {
    package let path: String
    package let format: ChaptersConfig.Format
    package let list: ChapterList
    package let making: ChaptersConfig.Making?
    private var timeline: () -> [TimeMap] = { [] }
    private var frames = 0, rate = 0
    private var found = Findings()
    /// The chapters made (`making`), source seconds; set at `finish`.
    private var made: [Chapter] = []

    package init(path: String, format: ChaptersConfig.Format, list: ChapterList, making: ChaptersConfig.Making? = nil) {
        self.path = path
        self.format = format
        self.list = list
        self.making = making
    }

    package var finds: Set<Findings.Kind> { making == nil ? [] : [.chapters] }
    package var uses: Set<Findings.Kind> { making?.uses ?? [] }
    package func use(_ findings: Findings) { found = findings }
    /// The chapters made, source seconds; nil when none were. Read after `finish`.
    package var findings: Findings { Findings(chapters: made.isEmpty ? nil : made) }

    package func useTimeline(_ maps: @escaping () -> [TimeMap]) { timeline = maps }
    package func start(_ format: AudioFormat) throws { rate = format.sampleRate }
    package func observe(_ block: AudioBlock) throws { frames += block.frames }

    package func finish() throws -> [ProducedFile] {
        let length = rate > 0 ? Double(frames) / Double(rate) : 0
        let maps = timeline()
        var source = list
        if let making {
            made = making.chapters(own: list, found: found, duration: maps.toSource(length))
            source = ChapterList(chapters: made, markers: format == .peaks ? list.markers : [])
        }
        let placed = (format == .peaks ? source : ChapterWriter.chaptersOnly(source)).mapped(maps, length: length)
        try OutputFile.write(Array(ChapterSidecar.text(placed, format: format).utf8), to: path)
        let shown = format == .peaks ? ChapterWriter.chaptersOnly(placed).chapters : placed.chapters
        return [ProducedFile(stage: "chapters", path: path, values: ["chapters": ChapterSidecar.templateValue(shown)])]
    }

    package func abandon() {}
}

/// The sidecar forms of a chapter list (output seconds, each with its end).
package enum ChapterSidecar {
    static package func text(_ list: ChapterList, format: ChaptersConfig.Format) -> String {
        switch format {
        case .vtt: return webVTT(list.chapters)
        case .psc: return podlove(list.chapters)
        case .json: return podcasting20(list.chapters)
        case .peaks: return peaks(list)
        }
    }

    /// peaks.js's segments and points (`peaks.segments.add`, `peaks.points.add`):
    /// `{"segments":[{"startTime","endTime","labelText"}],"points":[{"time","labelText"}]}`, seconds.
    static package func peaks(_ list: ChapterList) -> String {
        JSONValue.object([
            ("segments", .array(list.chapters.map { c in
                .object([("startTime", JSONValue.rounded(c.start, places: 3)), ("endTime", JSONValue.rounded(c.end ?? c.start, places: 3)),
                         ("labelText", .string(c.title))])
            })),
            ("points", .array(list.markers.map { m in
                .object([("time", JSONValue.rounded(m.start, places: 3)), ("labelText", .string(m.title))])
            })),
        ]).serialized() + "\n"
    }

    /// Most bytes of the `{chapters}` template value: S3's limit on all of an object's metadata.
    static package let templateValueLimit = 2048

    /// The `{chapters}` template value (upload metadata): `[{"start":0,"end":52.1,"title":"Intro"}]`,
    /// seconds, ASCII only (other characters as `\uXXXX`, as HTTP header values need), whole
    /// chapters in order while the text stays within `templateValueLimit` bytes.
    static package func templateValue(_ chapters: [Chapter]) -> String {
        var items: [String] = [], size = 2
        for c in chapters {
            var f: [(String, JSONValue)] = [("start", JSONValue.rounded(c.start, places: 3))]
            if let e = c.end { f.append(("end", JSONValue.rounded(e, places: 3))) }
            f.append(("title", .string(c.title)))
            let item = asciiOnly(JSONValue.object(f).serialized())
            guard size + item.utf8.count + (items.isEmpty ? 0 : 1) <= templateValueLimit else { break }
            size += item.utf8.count + (items.isEmpty ? 0 : 1)
            items.append(item)
        }
        return "[" + items.joined(separator: ",") + "]"
    }

    /// JSON text with every non-ASCII character as `\uXXXX` (UTF-16, surrogate pairs above U+FFFF).
    static func asciiOnly(_ json: String) -> String {
        var out = ""
        for u in json.utf16 {
            if u < 0x80 { out.unicodeScalars.append(Unicode.Scalar(u)!) } else { out += String(format: "\\u%04x", u) }
        }
        return out
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
    /// `min` when not given, in seconds.
    public static let standardMin = 60.0
    /// The range of `min`, in seconds.
    public static let minRange = 1.0...86_400.0

    /// The spec's options for this stage: every check, before any audio flows (SoX's getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = v.isScalar ? SpecOptions(values: ["path": v], owner: v) : try v.options(declaredBy: declaration)
        let template = try StageRegistry.parseTemplate(o["path"]!)
        guard let format = try o["format"]?.choice(Format.self) ?? Self.format(ofPath: template.text) else {
            throw o["path"]!.error("cannot tell the chapter format from \"\(template.text)\"; add format: (vtt, psc, json, peaks)")
        }
        var from: [Source] = []
        if let f = o["from"] {
            for item in try f.list(allowSingle: true) {
                let s = try item.choice(Source.self)
                guard !from.contains(s) else { throw item.error("from names \(s.rawValue) twice") }
                from.append(s)
            }
            guard !from.isEmpty else { throw f.error("from is empty; name at least one of \(Source.allCases.map(\.rawValue).joined(separator: ", "))") }
        }
        var min = standardMin
        if let m = o["min"] {
            guard !from.isEmpty else { throw m.error("min applies to chapters made with from; add from: [...]") }
            min = try m.duration()
            guard minRange.contains(min) else { throw m.error("min must be 1s to 24h, not \(canonicalNumber(min))s") }
        }
        var merge = false
        if let m = o["merge"] {
            merge = try m.bool()
            guard !from.isEmpty else { throw m.error("merge applies to chapters made with from; add from: [...]") }
            guard !merge || from.count > 1 else { throw m.error("merge: true needs two or more sources in from") }
        }
        return ChaptersConfig(path: template, format: format, from: from, min: min, merge: merge)
    }

    public static let declaration = StageDeclaration(
        key: "chapters", kind: .tap,
        summary: "Writes the recording's chapters (markers when it has none), or chapters it makes, placed on the stream here, as WebVTT, Podlove Simple Chapters, Podcasting 2.0 JSON or peaks.js segments and points.",
        options: [
            .init("path", .pathTemplate, default: nil, help: "Where the chapters go: \"{dir}/{stem}.chapters.vtt\"."),
            .init("format", .choice, default: "from the path's extension (.vtt, .psc or .xml, .json)", .oneOf(Format.self),
                  help: "vtt: WebVTT chapters; psc: Podlove Simple Chapters (XML); json: Podcasting 2.0 JSON chapters; peaks: peaks.js segments (chapters) and points (markers)."),
            .init("from", .list, default: "the recording's own chapters", .oneOf(Source.self),
                  help: "Make chapters, from the first source that yields any: markers (the recording's own), stream (a capture's titles), speakers (speaker changes; a speakers tap), pauses (the longest pauses; a pauses stage), transcript (topic boundaries; a transcribe tap). The run's encodes embed them."),
            .init("min", .duration, unit: "s", default: canonicalNumber(standardMin), .within(minRange),
                  help: "The shortest chapter made at speaker changes, pauses or topic boundaries."),
            .init("merge", .boolean, default: "false", help: "true: every source's chapters together, in order of start (one within 1 s of an earlier source's is left out)."),
        ],
        shorthand: "`chapters: \"{stem}.chapters.vtt\"` is `{ path: \"{stem}.chapters.vtt\" }`",
        example: "chapters: { path: \"{dir}/{stem}.chapters.json\", from: [markers, transcript], min: 60s }", capabilities: [.writesSidecars, .writesChapters])
}
