import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoState
import Testing

/// Voice prints and what the `speakers` taps keep (migration v9, decision 0075) in the SQLite
/// store; `SpeakersCommandPostgresTests` runs the same through the CLI on PostgreSQL.
@Suite struct VoiceStoreTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    static func vector(_ seed: Int) -> [Float] { (0..<256).map { Float(sin(Double($0 * (seed + 1)))) } }

    @Test func printsAreEnrolledReplacedListedByNameAndForgotten() throws {
        // Given a new store
        let store = try StateStore(path: dir["state.sqlite"])
        #expect(try store.voicePrints().isEmpty)
        // When two voices are enrolled, one of them twice
        try store.enroll(VoicePrint(name: "Zoë", vector: Self.vector(1), files: 1, seconds: 12.5, enrolledAt: 1_700_000_000))
        try store.enroll(VoicePrint(name: "Al", vector: Self.vector(2), files: 2, seconds: 30, enrolledAt: 1_700_000_100))
        try store.enroll(VoicePrint(name: "Zoë", vector: Self.vector(3), files: 3, seconds: 40.25, enrolledAt: 1_700_000_200))
        // Then each is kept once, the vectors bit for bit, by name
        let prints = try store.voicePrints()
        #expect(prints.map(\.name) == ["Al", "Zoë"])
        #expect(prints[1].vector == Self.vector(3) && prints[1].files == 3 && prints[1].seconds == 40.25 && prints[1].enrolledAt == 1_700_000_200)
        // And a reopened store has them
        store.close()
        let again = try StateStore(path: dir["state.sqlite"])
        #expect(try again.voicePrints() == prints)
        #expect(try again.forgetVoice("Al"))
        #expect(try !again.forgetVoice("Al"))
        #expect(try again.voicePrints().map(\.name) == ["Zoë"])
    }

    @Test func keptSpeakersAreReplacedRelabelledAndPrunedWithTheRecording() throws {
        // Given a recording with a finished speakers step
        let store = try StateStore(path: dir["state.sqlite"])
        let stage = "speakers:{dir}/{stem}.speakers.json"
        let id = FileIdentity(size: 10, mtimeNs: 20, inode: 30)
        let step = StepState(stage: stage, fingerprint: "f", source: id.key, output: StepState.encodeOutputs(["m.speakers.json", "m.rttm"]),
                             outputHash: Data(repeating: 1, count: 32), outputSize: 100, finishedAt: 1)
        try store.apply([.done(path: "m.wav", identity: id, contentHash: nil, duration: 3, steps: [step], recipes: ["f": "r"])])
        let voices = [KeptVoice(label: 7, seconds: 12.5, centroid: Self.vector(4)), KeptVoice(label: 2, seconds: 1, centroid: Self.vector(5))]
        try store.keep(KeptSpeakers(path: "m.wav", stage: stage, voices: voices, turns: "{\"t\":1}", digest: "d1"))
        try store.keep(KeptSpeakers(path: "m.wav", stage: stage, voices: voices, turns: "{\"t\":2}", digest: "d2"))
        try store.keep(KeptSpeakers(path: "n.wav", stage: "speakers:other", voices: [], turns: "{}", digest: "d"))
        // Then the last is kept, per tap
        let kept = try store.keptSpeakers(stage: stage)
        #expect(kept == [KeptSpeakers(path: "m.wav", stage: stage, voices: voices, turns: "{\"t\":2}", digest: "d2")])
        // When the files are written again with new names
        try store.relabelled(path: "m.wav", stage: stage, digest: "d3", outputHash: Data(repeating: 9, count: 32), outputSize: 120)
        // Then the digest and the step's hash and size are the new ones
        #expect(try store.keptSpeakers(stage: stage).first?.digest == "d3")
        let steps = try store.loadAll()["m.wav"]?.steps[stage]
        #expect(steps?.outputHash == Data(repeating: 9, count: 32) && steps?.outputSize == 120 && steps?.fingerprint == "f")
        // And a pruned recording takes what was kept with it
        try store.forget(paths: ["m.wav"])
        #expect(try store.keptSpeakers(stage: stage).isEmpty)
    }

    @Test func keptVoicesReadBackOnlyWhenWellFormed() {
        let v = KeptSpeakers(path: "p", stage: "s", voices: [KeptVoice(label: 3, seconds: 2.5, centroid: [1, -0.5, 0.25])], turns: "", digest: "")
        #expect(KeptSpeakers.voices(fromText: v.voicesText) == v.voices)
        #expect(KeptSpeakers.voices(fromText: "[{\"label\":1}]") == nil)
        #expect(KeptSpeakers.voices(fromText: "not json") == nil)
    }

    @Test func theDigestChangesWithThePrintsAndNotWithTheirOrder() {
        let a = VoicePrint(name: "A", vector: Self.vector(1), files: 1, seconds: 1, enrolledAt: 0)
        let b = VoicePrint(name: "B", vector: Self.vector(2), files: 1, seconds: 1, enrolledAt: 0)
        var b2 = b
        b2.vector[0] += 0.001
        #expect(VoicePrint.digest([a, b], threshold: 0.8) == VoicePrint.digest([b, a], threshold: 0.8))
        #expect(VoicePrint.digest([a, b], threshold: 0.8) != VoicePrint.digest([a, b2], threshold: 0.8))
        #expect(VoicePrint.digest([a, b], threshold: 0.8) != VoicePrint.digest([a], threshold: 0.8))
        #expect(VoicePrint.digest([a], threshold: 0.8) != VoicePrint.digest([a], threshold: 0.7))
        // The noisy prints' threshold counts too, and its absence is not a value of it.
        #expect(VoicePrint.digest([a], threshold: 0.8, noisyThreshold: 0.82) != VoicePrint.digest([a], threshold: 0.8, noisyThreshold: 0.85))
        #expect(VoicePrint.digest([a], threshold: 0.8, noisyThreshold: 0.82) != VoicePrint.digest([a], threshold: 0.8))
    }
}
