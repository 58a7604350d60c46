import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Decision 0095 with the real binary: `segno run` killed (SIGKILL) inside a recording longer than
/// `CheckpointRule.minimumSeconds` resumes from its last checkpoint, and its outputs are byte for
/// byte those of a run with `checkpoints: off` that was never interrupted. The source is written
/// by sox, the outputs compared as bytes. The chain has the default `resample` (libsoxr), which
/// restarts on its grid (decision 0100). (The polyphase resampler's checkpoints are tested in
/// `CheckpointRunTests`: in a debug build it takes 100 s over these 21 minutes.)
@Suite(.serialized) struct CheckpointKillTests {
    static func spec(output: String, checkpoints: String) -> String {
        """
        version: 1
        input: { root: in, settle: 0s }
        output: { root: \(output) }
        checkpoints: \(checkpoints)
        stages:
          - highpass: { frequency: 80 }
          - lowpass: { frequency: 3000 }
          - resample: 16000
          - encode: { path: "{stem}.flac" }
          - waveform: { path: "{stem}.json" }

        """
    }

    @Test func aRunKilledInsideALongRecordingResumesFromItsCheckpoint() throws {
        let ws = try RunWorkspace()
        // Twice the rule's length, at 8 kHz to keep the test short: the kill comes once the first
        // record (2 min in) exists, and the run must not reach the end first on a loaded machine.
        let seconds = 2 * Int(CheckpointRule.minimumSeconds)
        let sox = try CLI.tool("sox", ["-R", "-n", "-r", "8000", "-b", "16", "-c", "1", ws["in/lecture.flac"], "synth", "\(seconds)", "pinknoise", "vol", "0.3"])
        #expect(sox.status == 0, "sox: \(sox.stderr)")
        let whole = try ws.segno(["run", try ws.writeSpec(Self.spec(output: "whole", checkpoints: "off"), name: "whole.yaml"), "--quiet"], timeout: 600)
        #expect(whole.exited(0), "\(whole.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws["whole/.segno/" + CheckpointRule.folderName]), "checkpoints: off keeps none")

        let spec = try ws.writeSpec(Self.spec(output: "out", checkpoints: "auto"))
        let child = try ws.start(["run", spec, "--quiet"])
        let folder = ws["out/.segno/" + CheckpointRule.folderName]
        func record() -> String? {
            (try? FileManager.default.contentsOfDirectory(atPath: folder))?.lazy
                .map { folder + "/" + $0 + "/checkpoint" }.first { FileManager.default.fileExists(atPath: $0) }
        }
        let deadline = Date().addingTimeInterval(300)
        while child.isRunning && Date() < deadline && record() == nil { usleep(5_000) }
        child.send(SIGKILL)
        let killed = child.wait()
        #expect(killed.signalled, "the run ended before the kill")
        #expect(record() != nil)
        #expect(!FileManager.default.fileExists(atPath: ws["out/lecture.flac"]), "nothing half-written is visible")

        let resumed = try ws.segno(["run", spec], timeout: 600)
        #expect(resumed.exited(0), "\(resumed.stderr)")
        #expect(resumed.stderr.contains("lecture.flac") && resumed.stderr.contains("from its checkpoint: the first 3 stages start there (resample"), "\(resumed.stderr)")
        let a = try RunWorkspace.outputs(ws["whole"]), b = try RunWorkspace.outputs(ws["out"])
        #expect(a.keys.sorted() == ["lecture.flac", "lecture.json"])
        #expect(a.keys.sorted() == b.keys.sorted())
        for (k, v) in a { #expect(b[k] == v, "\(k) differs after the kill and resume") }
        #expect(try RunWorkspace.temporaries(ws["out"]).isEmpty)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: folder))?.isEmpty ?? true, "the checkpoint is gone once the recording is done")
    }

    /// The spec page quotes the rule's numbers as the code has them (one number, one constant).
    @Test func theSpecPageQuotesTheRulesNumbers() throws {
        let page = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/reference/spec.md"), encoding: .utf8)
        #expect(page.contains("checkpoint every \(SplitRule.duration(CheckpointRule.intervalSeconds)) (`CheckpointRule.intervalSeconds`)"))
        #expect(page.contains("at least \(SplitRule.duration(CheckpointRule.minimumSeconds)) (`CheckpointRule.minimumSeconds`)"))
    }
}
