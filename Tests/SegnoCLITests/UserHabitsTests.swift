import Foundation
import SegnoCore
import Testing

/// Issue 12, what users meet: `validate`'s warnings, and the habits of the shell and the field.
@Suite struct UserHabitsTests {
    /// A stage that changes the level after `normalize`, and a transform after the last tap,
    /// are warned about on stderr with their lines; the spec still validates (exit 0).
    @Test func validateWarnsAboutStagesThatUndoNormalizeOrFeedNothing() throws {
        let ws = try RunWorkspace()
        try ws.writeSpec(RunTests.spec(stages: ["normalize: -16", "gain: -3", "encode: { path: \"{stem}.flac\" }", "lowpass: { frequency: 3000 }"]))
        let r = try ws.segno(["validate", "spec.yaml"])
        #expect(r.exited(0), "\(r.stderr)")
        #expect(r.stderr.contains("spec.yaml:12: warning: gain after normalize (line 11)"), "\(r.stderr)")
        #expect(r.stderr.contains("spec.yaml:14: warning: lowpass comes after the last tap"), "\(r.stderr)")
        #expect(r.stderr.contains("lowpass after normalize"), "\(r.stderr)")
        // A clean spec has no warnings.
        try ws.writeSpec(RunTests.spec(stages: ["gain: -3", "normalize: -16", "encode: { path: \"{stem}.flac\" }"]))
        let clean = try ws.segno(["validate", "spec.yaml"])
        #expect(clean.exited(0) && !clean.stderr.contains("warning"), "\(clean.stderr)")
    }

    /// The metadata tap after `normalize` reports the loudness and true peak that came out.
    @Test func metadataCarriesMeasuredLoudnessAndTruePeak() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/tone.wav"], rate: 48000, channels: 2, seconds: 3, frequency: 440)
        try ws.writeSpec(RunTests.spec(stages: ["normalize: -20", "metadata: { path: \"{stem}.json\", levels: 0 }"]))
        let r = try ws.segno(["run", "spec.yaml"])
        #expect(r.exited(0), "\(r.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: ws["out/tone.json"]))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let lufs = try #require(json["loudness_lufs"] as? Double, "\(json)")
        let tp = try #require(json["true_peak_dbtp"] as? Double, "\(json)")
        #expect(abs(lufs - -20) <= 0.5)
        #expect(tp <= -1 && tp > -20)
    }
}
