import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Chapters made by a `chapters` tap are embedded in the run's encodes (decision 0082), so the
/// planner redoes the encodes when that tap runs again, and only then (decision 0077's rule,
/// declared by the stages: `chapters` with `from` finds `.chapters`, `encode` uses them).
@Suite struct MadeChaptersPlanTests {
    @Test func anEncodeIsDueWhenTheChaptersItEmbedsAreMadeAgain() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], rate: 16000, channels: 1, seconds: 3)
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }",
                                                "chapters: { path: \"{stem}.chapters.json\", from: [markers], min: 1s }"], parallel: 1))
        let run = try ws.segno(["run", "spec.yaml", "--quiet"])
        #expect(run.exited(0), "\(run.stderr)")
        let again = try ws.segno(["run", "spec.yaml", "--dry-run", "--explain", "--force=chapters"])
        #expect(again.exited(0), "\(again.stderr)")
        #expect(again.stdout.contains("chapters output changes") && again.stdout.contains("encode"), "\(again.stdout)")
        let plain = try ws.segno(["run", "spec.yaml", "--dry-run", "--explain"])
        #expect(!plain.stdout.contains("output changes"), "nothing is due on a plain run: \(plain.stdout)")
    }

    @Test func withoutFromTheChaptersTapMakesNothingAndTheEncodeStaysDone() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], rate: 16000, channels: 1, seconds: 3)
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }",
                                                "chapters: { path: \"{stem}.chapters.json\" }"], parallel: 1))
        #expect(try ws.segno(["run", "spec.yaml", "--quiet"]).exited(0))
        let again = try ws.segno(["run", "spec.yaml", "--dry-run", "--explain", "--force=chapters"])
        #expect(!again.stdout.contains("output changes"), "\(again.stdout)")
    }
}
