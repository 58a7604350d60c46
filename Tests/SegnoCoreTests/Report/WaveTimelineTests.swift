import Foundation
@testable import SegnoCore
import SegnoCoreTestSupport
import Testing

/// A transform of the test's own that moves time and whose map a tap writes (as `pauses` and its
/// cut list): the report places turns through that file.
private struct CutTestConfig: TimeMapRecording {
    var name: String { "cut" }
    var version: Int { 1 }
    var options: [(String, String)] { [] }
    var movesTime: Bool { true }
    var timeMapTap: String { "collect:{stem}.cuts.json" }
    func makeTransform() throws -> any Transform { ScaleConfig.Scale(factor: 1) }
}

/// A transform that moves time with no recorded map (as a tempo).
private struct TempoTestConfig: TransformConfig {
    var name: String { "tempo" }
    var version: Int { 1 }
    var options: [(String, String)] { [] }
    var movesTime: Bool { true }
    func makeTransform() throws -> any Transform { ScaleConfig.Scale(factor: 1) }
}

/// A tap of the test's own whose file is a speakers tap's turn file (`findsSpeakers`).
private struct WhoTestConfig: TapConfig {
    let pathTemplate: PathTemplate
    var name: String { "who" }
    var version: Int { 1 }
    var options: [(String, String)] { [] }
    func makeTap(paths: [String], context: RecordingContext) throws -> any Tap { CollectTap(name: name) }
}

/// Speaker turns (source seconds) placed on a waveform drawn after a stage that cut pauses
/// (decision 0084), against a cut list computed by hand.
@Suite struct WaveTimelineTests {
    /// Source 0–9 s; kept 0–2 s (→ 0–2) and 5–9 s (→ 2–6): the pause 2–5 s is cut.
    static let cutList = #"{"version":1,"sample_rate":16000,"source_duration":9,"output_duration":6,"cuts":[{"source_start":2,"source_end":5,"output_at":2}],"kept":[{"source_start":0,"source_end":2,"output_start":0},{"source_start":5,"source_end":9,"output_start":2}]}"#

    static func spec(_ stages: [any StageConfig]) throws -> JobSpec {
        let fixture = SpecFixture(registry: .coreTests, stage: "collect: { path: \"{stem}.flac\" }")
        var spec = try fixture.load(fixture.minimal)
        spec.stages = stages.map { JobSpec.Placed(config: $0, keyPath: "stages", line: 0) }
        return spec
    }

    static func tap(_ path: String) throws -> CollectConfig { CollectConfig(path: try PathTemplate(path)) }

    @Test func turnsAfterACutAreMovedByTheCutList() throws {
        let dir = try TempDir()
        try Data(Self.cutList.utf8).write(to: URL(fileURLWithPath: dir["m.cuts.json"]))
        let spec = try Self.spec([try Self.tap("{stem}.cuts.json"), CutTestConfig(), try Self.tap("{stem}.wave.json")])
        let place = try #require(ReportData.waveTimeline(stage: "collect:{stem}.wave.json", spec: spec,
                                                         files: ["collect:{stem}.cuts.json": [dir["m.cuts.json"]]], duration: 9))
        #expect(place.duration == 6)
        // A turn 1–3 s runs into the cut: it ends where the cut is (2 s); 6–8 s is 3–5 s; one
        // wholly inside the cut (2.5–4.5 s) is nothing.
        #expect(place.maps.toOutput(1) == 1 && place.maps.toOutput(3) == 2)
        #expect(place.maps.toOutput(6) == 3 && place.maps.toOutput(8) == 5)
        #expect(place.maps.toOutput(2.5) == place.maps.toOutput(4.5))
    }

    @Test func aWaveformBeforeTheCutKeepsSourceTimes() throws {
        let spec = try Self.spec([try Self.tap("{stem}.wave.json"), try Self.tap("{stem}.cuts.json"), CutTestConfig()])
        let place = try #require(ReportData.waveTimeline(stage: "collect:{stem}.wave.json", spec: spec, files: [:], duration: 9))
        #expect(place.maps.isEmpty && place.duration == nil)
        // A waveform tap the spec no longer has: source times, as before.
        let gone = try #require(ReportData.waveTimeline(stage: "collect:{stem}.old.json", spec: spec, files: [:], duration: 9))
        #expect(gone.maps.isEmpty)
    }

    @Test func aMoveWithNoRecordedMapDrawsNoTurns() throws {
        let spec = try Self.spec([TempoTestConfig(), try Self.tap("{stem}.wave.json")])
        #expect(ReportData.waveTimeline(stage: "collect:{stem}.wave.json", spec: spec, files: [:], duration: 9) == nil)
        // A cut whose list is missing or not a cut list: no turns either.
        let dir = try TempDir()
        try Data(#"{"kept":[{"source_start":1}]}"#.utf8).write(to: URL(fileURLWithPath: dir["bad.json"]))
        let cut = try Self.spec([try Self.tap("{stem}.cuts.json"), CutTestConfig(), try Self.tap("{stem}.wave.json")])
        #expect(ReportData.waveTimeline(stage: "collect:{stem}.wave.json", spec: cut, files: [:], duration: 9) == nil)
        #expect(ReportData.waveTimeline(stage: "collect:{stem}.wave.json", spec: cut, files: ["collect:{stem}.cuts.json": [dir["bad.json"]]], duration: 9) == nil)
    }

    @Test func twoCutsCompose() throws {
        let dir = try TempDir()
        try Data(Self.cutList.utf8).write(to: URL(fileURLWithPath: dir["a.json"]))
        // The second cut, on the first's output (0–6 s): keeps 0–1 s and 3–6 s (→ 1–4 s).
        try Data(#"{"kept":[{"source_start":0,"source_end":1,"output_start":0},{"source_start":3,"source_end":6,"output_start":1}]}"#.utf8)
            .write(to: URL(fileURLWithPath: dir["b.json"]))
        struct Second: TimeMapRecording {
            var name: String { "cut2" }
            var version: Int { 1 }
            var options: [(String, String)] { [] }
            var movesTime: Bool { true }
            var timeMapTap: String { "collect:{stem}.b.json" }
            func makeTransform() throws -> any Transform { ScaleConfig.Scale(factor: 1) }
        }
        let spec = try Self.spec([try Self.tap("{stem}.cuts.json"), CutTestConfig(), try Self.tap("{stem}.b.json"), Second(), try Self.tap("{stem}.wave.json")])
        let place = try #require(ReportData.waveTimeline(stage: "collect:{stem}.wave.json", spec: spec,
                                                         files: ["collect:{stem}.cuts.json": [dir["a.json"]], "collect:{stem}.b.json": [dir["b.json"]]], duration: 9))
        // Source 7 s → 4 s after the first cut → 2 s after the second; the source's end (9 s) → 6 → 4.
        #expect(place.maps.toOutput(7) == 2 && place.duration == 4)
    }

    /// The report's row: a waveform drawn after the cut gets the turns placed on its 6 s, and says
    /// its length; who spoke how long is the turn file's, in source seconds.
    @Test func theReportRowPlacesTurnsOnTheWaveform() throws {
        let dir = try TempDir()
        try Data(Self.cutList.utf8).write(to: URL(fileURLWithPath: dir["m.cuts.json"]))
        try Data(#"[{"start":1,"end":3,"speaker":"speaker-1","confidence":0.9},{"start":2.5,"end":4.5,"speaker":"speaker-2","confidence":0.9},{"start":6,"end":8,"speaker":"speaker-2","name":"Ann","confidence":0.9}]"#.utf8)
            .write(to: URL(fileURLWithPath: dir["m.speakers.json"]))
        try Data(#"{"version":2,"channels":1,"sample_rate":16000,"samples_per_pixel":16000,"bits":8,"length":6,"data":[-9,9,-9,9,-9,9,-9,9,-9,9,-9,9]}"#.utf8)
            .write(to: URL(fileURLWithPath: dir["m.wave.json"]))
        var spec = try Self.spec([try Self.tap("{stem}.cuts.json"), CutTestConfig(), WhoTestConfig(pathTemplate: try PathTemplate("{stem}.speakers.json")),
                                  try Self.tap("{stem}.wave.json")])
        spec.outputRoot = dir.path
        spec.tapDeclarations = [
            "collect": StageDeclaration(key: "collect", kind: .tap, summary: "", options: [], example: "", capabilities: [.drawnInReport]),
            "who": StageDeclaration(key: "who", kind: .tap, summary: "", options: [], example: "", capabilities: [.findsSpeakers]),
        ]
        let steps: [(stage: String, output: String, finished: Double, detail: String?)] = [
            ("collect:{stem}.cuts.json", #"["m.cuts.json"]"#, 0, nil), ("who:{stem}.speakers.json", #"["m.speakers.json"]"#, 0, nil),
            ("collect:{stem}.wave.json", #"["m.wave.json"]"#, 0, nil),
        ]
        // The test's taps are all of kind `collect`: the waveform's step comes first, so its file is the one drawn.
        let row = ReportData.recording(path: "m.wav", mtimeNs: 0, duration: 9, status: "done", error: nil, failureClass: nil,
                                       steps: [steps[2], steps[1], steps[0]], spec: spec, reportDir: dir.path, columns: 240)
        #expect(row.wave != nil)
        #expect(row.waveDuration == 6)
        // 1–3 s → 1–2 s; 2.5–4.5 s lies in the cut: not drawn; 6–8 s → 3–5 s.
        #expect(row.turns.map(\.start) == [1, 3] && row.turns.map(\.end) == [2, 5], "\(row.turns)")
        // Two seconds each: ties by name; the turns point into that list.
        #expect(row.speakers.map(\.speaker) == ["Ann", "speaker-1", "speaker-2"], "\(row.speakers)")
        #expect(row.turns.map(\.speaker) == [1, 0])
        let json = ReportData(name: "n", spec: "s", statePath: "p", outputRoot: dir.path, generated: Date(), counts: [:], runs: [], failures: [],
                              recordings: [row]).json(compact: false).serialized()
        #expect(json.contains(#""wave_duration":6.0"#), "\(json)")
    }
}

