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
}
