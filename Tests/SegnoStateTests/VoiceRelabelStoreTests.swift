import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoState
import Testing

/// Decision 0084: the speaker files and the transcripts that carry the names are recorded again
/// in one transaction with the catalogue's new spoken words (SQLite; `SpeakerRenamingPostgresTests`
/// runs the same through the CLI on PostgreSQL).
@Suite struct VoiceRelabelStoreTests {
    @Test func everyRewrittenStepAndTheCatalogueChangeTogether() throws {
        // Given a recording with a speakers and a transcribe step, and its catalogue entry
        let dir = try TempDir()
        let store = try StateStore(path: dir["state.sqlite"])
        let speakers = "speakers:{dir}/{stem}.speakers.json", transcribe = "transcribe:{dir}/{stem}"
        let id = FileIdentity(size: 10, mtimeNs: 20, inode: 30)
        func step(_ stage: String, _ byte: UInt8) -> StepState {
            StepState(stage: stage, fingerprint: "f", source: id.key, output: StepState.encodeOutputs([stage + ".out"]),
                      outputHash: Data(repeating: byte, count: 32), outputSize: 100, finishedAt: 1)
        }
        let encode = step("encode:{stem}.flac", 3)
        try store.apply([.done(path: "m.wav", identity: id, contentHash: nil, duration: 3, steps: [step(speakers, 1), step(transcribe, 2), encode], recipes: ["f": "r"])])
        var entry = CatalogEntry(title: "standup", tags: "", name: "m", recorded: "2026-11-27")
        entry.spoken = "speaker-1 speaker-2\nGood morning all"
        try store.apply([.archived(path: "m.wav", fingerprints: [:], catalog: entry)])
        try store.keep(KeptSpeakers(path: "m.wav", stage: speakers, voices: [], turns: "{}", digest: "d1"))
        var query = CatalogQuery()
        query.words = ["allison"]
        #expect(try store.search(query, limit: 10).isEmpty)
        // When both taps' files were written again with Allison's name
        try store.relabelled(path: "m.wav", stage: speakers, digest: "d2",
                             steps: [RelabelledStep(stage: speakers, outputHash: Data(repeating: 8, count: 32), outputSize: 110),
                                     RelabelledStep(stage: transcribe, outputHash: Data(repeating: 9, count: 32), outputSize: 120)],
                             spoken: "speaker-1 Allison speaker-2\nGood morning all")
        // Then both steps have their new hashes, the others are untouched, and find sees the name
        let steps = try #require(try store.loadAll()["m.wav"]?.steps)
        #expect(steps[speakers]?.outputHash == Data(repeating: 8, count: 32) && steps[speakers]?.outputSize == 110)
        #expect(steps[transcribe]?.outputHash == Data(repeating: 9, count: 32) && steps[transcribe]?.outputSize == 120)
        #expect(steps["encode:{stem}.flac"] == encode)
        #expect(try store.keptSpeakers(stage: speakers).first?.digest == "d2")
        #expect(try store.search(query, limit: 10).map(\.path) == ["m.wav"])
        query.words = ["morning"]
        #expect(try store.search(query, limit: 10).map(\.path) == ["m.wav"], "the transcript's words stay")
        // And without spoken words the catalogue is left as it is
        try store.relabelled(path: "m.wav", stage: speakers, digest: "d3", steps: [], spoken: nil)
        query.words = ["allison"]
        #expect(try store.search(query, limit: 10).map(\.path) == ["m.wav"])
    }
}
