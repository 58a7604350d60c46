import Foundation
import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoSpeech
@testable import SegnoState
import Synchronization
import Testing

/// Archive-wide speaker labels given by two writers at once (decision 0094): two runs on one
/// SQLite file, or two machines on one PostgreSQL, each with its own `VoiceBook` prepared before
/// either stored anything (the same pass), store recordings that all carry one voice new to the
/// archive and each a voice of its own. The voice both meet must get one label, and no two
/// voices may share a label (enrolling one would name the other).
@Suite struct SpeakerLabelRaceTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    static let stage = "speakers:{dir}/{stem}.speakers.json"
    static let recordings = 12

    /// A unit vector of 256 floats, drawn from `seed`: two seeds give vectors about 0.06 alike.
    static func voice(_ seed: UInt64) -> [Float] {
        var rng = SplitMix64(seed: seed)
        let v = (0..<256).map { _ in Float(Double(rng.next() % 2_000_001) / 1_000_000 - 1) }
        let n = v.reduce(0) { $0 + $1 * $1 }.squareRoot()
        return v.map { $0 / n }
    }

    /// `base` moved a little (cosine about 0.98): the same voice heard in another recording.
    static func heardAgain(_ base: [Float], _ seed: UInt64) -> [Float] {
        let noise = voice(seed)
        let v = zip(base, noise).map { $0 + 0.2 * $1 }
        let n = v.reduce(0) { $0 + $1 * $1 }.squareRoot()
        return v.map { $0 / n }
    }

    /// What writer `w` hears in its recording `i`: the shared voice (id 0) and a voice of its own
    /// (id 1000·(w+1) + i), in an order that changes from one recording to the next.
    static func heard(writer w: Int, recording i: Int) -> [(id: Int, centroid: [Float], seconds: Double)] {
        let shared = (id: 0, centroid: heardAgain(voice(1), UInt64(100 + 31 * w + i)), seconds: 5.0 + Double(i))
        let own = 1000 * (w + 1) + i
        let mine = (id: own, centroid: voice(UInt64(own)), seconds: 3.0)
        return (i + w) % 2 == 0 ? [shared, mine] : [mine, shared]
    }

    /// Two writers, each on `open()`'s store, both prepared before either writes, then storing
    /// their recordings at the same time on two threads. Returns each true voice's labels.
    func race(_ open: () throws -> any VoiceStore) throws -> [Int: Set<Int>] {
        let writers = try (0..<2).map { _ -> (store: any VoiceStore, book: VoiceBook) in
            let store = try open()
            let book = VoiceBook()
            try LabelWriting.prepare(book, store: store, stage: Self.stage)
            return (store, book)
        }
        let failures = Mutex<[String]>([])
        let given = Mutex<[Int: Set<Int>]>([:])
        DispatchQueue.concurrentPerform(iterations: 2) { w in
            for i in 0..<Self.recordings {
                let voices = Self.heard(writer: w, recording: i)
                do {
                    let labels = try LabelWriting.store(writers[w].book, path: "w\(w)/r\(i).wav", voices: voices.map { ($0.centroid, $0.seconds) })
                    given.withLock { g in for (v, l) in zip(voices, labels) { g[v.id, default: []].insert(l) } }
                } catch {
                    failures.withLock { $0.append("writer \(w), recording \(i): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        // What the state keeps says the same as what the writers were told.
        let kept = try open().keptSpeakers(stage: Self.stage)
        #expect(kept.count == 2 * Self.recordings)
        var stored: [Int: Set<Int>] = [:]
        for k in kept {
            let parts = k.path.dropFirst().split(separator: "/")
            guard let w = Int(parts[0]), let i = Int(parts[1].dropFirst().prefix { $0.isNumber }) else { continue }
            for (v, kv) in zip(Self.heard(writer: w, recording: i), k.voices) { stored[v.id, default: []].insert(kv.label) }
        }
        let told = given.withLock { $0 }
        #expect(stored == told)
        return told
    }

    /// The assertions: one label for the voice both writers met, and no label on two voices.
    func check(_ labels: [Int: Set<Int>]) {
        #expect(labels.count == 1 + 2 * Self.recordings)
        #expect(labels[0]?.count == 1, "the voice both writers met has labels \(labels[0]?.sorted() ?? [])")
        var owners: [Int: [Int]] = [:]
        for (voice, ls) in labels { for l in ls { owners[l, default: []].append(voice) } }
        let shared = owners.filter { $0.value.count > 1 }
        #expect(shared.isEmpty, "labels given to several voices: \(shared.sorted { $0.key < $1.key }.map { "speaker-\($0.key): voices \($0.value.sorted())" })")
    }

    @Test func twoRunsOnOneSQLiteFileGiveOneVoiceOneLabelAndNoLabelTwice() throws {
        let path = dir["state.sqlite"]
        check(try race { try StateStore(path: path) })
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["SEGNO_TEST_PG"] != nil,
                   "needs SEGNO_TEST_PG: `make test` starts PostgreSQL (Tests/support/postgres.sh start)"))
    func twoMachinesOnOnePostgreSQLGiveOneVoiceOneLabelAndNoLabelTwice() throws {
        guard let url = try TestPostgres.freshDatabase() else { return }
        try PGPool(url: url).with { try PostgresMigrations.migrate($0) }
        check(try race { PostgresState(pool: PGPool(url: url), leaseSeconds: 60) })
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["SEGNO_TEST_PG"] != nil,
                   "needs SEGNO_TEST_PG: `make test` starts PostgreSQL (Tests/support/postgres.sh start)"))
    func aPostgreSQLDatabaseBeforePg7UpgradesWithTheLabelsItsRowsCarryGiven() throws {
        // Given a database of segno before pg7, with rows of two taps
        guard let url = try TestPostgres.freshDatabase() else { return }
        let conn = try PGConnection(url: url)
        try conn.exec("CREATE TABLE segno_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        for m in PostgresMigrations.all.prefix(while: { !$0.name.hasPrefix("pg7:") }) {
            for statement in m.sql { try conn.exec(statement) }
            try conn.exec("INSERT INTO segno_migrations (name) VALUES ($1)", [m.name])
        }
        for (p, stage, labels) in [("m.wav", Self.stage, [3, 7]), ("n.wav", Self.stage, [2]), ("o.wav", "speakers:other", [Int]())] {
            let row = KeptSpeakers(path: p, stage: stage, voices: labels.map { KeptVoice(label: $0, seconds: 1, centroid: [1]) }, turns: "{}", digest: "d")
            try conn.exec("INSERT INTO speaker_kept (path, stage, voices, turns, digest) VALUES ($1, $2, $3, $4, $5)",
                          [row.path, row.stage, row.voicesText, row.turns, row.digest])
        }
        // When this segno opens it
        try PostgresMigrations.migrate(conn)
        let store = PostgresState(pool: PGPool(url: url), leaseSeconds: 60)
        // Then its rows read back at position 0, and the next labels are past the ones they carry
        let (ledger, next, handed) = try VoiceStoreChecks.labelsAfterUpgrade(store, stage: Self.stage)
        #expect(ledger.position == 0 && ledger.kept.map(\.path) == ["m.wav", "n.wav"] && ledger.kept[0].voices.map(\.label) == [3, 7])
        #expect(handed == 0)
        #expect(next == [Self.stage: 8, "speakers:other": 1, "speakers:new": 1])
        #expect(try store.keptLedger(stage: Self.stage).position == 1)
    }
}

/// How a writer uses its book: prepared once per pass, then one call per recording.
enum LabelWriting {
    static func prepare(_ book: VoiceBook, store: any VoiceStore, stage: String) throws {
        book.prepare(store: store, stage: stage, prints: try store.voicePrints(), ledger: try store.keptLedger(stage: stage))
    }

    static func store(_ book: VoiceBook, path: String, voices: [(centroid: [Float], seconds: Double)]) throws -> [Int] {
        guard let named = try book.keep(path: path, voices: voices, write: { _, _ in "{}" }) else { throw TestSupportError("the book is not prepared") }
        return named.labels
    }
}
