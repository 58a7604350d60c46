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
}
