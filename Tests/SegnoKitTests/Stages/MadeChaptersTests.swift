import Foundation
@testable import SegnoAudio
import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import SegnoKit
import SegnoTestSupport
import Testing

/// Issue 32 items 3 and 4, decision 0082: `chapters: { from, min, merge }` makes chapters from
/// what other taps found (test finders here stand for the speakers and transcribe taps), writes
/// them, hands them to the encodes (read back by ffprobe), and offers them to uploads and peaks.js.
@Suite struct MadeChaptersTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }
    static let rate = 8000

    /// A tap that finds what it is given, at its finish.
    final class Finder: FindingTap {
        let found: Findings
        init(_ found: Findings) { self.found = found }
        var finds: Set<Findings.Kind> { found.kinds }
        var findings: Findings { found }
        func start(_ format: AudioFormat) throws {}
        func observe(_ block: AudioBlock) throws {}
        func finish() throws -> [ProducedFile] { [] }
        func abandon() {}
    }

    /// Turns of ChapterMakingTests: changes at 30, 35, 90, 170 s of a 190 s recording.
    static let turns = [Findings.Turn(start: 0, end: 30, speaker: "A", name: "Ada"), .init(start: 30, end: 35, speaker: "B"),
                        .init(start: 35, end: 90, speaker: "A", name: "Ada"), .init(start: 90, end: 150, speaker: "B"),
                        .init(start: 150, end: 170, speaker: "B"), .init(start: 170, end: 185, speaker: "C")]

    func context(_ list: ChapterList = ChapterList()) -> RecordingContext {
        var c = RecordingContext(sourcePath: "/in/m.wav", relativePath: "m.wav", modified: Date(), outputRoot: dir.path)
        c.metadata.chapterList = list
        return c
    }

    /// Runs `taps` over 190 s of quiet tone; returns the produced files.
    func run(_ taps: [any Tap], seconds: Int = 190) throws -> [ProducedFile] {
        let x = Signal.sine(frequency: 440, rate: Self.rate, frames: seconds * Self.rate, amplitude: 0.1)
        return try StageChain(elements: taps.map { .tap($0) }, blockFrames: 4096).run(decoder: MemoryDecoder(x, channels: 1, rate: Self.rate)).flatMap { $0 }
    }

    func chaptersTap(_ name: String, format: ChaptersConfig.Format = .json, from: [ChaptersConfig.Source], min: Double = 20, merge: Bool = false,
                     list: ChapterList = ChapterList()) throws -> any Tap {
        try ChaptersConfig(path: PathTemplate("{stem}.json"), format: format, from: from, min: min, merge: merge).makeTap(paths: [dir[name]], context: context(list))
    }

    /// The Podcasting 2.0 sidecar's (startTime, title).
    func sidecar(_ name: String) throws -> [(Double, String)] {
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir[name]))) as? [String: Any])
        return (json["chapters"] as? [[String: Any]] ?? []).map { (($0["startTime"] as? NSNumber)?.doubleValue ?? -1, $0["title"] as? String ?? "") }
    }

    @Test func speakerChaptersFromTheSpeakersFindingsReachTheSidecarAndTheEncode() throws {
        // The chapters tap and the encode stand before the finder: they still finish after it.
        let encode = EncodeTap(path: dir["m.flac"], format: .flac, bits: nil, quality: nil, bitrate: nil, tags: TagPlan(tags: []), searchPath: nil)
        let files = try run([encode, try chaptersTap("m.json", from: [.speakers]), Finder(Findings(turns: Self.turns))])
        // Hand-computed in ChapterMakingTests (min 20): 0 A (named Ada), 90 B, 170 C.
        let want: [(Double, String)] = [(0, "Ada"), (90, "B"), (170, "C")]
        let got = try sidecar("m.json")
        #expect(got.map(\.0) == want.map(\.0) && got.map(\.1) == want.map(\.1), "\(got)")
        let probe = try CLI.tool("ffprobe", ["-v", "error", "-show_chapters", "-of", "json", dir["m.flac"]])
        let chapters = (try JSONSerialization.jsonObject(with: Data(probe.stdout.utf8)) as? [String: Any])?["chapters"] as? [[String: Any]] ?? []
        let read = chapters.map { (Double($0["start_time"] as? String ?? "") ?? -1, ($0["tags"] as? [String: Any])?["title"] as? String ?? "") }
        #expect(read.map(\.1) == want.map(\.1) && zip(read, want).allSatisfy { abs($0.0 - $1.0) <= 0.001 }, "\(read)")
        // {chapters}: the placed list as JSON.
        let value = try #require(files.first { $0.stage == "chapters" }?.values["chapters"])
        #expect(value == #"[{"start":0.0,"end":90.0,"title":"Ada"},{"start":90.0,"end":170.0,"title":"B"},{"start":170.0,"end":190.0,"title":"C"}]"#, "\(value)")
    }

    @Test func minDecidesWhichChangesBecomeChapters() throws {
        _ = try run([try chaptersTap("m20.json", from: [.speakers], min: 20), try chaptersTap("m90.json", from: [.speakers], min: 90),
                     Finder(Findings(turns: Self.turns))])
        #expect(try sidecar("m20.json").map(\.0) == [0, 90, 170])
        #expect(try sidecar("m90.json").map(\.0) == [0, 90])
    }

    @Test func theFirstSourceThatYieldsWinsUnlessMerged() throws {
        let own = ChapterList(chapters: [Chapter(start: 0, title: "Intro"), Chapter(start: 100, title: "Talk")])
        let finder = Finder(Findings(turns: Self.turns))
        _ = try run([try chaptersTap("own.json", from: [.markers, .speakers], list: own),
                     try chaptersTap("none.json", from: [.markers, .speakers]),
                     try chaptersTap("merged.json", from: [.markers, .speakers], merge: true, list: own),
                     try chaptersTap("transcript.json", from: [.transcript, .speakers]), finder])
        #expect(try sidecar("own.json").map(\.1) == ["Intro", "Talk"])
        // No chapters of its own: the speakers' turns.
        #expect(try sidecar("none.json").map(\.1) == ["Ada", "B", "C"])
        // Merged: Intro 0 (Ada at 0 is left out), B 90, Talk 100, C 170.
        let merged = try sidecar("merged.json")
        #expect(merged.map(\.0) == [0, 90, 100, 170] && merged.map(\.1) == ["Intro", "B", "Talk", "C"], "\(merged)")
        // No transcript was found: the next source.
        #expect(try sidecar("transcript.json").map(\.1) == ["Ada", "B", "C"])
    }

    @Test func streamTitlesAreTheStreamSourceNotMarkers() throws {
        var titles = ChapterList(chapters: [Chapter(start: 0, title: "News"), Chapter(start: 60, title: "Weather")])
        titles.fromStream = true
        _ = try run([try chaptersTap("markers.json", from: [.markers], list: titles), try chaptersTap("stream.json", from: [.stream], list: titles)])
        #expect(try sidecar("markers.json").isEmpty)
        #expect(try sidecar("stream.json").map(\.1) == ["News", "Weather"])
    }

    @Test func transcriptChaptersFromTheSegmentsFindings() throws {
        let said = ChapterMakingFixture.threeTopics()
        _ = try run([try chaptersTap("t.json", from: [.transcript], min: 30), Finder(Findings(segments: said))], seconds: 180)
        #expect(try sidecar("t.json").map(\.0) == [0, 60, 120])
    }

    @Test func peaksFormatHasSegmentsAndPoints() throws {
        let own = ChapterList(chapters: [Chapter(start: 0, title: "Intro"), Chapter(start: 100, end: 150, title: "Talk")],
                              markers: [Chapter(start: 42.5, title: "clap")])
        let tap = try ChaptersConfig(path: PathTemplate("{stem}.peaks.json"), format: .peaks).makeTap(paths: [dir["p.json"]], context: context(own))
        _ = try run([tap])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir["p.json"]))) as? [String: Any])
        let segments = json["segments"] as? [[String: Any]] ?? [], points = json["points"] as? [[String: Any]] ?? []
        #expect(segments.map { ($0["startTime"] as? NSNumber)?.doubleValue ?? -1 } == [0, 100])
        #expect(segments.map { ($0["endTime"] as? NSNumber)?.doubleValue ?? -1 } == [100, 150])
        #expect(segments.map { $0["labelText"] as? String ?? "" } == ["Intro", "Talk"])
        #expect(points.count == 1 && (points[0]["time"] as? NSNumber)?.doubleValue == 42.5 && points[0]["labelText"] as? String == "clap", "\(points)")
    }

    @Test func theTemplateValueIsASCIIAndFitsS3() throws {
        let v = ChapterSidecar.templateValue([Chapter(start: 0, end: 1.5, title: "Zoë 비")])
        #expect(v == #"[{"start":0.0,"end":1.5,"title":"Zo\u00eb \ube44"}]"#, "\(v)")
        let decoded = try JSONSerialization.jsonObject(with: Data(v.utf8)) as? [[String: Any]]
        #expect(decoded?.first?["title"] as? String == "Zoë 비")
        let many = (0..<200).map { Chapter(start: Double($0), end: Double($0 + 1), title: "chapter \($0)") }
        let capped = ChapterSidecar.templateValue(many)
        let items = try JSONSerialization.jsonObject(with: Data(capped.utf8)) as? [[String: Any]] ?? []
        #expect(capped.utf8.count <= 2048 && items.count > 10 && items.count < 200, "\(capped.utf8.count) bytes, \(items.count)")
        // One chapter more would not fit.
        #expect(ChapterSidecar.templateValue(Array(many.prefix(items.count + 1))).utf8.count == capped.utf8.count)
    }

    static func spec(_ stage: String) -> String {
        "version: 1\nname: s\ninput: { root: /in }\noutput: { root: /out }\nstages:\n  - \(stage)\n"
    }

    /// The spec error for a `chapters` stage's options, as the user reads it.
    func error(_ options: String) -> String {
        do {
            _ = try SpecLoader.parseForTests(Self.spec("chapters: { path: \"{stem}.json\", \(options) }"))
            return "no error"
        } catch { return error.description }
    }

    @Test func badOptionsAreRefusedNamingTheOption() throws {
        #expect(error("from: [markers, slides]").contains("from") && error("from: [markers, slides]").contains("\"slides\" is not one of markers, stream, speakers, pauses, transcript"))
        #expect(error("from: [pauses, pauses]").contains("from names pauses twice"))
        #expect(error("from: []").contains("from is empty"))
        #expect(error("from: [pauses], min: 0.5s").contains("min must be 1s to 24h"))
        #expect(error("from: [pauses], min: 25h").contains("min must be 1s to 24h"))
        #expect(error("min: 30s").contains("min applies to chapters made with from"))
        #expect(error("merge: true").contains("merge applies to chapters made with from"))
        #expect(error("from: [pauses], merge: true").contains("merge: true needs two or more sources"))
        #expect(error("from: [pauses], merge: maybe").contains("merge"))
        #expect(error("format: mp3").contains("\"mp3\" is not one of vtt, psc, json, peaks"))
        let spec = try SpecLoader.parseForTests(Self.spec("chapters: { path: \"{stem}.json\", from: transcript, min: 90s, merge: false }"))
        #expect(spec.stages.last?.config.canonical == "chapters@v1 path={stem}.json format=json from=transcript min=90 merge=false", "\(spec.stages.last?.config.canonical ?? "")")
        let plain = try SpecLoader.parseForTests(Self.spec("chapters: \"{stem}.vtt\""))
        #expect(plain.stages.last?.config.canonical == "chapters@v1 path={stem}.vtt format=vtt")
    }
}

/// Three topics of 60 s from word lists that do not overlap (as in ChapterMakingTests).
enum ChapterMakingFixture {
    static func threeTopics() -> [Findings.Segment] {
        let topics = [["harbour", "boat", "sail", "anchor", "tide", "mast", "crew", "deck"],
                      ["oven", "flour", "bread", "butter", "dough", "yeast", "loaf", "crust"],
                      ["planet", "orbit", "comet", "telescope", "star", "moon", "galaxy", "rocket"]]
        var out: [Findings.Segment] = []
        for (t, words) in topics.enumerated() {
            for s in 0..<10 {
                let text = (0..<16).map { i in i % 2 == 0 ? ["the", "and", "we", "of"][(s + i) % 4] : words[(s * 3 + i) % words.count] }
                out.append(Findings.Segment(start: Double(t * 60 + s * 6), end: Double(t * 60 + s * 6 + 6), text: text.joined(separator: " ")))
            }
        }
        return out
    }
}
