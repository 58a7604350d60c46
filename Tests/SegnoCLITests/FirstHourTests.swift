import Foundation
import SegnoAudio
import SegnoCore
import SegnoTestSupport
import Testing

/// Issue 31: what a new user met in the first hour — exit codes, hints that name what exists,
/// numbers that agree, and no false alarms.
@Suite struct FirstHourTests {
    /// Item 11: `report -o` (and `run --report`) into a folder that does not exist is a usage
    /// error (exit 2) that creates nothing, as `convert` and `waveform -o` refuse it.
    @Test func reportIntoAMissingFolderIsRefused() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], rate: 16000, seconds: 0.5)
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }"]))
        let run = try ws.segno(["run", "spec.yaml", "--report", ws["typo/run.json"]])
        #expect(run.exited(2) && run.stderr.contains("typo"), "\(run.status) \(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws["typo"]))
        #expect(!FileManager.default.fileExists(atPath: ws["out/a.flac"]), "refused before any work")
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        let report = try ws.segno(["report", "spec.yaml", "-o", ws["typo/deeper/r.html"]])
        #expect(report.exited(2) && report.stderr.contains("typo"), "\(report.status) \(report.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws["typo"]))
        // Into a folder that exists, it writes.
        let written = try ws.segno(["report", "spec.yaml", "-o", ws["r.html"]])
        #expect(written.exited(0) && FileManager.default.fileExists(atPath: ws["r.html"]), "\(written.stderr)")
    }
}
