import Foundation
import SegnoTestSupport
import Testing

/// Decisions 0084 and 0091 on a real meeting (Allison and the LibriVox reader, `NamedVoices`):
/// enrolling Allison after a run names her in the transcript (WebVTT, SRT, JSON) and the catalogue
/// at the next run without decoding or transcribing again; `state rebuild` does not adopt the
/// speaker turns, warns about the name it cannot keep, and the next run finds them again.
struct SpeakerRenamingFlow {
    let ws: RunWorkspace
    let state: String?

    func spec() throws {
        let lines = ["version: 1", "name: renaming", "input: { root: in, settle: 0s }", "output: { root: out }"]
            + (state.map { ["state: \"\($0)\""] } ?? [])
            + ["parallel: 1", "retries: 0", "stages:", "  - transcribe: { path: \"{dir}/{stem}\", model: tiny.en }",
               "  - speakers: true", "  - metadata: { path: \"{dir}/{stem}.meta.json\" }"]
        try ws.writeSpec(lines.joined(separator: "\n") + "\n")
    }

    func text(_ rel: String) throws -> String { try String(contentsOfFile: ws["out/" + rel], encoding: .utf8) }

    func transcriptJSON() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: ws["out/meeting.json"]))) as? [String: Any])
    }

    /// Segments' (speaker, speaker_name) pairs.
    func segmentSpeakers() throws -> [(String?, String?)] {
        ((try transcriptJSON())["segments"] as? [[String: Any]] ?? []).map { ($0["speaker"] as? String, $0["speaker_name"] as? String) }
    }

    /// Runs, enrols Allison, zeroes the source in place (the plan leaves it alone: same size, time
    /// and inode) and runs again: her name is in every transcript format and the catalogue.
    func namesReachTheTranscriptWithoutTranscribing() throws {
        try spec()
        try NamedVoices.meeting(to: ws["in/meeting.wav"])
        let first = try ws.segno(["run", "spec.yaml", "--quiet"], timeout: 480)
        #expect(first.exited(0), "\(first.stderr)")
        let said = try transcriptJSON()["text"] as? String
        #expect(said?.isEmpty == false)
        let firstVTT = try text("meeting.vtt")
        #expect(firstVTT.contains("<v speaker-") && !firstVTT.contains("Allison"), "\(firstVTT)")
        #expect(try segmentSpeakers().allSatisfy { $0.0 != nil && $0.1 == nil })
        let none = try ws.segno(["find", "spec.yaml", "--speaker", "Allison"])
        #expect(none.stdout == "no recordings match\n", "\(none.stdout)")

        try NamedVoices.write(NamedVoices.enrollment, to: ws["allison.wav"])
        #expect(try ws.segno(["speakers", "enroll", "spec.yaml", "Allison", "allison.wav"]).exited(0))
        try Meetings.zeroInPlace(ws["in/meeting.wav"])
        let second = try ws.segno(["run", "spec.yaml"], timeout: 480)
        #expect(second.exited(0), "\(second.stderr)")
        #expect(!second.stderr.contains("segno: warning"), "\(second.stderr)")
        // The turn file names her, and the transcript says the same in every format.
        let turns = try JSONDecoder().decode([NamedTurn].self, from: Data(contentsOf: URL(fileURLWithPath: ws["out/meeting.speakers.json"])))
        let allisonLabels = Set(turns.filter { $0.name == "Allison" }.map(\.speaker))
        #expect(!allisonLabels.isEmpty, "\(turns)")
        let vtt = try text("meeting.vtt"), srt = try text("meeting.srt")
        #expect(vtt.contains("<v Allison>") && srt.contains("\nAllison: "), "\(vtt)\n\(srt)")
        let pairs = try segmentSpeakers()
        #expect(pairs.contains { $0.1 == "Allison" }, "\(pairs)")
        #expect(pairs.allSatisfy { ($0.1 == "Allison") == allisonLabels.contains($0.0 ?? "") }, "\(pairs) \(allisonLabels)")
        // Nothing was transcribed again (the source is zeros now): the words are the first run's.
        #expect(try transcriptJSON()["text"] as? String == said)
        // The catalogue has her name: find by speaker and by word.
        let found = try ws.segno(["find", "spec.yaml", "--speaker", "allison"])
        #expect(found.exited(0) && found.stdout.contains("meeting.wav"), "\(found.stdout) \(found.stderr)")
        let word = try ws.segno(["find", "spec.yaml", "Allison"])
        #expect(word.stdout.contains("meeting.wav"), "\(word.stdout)")
        // The state holds the new files' hashes: the next run has nothing to do and warns of nothing.
        let before = try RunWorkspace.outputs(ws["out"])
        let third = try ws.segno(["run", "spec.yaml"], timeout: 120)
        #expect(third.exited(0) && !third.stderr.contains("segno: warning"), "\(third.stderr)")
        #expect(try RunWorkspace.outputs(ws["out"]).filter { !$0.key.hasPrefix(".segno") } == before.filter { !$0.key.hasPrefix(".segno") })
        let plan = try ws.segno(["run", "spec.yaml", "--dry-run", "--explain"])
        #expect(!plan.stdout.contains("meeting.wav"), "\(plan.stdout)")
    }

    /// After the state is lost, `state rebuild` adopts the metadata but not the turns (nor the
    /// transcript that carries them), and warns that Allison is no longer enrolled; enrolled
    /// again, the next run names her again.
    func rebuildLeavesTheTurnsToTheNextRun(source: String) throws {
        try FileManager.default.removeItem(atPath: ws["in/meeting.wav"])
        try FileManager.default.copyItem(atPath: source, toPath: ws["in/meeting.wav"])
        for f in try FileManager.default.contentsOfDirectory(atPath: ws["out/.segno"]) where f.hasPrefix("state.sqlite") {
            try FileManager.default.removeItem(atPath: ws["out/.segno/" + f])
        }
        let rebuilt = try ws.segno(["state", "rebuild", "spec.yaml"])
        #expect(rebuilt.exited(0), "\(rebuilt.stderr)")
        #expect(rebuilt.stdout.contains("1 of 1 recordings adopted (1 outputs"), "\(rebuilt.stdout)")
        #expect(rebuilt.stderr.contains("warning: the speaker files name Allison") && rebuilt.stderr.contains("segno speakers enroll"), "\(rebuilt.stderr)")
        let plan = try ws.segno(["run", "spec.yaml", "--dry-run", "--explain"])
        #expect(plan.stdout.contains("speakers") && plan.stdout.contains("transcribe") && !plan.stdout.contains("metadata"), "\(plan.stdout)")
        #expect(try ws.segno(["speakers", "enroll", "spec.yaml", "Allison", "allison.wav"]).exited(0))
        let run = try ws.segno(["run", "spec.yaml", "--quiet"], timeout: 480)
        #expect(run.exited(0), "\(run.stderr)")
        let (namedVTT, namedTurns) = (try text("meeting.vtt"), try text("meeting.speakers.json"))
        #expect(namedVTT.contains("<v Allison>") && namedTurns.contains("\"name\":\"Allison\""), "\(namedVTT)\n\(namedTurns)")
        // Kept in the state again: forgetting her takes the name out of every file at the next run.
        #expect(try ws.segno(["speakers", "forget", "spec.yaml", "Allison"]).exited(0))
        let after = try ws.segno(["run", "spec.yaml", "--quiet"], timeout: 120)
        #expect(after.exited(0), "\(after.stderr)")
        let (forgotVTT, forgotTurns) = (try text("meeting.vtt"), try text("meeting.speakers.json"))
        #expect(!forgotVTT.contains("Allison") && !forgotTurns.contains("Allison"), "\(forgotVTT)\n\(forgotTurns)")
    }
}

@Suite(.serialized) struct SpeakerRenamingTests {
    @Test(.timeLimit(.minutes(20)))
    func enrolmentRenamesTranscriptsAndRebuildKeepsNames() throws {
        try MeetingsTests.requireEngines()
        let ws = try RunWorkspace()
        let flow = SpeakerRenamingFlow(ws: ws, state: nil)
        try flow.spec()
        try NamedVoices.meeting(to: ws["meeting-copy.wav"])
        try flow.namesReachTheTranscriptWithoutTranscribing()
        try flow.rebuildLeavesTheTurnsToTheNextRun(source: ws["meeting-copy.wav"])
    }
}

@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["SEGNO_TEST_PG"] != nil,
                             "SEGNO_TEST_PG is not set: `make test` starts PostgreSQL (Tests/support/postgres.sh) and sets it"))
struct SpeakerRenamingPostgresTests {
    @Test(.timeLimit(.minutes(20)))
    func enrolmentRenamesTranscriptsOnPostgreSQL() throws {
        try MeetingsTests.requireEngines()
        let url = try #require(try ManyWorkersTests.database())
        try SpeakerRenamingFlow(ws: try RunWorkspace(), state: url).namesReachTheTranscriptWithoutTranscribing()
    }
}
