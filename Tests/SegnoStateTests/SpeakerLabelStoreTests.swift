import Foundation
import GRDB
import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoState
import Testing

/// The SQLite store's side of label allocation (migration v10, decision 0094): the rows another
/// writer kept since a position, the lowest label never given, and the upgrade of a v9 database.
/// `SpeakerLabelRaceTests` (SegnoKitTests) races two writers on SQLite and PostgreSQL.
@Suite struct SpeakerLabelStoreTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    static let stage = "speakers:{dir}/{stem}.speakers.json"

    static func row(_ path: String, labels: [Int]) -> KeptSpeakers {
        KeptSpeakers(path: path, stage: stage, voices: labels.map { KeptVoice(label: $0, seconds: 2, centroid: [1, 0, Float($0)]) },
                     turns: "{\"p\":\"\(path)\"}", digest: "d")
    }

    @Test func aWriterIsHandedTheRowsKeptSinceItReadAndTheNextNumber() throws {
        // Given two stores on one file (two runs), the first having read the ledger
        let a = try StateStore(path: dir["state.sqlite"]), b = try StateStore(path: dir["state.sqlite"])
        let read = try a.keptLedger(stage: Self.stage)
        #expect(read == KeptLedger(kept: [], position: 0))
        // When the second keeps two rows
        try b.keep(Self.row("b1.wav", labels: [1, 2]))
        try b.keep(Self.row("b2.wav", labels: [3]))
        // Then the first, keeping after what it read, is handed both, in order, and label 4
        var handed: (since: [KeptSpeakers], next: Int)? = nil
        let position = try a.keep(stage: Self.stage, after: read.position) { since, next in
            handed = (since, next)
            return Self.row("a1.wav", labels: [next])
        }
        #expect(handed?.since == [Self.row("b1.wav", labels: [1, 2]), Self.row("b2.wav", labels: [3])])
        #expect(handed?.next == 4 && position == 3)
        // And keeping after its own position hands it nothing; the next number has moved on
        _ = try a.keep(stage: Self.stage, after: position) { since, next in
            handed = (since, next)
            return Self.row("a2.wav", labels: [1])
        }
        #expect(handed?.since == [] && handed?.next == 5)
        // And a row kept again (the recording redone) is handed again, at its new position
        try b.keep(Self.row("b1.wav", labels: [1]))
        _ = try a.keep(stage: Self.stage, after: 4) { since, next in
            handed = (since, next)
            return Self.row("a3.wav", labels: [])
        }
        #expect(handed?.since.map(\.path) == ["b1.wav"] && handed?.next == 5)
        let ledger = try b.keptLedger(stage: Self.stage)
        #expect(ledger.position == 6 && ledger.kept.map(\.path) == ["a1.wav", "a2.wav", "a3.wav", "b1.wav", "b2.wav"])
        // And a throw in `decide` keeps nothing and gives no number
        struct Refused: Error {}
        #expect(throws: Refused.self) { try a.keep(stage: Self.stage, after: 6) { _, _ in throw Refused() } }
        _ = try a.keep(stage: Self.stage, after: 6) { since, next in
            handed = (since, next)
            return Self.row("a4.wav", labels: [next])
        }
        let after = try a.keptLedger(stage: Self.stage)
        #expect(handed?.since == [] && handed?.next == 5 && after.position == 7)
        // And other taps number on their own
        _ = try a.keep(stage: "speakers:other", after: 0) { since, next in
            handed = (since, next)
            return KeptSpeakers(path: "x.wav", stage: "speakers:other", voices: [], turns: "{}", digest: "d")
        }
        #expect(handed?.since == [] && handed?.next == 1)
    }

    @Test func aVersion9DatabaseUpgradesWithTheLabelsItsRowsCarryGiven() throws {
        // Given a database of segno before v10, with rows of two taps
        let path = dir["old.sqlite"]
        let old = try DatabaseQueue(path: path)
        try StateMigrations.migrator.migrate(old, upTo: "v9: voice prints and the speakers kept")
        try old.write { db in
            for (p, stage, labels) in [("m.wav", Self.stage, [3, 7]), ("n.wav", Self.stage, [2]), ("o.wav", "speakers:other", [Int]())] {
                let row = KeptSpeakers(path: p, stage: stage, voices: labels.map { KeptVoice(label: $0, seconds: 1, centroid: [1]) }, turns: "{}", digest: "d")
                try db.execute(sql: "INSERT INTO speaker_kept (path, stage, voices, turns, digest) VALUES (?, ?, ?, ?, ?)",
                               arguments: [row.path, row.stage, row.voicesText, row.turns, row.digest])
            }
        }
        try old.close()
        // When this segno opens it
        let store = try StateStore(path: path)
        // Then its rows read back at position 0, and the next labels are past the ones they carry
        let (ledger, next, handed) = try VoiceStoreChecks.labelsAfterUpgrade(store, stage: Self.stage)
        #expect(ledger.position == 0 && ledger.kept.map(\.path) == ["m.wav", "n.wav"] && ledger.kept[0].voices.map(\.label) == [3, 7])
        #expect(handed == 0)
        #expect(next == [Self.stage: 8, "speakers:other": 1, "speakers:new": 1])
    }
}
