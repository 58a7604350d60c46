import Foundation
@testable import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoState
import Testing

/// The `salvaged` table (SQLite v8, PostgreSQL pg5): what salvage recovered of a recording is
/// kept with it, replaced by its next pass, removed when a pass reads it whole or it is forgotten.
@Suite struct SalvagedStateTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    let id = FileIdentity(size: 1, mtimeNs: 1, inode: 1)
    let report = #"{"frames_lost":4096,"at":2.5,"frames":110250,"method":"read to the end of the file","causes":["truncated"]}"#

    /// Given a store, when a salvaged recording and a healthy one are recorded, then only the
    /// salvaged one is listed, until a whole read or `forget` removes it.
    func exercise(_ store: any StateBackend) throws {
        try store.apply([
            .done(path: "memo.wav", identity: id, contentHash: nil, duration: 2.5, steps: [], recipes: [:]),
            .salvaged(path: "memo.wav", report: report),
            .done(path: "ok.wav", identity: id, contentHash: nil, duration: 1, steps: [], recipes: [:]),
            .salvaged(path: "ok.wav", report: nil),
        ])
        let listed = try store.salvagedRecordings()
        #expect(listed.map(\.path) == ["memo.wav"])
        #expect(listed.first?.report == report)
        try store.apply([.salvaged(path: "memo.wav", report: report.replacingOccurrences(of: "4096", with: "8192"))])
        #expect(try store.salvagedRecordings().first?.report.contains("8192") == true, "a later pass replaces the report")
        try store.apply([.salvaged(path: "memo.wav", report: nil)])
        #expect(try store.salvagedRecordings().isEmpty, "a pass that read it whole removes it")
        try store.apply([.salvaged(path: "memo.wav", report: report)])
        try store.forget(paths: ["memo.wav"])
        #expect(try store.salvagedRecordings().isEmpty, "forgetting the recording removes its report")
    }

    @Test func sqliteKeepsSalvagedRecordings() throws {
        try exercise(try StateStore(path: dir["state.sqlite"]))
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["SEGNO_TEST_PG"] != nil,
                   "needs SEGNO_TEST_PG: `make test` starts PostgreSQL (Tests/support/postgres.sh start)"))
    func postgresKeepsSalvagedRecordings() throws {
        guard let url = try TestPostgres.freshDatabase() else { return }
        _ = try PostgresStateLocation(url: url).openForRun()  // migrates
        let store = PostgresState(pool: PGPool(url: url), leaseSeconds: 30)
        #expect(try store.claim(["memo.wav", "ok.wav"]).values.allSatisfy { $0 == .granted })
        try exercise(store)
    }
}
