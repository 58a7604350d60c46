import Foundation
import Logging
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoKit
@testable import SegnoState
import SegnoTestSupport
import Testing

/// A fresh database on the test server (`Tests/support/postgres.sh`, started by `make test`).
enum TestPostgres {
    /// A URL to a new, empty database; nil (with an issue recorded) when no server is configured.
    static func freshDatabase(sourceLocation: SourceLocation = #_sourceLocation) throws -> String? {
        guard let base = ProcessInfo.processInfo.environment["SEGNO_TEST_PG"] else {
            Issue.record("SEGNO_TEST_PG is not set: run the suite with `make test`, which starts PostgreSQL", sourceLocation: sourceLocation)
            return nil
        }
        let name = "segno_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let admin = try PGConnection(url: base)
        try admin.exec("CREATE DATABASE \(name)")
        var c = URLComponents(string: base)!
        c.path = "/" + name
        return c.string!
    }
}

@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["SEGNO_TEST_PG"] != nil,
                             "needs SEGNO_TEST_PG: `make test` starts PostgreSQL (Tests/support/postgres.sh start)"))
struct PostgresStateTests {
    let dir: TempDir
    let source = MemorySource()

    init() throws { dir = try TempDir() }

    func job(_ stages: [String] = RunnerTests.chain) throws -> Job {
        let text = "version: 1\ninput: { root: \(dir.path)/in, settle: 0s }\noutput: { root: \(dir.path)/out }\nretries: 0\nstages:\n"
            + stages.map { "  - \($0)\n" }.joined()
        return Job(spec: try SpecLoader.parse(text, file: "test.yaml", baseDirectory: dir.path, registry: .forTests))
    }

    func run(_ job: Job, _ location: any StateLocation, _ configure: (inout RunOptions) -> Void = { _ in }) throws -> RunSummary {
        var options = RunOptions()
        configure(&options)
        return try BatchRunner(job: job, options: options, stop: StopFlag(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), tools: .forTests,
                               source: source, state: location).run()
    }

    @Test func theRunnerBehavesAsOnSQLite() throws {
        guard let url = try TestPostgres.freshDatabase() else { return }
        let pg = PostgresStateLocation(url: url)
        source.put("a.wav")
        source.put("b.wav")
        source.put("bad.wav", openError: .decodeFailed(path: "bad.wav", detail: "garbage"))
        let job = try job()
        let first = try run(job, pg)
        #expect(first.done == 2 && first.failed == 1)
        // Claims in batches and results in one statement per batch (issue: at most 3 per recording).
        let statements = try #require(first.stateStatements).count
        // One claim batch, then at most 3 per recording: the writer applies each recording's
        // result as soon as it is free (group commit, so a crash loses nothing finished), and
        // batches only what arrives while a transaction runs.
        #expect(statements >= 2 && statements <= 1 + 3 * 3, "\(statements) statements for 3 recordings")
        let second = try run(job, pg)
        #expect(second.planned == 0 && second.skipped == 2 && second.knownFailures == 1)
        let bits16 = try self.job(["lowpass: { frequency: 3000 }", "encode: { path: \"{stem}.wav\" }", "waveform: { path: \"{stem}.json\", bits: 16 }"])
        let changed = try run(bits16, pg) { $0.explain = true }
        // Only the waveform taps run again; the input failure waits for its file, not for the spec
        // (issue 31 item 12, decision 0054), as on SQLite.
        #expect(changed.results.map(\.reasons) == [["waveform: options changed: waveform bits 8 → 16"], ["waveform: options changed: waveform bits 8 → 16"]])
        #expect(changed.knownFailures == 1)
        // The same state as SQLite would hold, read through the same interface.
        let reader = try #require(try pg.openForReading())
        #expect(try reader.statusCounts() == ["done": 2, "failed": 1])
        #expect(try reader.failures().map(\.failureClass) == [.input])
        #expect(try reader.recentRuns(limit: 10).map(\.status) == [.done, .done, .failures])
        #expect(try reader.loadAll()["a.wav"]?.steps.count == 2)
    }

    @Test func aClaimIsExclusiveUntilItsLeaseExpiresAndALostLeaseWritesNothing() throws {
        guard let url = try TestPostgres.freshDatabase() else { return }
        _ = try PostgresStateLocation(url: url).openForRun()  // migrates
        let a = PostgresState(pool: PGPool(url: url), leaseSeconds: 1)
        let b = PostgresState(pool: PGPool(url: url), leaseSeconds: 30)
        #expect(try a.loadAll().isEmpty && b.loadAll().isEmpty)  // each worker's snapshot
        #expect(try a.claim(["x.wav", "y.wav"]) == ["x.wav": .granted, "y.wav": .granted], "one statement claims a batch")
        #expect(try b.claim(["x.wav", "z.wav"]) == ["x.wav": .heldElsewhere, "z.wav": .granted], "b must not get x.wav while a's lease lives")
        #expect(try a.claim(["x.wav"]) == ["x.wav": .granted], "a renews its own claim")
        // a's 1 s lease runs out: b asks until the server grants it (held elsewhere until then).
        #expect(Wait.until(timeout: 30, interval: 0.1) { (try? b.claim(["x.wav"])) == ["x.wav": .granted] }, "b takes over an expired lease")
        let id = FileIdentity(size: 1, mtimeNs: 1, inode: 1)
        try a.apply([.done(path: "x.wav", identity: id, contentHash: nil, duration: 1, steps: [], recipes: [:])])
        #expect(try PostgresState(pool: PGPool(url: url), leaseSeconds: 1).loadAll().isEmpty, "a lost its lease: its result is dropped")
        try b.apply([.done(path: "x.wav", identity: id, contentHash: nil, duration: 1, steps: [], recipes: [:])])
        // a planned on a snapshot from before b's result: told the recording is done elsewhere.
        #expect(try a.claim(["x.wav"]) == ["x.wav": .doneElsewhere])
        #expect(try a.loadAll()["x.wav"]?.status == .done)
        #expect(try a.claim(["x.wav"]) == ["x.wav": .granted], "a newer snapshot sees b's result: a plan made from it may claim again")
        // The fleet shows live claims only, not the leases that ended with a result.
        try b.apply([.done(path: "z.wav", identity: id, contentHash: nil, duration: 1, steps: [], recipes: [:])])
        #expect(try a.fleet().map { "\($0.worker) \($0.claimed)" } == ["\(a.worker) 2"], "a holds x.wav and y.wav; b holds nothing")
    }

    @Test func readersNeverMigrate() throws {
        guard let url = try TestPostgres.freshDatabase() else { return }
        #expect(try PostgresStateLocation(url: url).openForReading() == nil, "nothing has run")
        let conn = try PGConnection(url: url)
        #expect(try conn.exec("SELECT to_regclass('segno_migrations') IS NULL").first?.first == "t", "no table was created")
    }
}
