import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Decision 0077, items 6 and 7: a transcript never keeps speakers from another run of the
/// speakers tap, nor lacks them for good because the speakers tap failed once.
@Suite struct SpeakersTranscriptRunTests {
    @Test func aSpeakersTapThatFailedHasItsTranscriptRedoneWithIt() throws {
        try MeetingsTests.requireEngines()
        let ws = try RunWorkspace()
        try Meetings.write(into: ws["in"], [Meetings.Meeting(name: "call.wav", turns: [(0, [Meetings.reader[0]]), (1, Array(Meetings.alsa[0..<3]))])])
        _ = try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nretries: 0\nstages:\n"
                             + "  - transcribe: { path: \"{stem}\", formats: [vtt], model: tiny.en, language: en }\n  - speakers: true\n")
        // A folder where the RTTM goes: the speakers tap cannot write, the transcript has no turns.
        try FileManager.default.createDirectory(atPath: ws["out/call.rttm"], withIntermediateDirectories: true)
        let first = try ws.segno(["run", "spec.yaml"])
        #expect(first.exited(1) || first.exited(0), "\(first.stderr)")
        #expect(first.stderr.contains("speakers"), "\(first.stderr)")
        #expect(!(try String(contentsOfFile: ws["out/call.vtt"], encoding: .utf8)).contains("<v "))
        try FileManager.default.removeItem(atPath: ws["out/call.rttm"])
        // The next run redoes the speakers and, with them, the transcript.
        let plan = try ws.segno(["run", "spec.yaml", "--dry-run", "--explain"])
        #expect(plan.stdout.contains("transcribe: speakers output changes"), "\(plan.stdout)")
        let second = try ws.segno(["run", "spec.yaml"])
        #expect(second.exited(0), "\(second.stderr)")
        let vtt = try String(contentsOfFile: ws["out/call.vtt"], encoding: .utf8)
        #expect(vtt.contains("<v speaker-1>") && vtt.contains("<v speaker-2>"), "\(vtt)")
    }

    /// The speakers tap runs and fails when it writes its RTTM (its folder is a file): the
    /// transcript written in the same pass, without turns, is not recorded; once the way is
    /// clear the next run writes both.
    @Test func aTranscriptIsNotKeptWhenTheSpeakersTapFailsInTheSamePass() throws {
        try MeetingsTests.requireEngines()
        let ws = try RunWorkspace()
        try Meetings.write(into: ws["in"], [Meetings.Meeting(name: "call.wav", turns: [(0, [Meetings.reader[0]]), (1, Array(Meetings.alsa[0..<3]))])])
        _ = try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nretries: 0\nstages:\n"
                             + "  - transcribe: { path: \"{stem}\", formats: [vtt], model: tiny.en, language: en }\n"
                             + "  - speakers: { rttm: \"sub/{stem}.rttm\" }\n")
        try FileManager.default.createDirectory(atPath: ws["out"], withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: ws["out/sub"]))
        let first = try ws.segno(["run", "spec.yaml"])
        #expect(first.stderr.contains("transcribe: not kept: it uses what speakers finds, which failed for this recording"), "\(first.stderr)")
        let status = try ws.status()
        #expect(status.int("failed") == 1, "\(status)")
        try FileManager.default.removeItem(atPath: ws["out/sub"])
        let plan = try ws.segno(["run", "spec.yaml", "--dry-run", "--explain"])
        #expect(plan.stdout.contains("transcribe: failed before") && plan.stdout.contains("speakers: failed before"), "\(plan.stdout)")
        let second = try ws.segno(["run", "spec.yaml"])
        #expect(second.exited(0), "\(second.stderr)")
        #expect((try String(contentsOfFile: ws["out/call.vtt"], encoding: .utf8)).contains("<v speaker-2>"))
        #expect(FileManager.default.fileExists(atPath: ws["out/sub/call.rttm"]))
    }
}
