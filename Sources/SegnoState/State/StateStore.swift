import Foundation
import GRDB
import SegnoCore
import SegnoS3

/// The SQLite state backend: owns one database (WAL file for runs, in memory for tests), loads
/// what a plan needs in one query, and applies batches of updates, each batch one transaction.
public final class StateStore: Sendable {
    private let db: any DatabaseWriter
    package var dbReader: any DatabaseWriter { db }
    /// The database file ("" in memory).
    public let path: String

    /// A store on any GRDB writer (an in-memory `DatabaseQueue()` in tests), migrated when `migrate`.
    public init(writer: any DatabaseWriter, path: String = "", migrate: Bool = true) throws {
        self.db = writer
        self.path = path
        if migrate { try StateMigrations.migrator.migrate(writer) }
    }

    /// An empty, migrated store in memory: for tests and planning without a file.
    public static func inMemory() throws -> StateStore {
        try StateStore(writer: try DatabaseQueue())
    }

    /// For `status`, `report` and `--dry-run`: opens read-only, never migrates, never creates a
    /// file. Nil when no database exists. With no `-wal` file beside it (no run is writing), the
    /// file is opened immutable, so not even WAL or SHM files appear; a database from an older
    /// segno is copied into memory and migrated there.
    public static func openForReading(path: String) throws -> StateStore? {
        guard access(path, F_OK) == 0 else { return nil }
        let file = try StateReader.open(path: path)
        if try file.read({ try StateMigrations.migrator.hasCompletedMigrations($0) }) {
            return try StateStore(writer: file, path: path, migrate: false)
        }
        let memory = try DatabaseQueue()
        try file.backup(to: memory)
        return try StateStore(writer: memory, path: path)
    }

    /// Opens (creating folders and the file if needed) and migrates the store.
    public convenience init(path: String) throws {
        var st = stat()
        if lstat(path, &st) == 0 && (st.st_mode & S_IFMT) != S_IFREG {
            throw AudioError.notAFile(path: path)
        }
        let dir = (path as NSString).deletingLastPathComponent
        try OutputFile.makeFolders(dir, for: path)
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        try self.init(writer: try DatabasePool(path: path, configuration: config), path: path)
    }

    /// Closes the database. Called when a run ends, so SQLite checkpoints the WAL and removes the
    /// `-wal` and `-shm` files: the state folder is left as one file that readers open immutable.
    public func close() {
        if let pool = db as? DatabasePool {
            // The pool's readers are read-only and close last, and a read-only connection cannot
            // checkpoint: one read-write connection opened and closed after them removes the WAL.
            guard (try? pool.close()) != nil, !path.isEmpty, let last = try? DatabaseQueue(path: path) else { return }
            try? last.close()
        }
        if let queue = db as? DatabaseQueue { try? queue.close() }
    }

    /// Every recording with its steps, keyed by relative path. One pass over each table (in id
    /// order: steps are keyed by recording id first); called once per run before planning.
    public func loadAll() throws -> StateIndex {
        try db.read { db in
            let recordings = try Int.fetchOne(db, sql: "SELECT count(*) FROM recording") ?? 0
            let stepCount = try Int.fetchOne(db, sql: "SELECT count(*) FROM step") ?? 0
            var b = StateIndex.Builder(recordings: recordings, steps: stepCount)
            let rows = try Row.fetchCursor(db, sql: "SELECT id, path, size, mtime_ns, inode, content_hash, duration, status, attempts, error, updated_at, failed_recipe, failure_class FROM recording ORDER BY id")
            while let r = try rows.next() {
                b.addRecording(id: r[0], path: r[1], identity: FileIdentity(size: r[2], mtimeNs: r[3], inode: r[4]),
                               contentHash: r[5], duration: r[6], status: RecordingStatus(rawValue: r[7]) ?? .failed,
                               attempts: r[8], error: r[9], updatedAt: r[10], failedRecipe: r[11],
                               failureClass: (r[12] as String?).flatMap(FailureClass.init(rawValue:)))
            }
            let steps = try Row.fetchCursor(db, sql: "SELECT recording_id, stage, fingerprint, source, output, output_hash, output_size, finished_at, detail FROM step ORDER BY recording_id")
            while let r = try steps.next() {
                b.addStep(recordingId: r[0], StepState(stage: r[1], fingerprint: r[2], source: r[3], output: r[4], outputHash: r[5], outputSize: r[6], finishedAt: r[7], detail: r[8]))
            }
            let prints = try Row.fetchCursor(db, sql: "SELECT recording_id, stage FROM fingerprint")
            while let r = try prints.next() { b.addFingerprinted(recordingId: r[0], stage: r[1]) }
            return StateIndex(building: &b)
        }
    }

    /// The recordings at `paths` with their steps (and the taps that fingerprinted them): their
    /// rows only, by the path index, 500 paths a statement. `find --measure` reads the hits of a
    /// search so, not the whole state.
    public func recordings(_ paths: [String]) throws -> [String: RecordingState] {
        try db.read { db in
            var out: [String: RecordingState] = [:]
            let wanted = Array(Set(paths))
            for start in stride(from: 0, to: wanted.count, by: 500) {
                let chunk = Array(wanted[start..<min(wanted.count, start + 500)])
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                var byId: [Int64: String] = [:]
                for r in try Row.fetchAll(db, sql: "SELECT id, path, size, mtime_ns, inode, content_hash, duration, status, attempts, error, updated_at, failed_recipe, failure_class FROM recording WHERE path IN (\(marks))",
                                          arguments: StatementArguments(chunk)) {
                    let id: Int64 = r[0], path: String = r[1]
                    byId[id] = path
                    out[path] = RecordingState(id: id, path: path, identity: FileIdentity(size: r[2], mtimeNs: r[3], inode: r[4]),
                                               contentHash: r[5], duration: r[6], status: RecordingStatus(rawValue: r[7]) ?? .failed,
                                               attempts: r[8], error: r[9], updatedAt: r[10], steps: [:], failedRecipe: r[11],
                                               failureClass: (r[12] as String?).flatMap(FailureClass.init(rawValue:)))
                }
                guard !byId.isEmpty else { continue }
                let ids = Array(byId.keys)
                let idMarks = Array(repeating: "?", count: ids.count).joined(separator: ",")
                for r in try Row.fetchAll(db, sql: "SELECT recording_id, stage, fingerprint, source, output, output_hash, output_size, finished_at, detail FROM step WHERE recording_id IN (\(idMarks))",
                                          arguments: StatementArguments(ids)) {
                    guard let path = byId[r[0]] else { continue }
                    let step = StepState(stage: r[1], fingerprint: r[2], source: r[3], output: r[4], outputHash: r[5], outputSize: r[6], finishedAt: r[7], detail: r[8])
                    out[path]?.steps[step.stage] = step
                }
                for r in try Row.fetchAll(db, sql: "SELECT recording_id, stage FROM fingerprint WHERE recording_id IN (\(idMarks))",
                                          arguments: StatementArguments(ids)) {
                    guard let path = byId[r[0]] else { continue }
                    out[path]?.fingerprinted.insert(r[1])
                }
            }
            return out
        }
    }

    /// The text a fingerprint stands for, if recorded.
    public func recipe(_ fingerprint: String) throws -> String? {
        try db.read { try String.fetchOne($0, sql: "SELECT text FROM recipe WHERE fingerprint = ?", arguments: [fingerprint]) }
    }

    /// Applies a batch in one transaction.
    public func apply(_ updates: [StateUpdate]) throws {
        guard !updates.isEmpty else { return }
        let now = Date().timeIntervalSince1970
        try db.write { db in
            let upsert = try db.cachedStatement(sql: """
                INSERT INTO recording (path, size, mtime_ns, inode, content_hash, duration, status, attempts, error, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, inode = excluded.inode,
                  content_hash = COALESCE(excluded.content_hash, recording.content_hash),
                  duration = COALESCE(excluded.duration, recording.duration), status = excluded.status,
                  attempts = excluded.attempts, error = excluded.error, updated_at = excluded.updated_at
                RETURNING id
                """)
            let step = try db.cachedStatement(sql: """
                INSERT OR REPLACE INTO step (recording_id, stage, fingerprint, source, output, output_hash, output_size, finished_at, detail)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            let recipe = try db.cachedStatement(sql: "INSERT OR IGNORE INTO recipe (fingerprint, text) VALUES (?, ?)")
            let failedRecipe = try db.cachedStatement(sql: """
                UPDATE recording SET failed_recipe = ?, failure_class = ?,
                  status = CASE WHEN EXISTS (SELECT 1 FROM step WHERE recording_id = recording.id AND source = ?) THEN 'partial' ELSE 'failed' END
                WHERE id = ?
                """)
            let clearClass = try db.cachedStatement(sql: "UPDATE recording SET failure_class = NULL, failed_recipe = NULL WHERE id = ?")
            let touch = try db.cachedStatement(sql: "UPDATE recording SET size = ?, mtime_ns = ?, inode = ?, updated_at = ? WHERE path = ?")
            let touchSteps = try db.cachedStatement(sql: "UPDATE step SET source = ? WHERE recording_id = (SELECT id FROM recording WHERE path = ?)")
            for u in updates {
                switch u {
                case let .done(path, id, hash, duration, steps, recipes):
                    let rid = try Int64.fetchOne(upsert, arguments: [path, id.size, id.mtimeNs, id.inode, hash, duration,
                                                                     RecordingStatus.done.rawValue, 0, nil, now])!
                    try clearClass.execute(arguments: [rid])
                    for (fp, text) in recipes { try recipe.execute(arguments: [fp, text]) }
                    for s in steps {
                        try step.execute(arguments: [rid, s.stage, s.fingerprint, s.source, s.output, s.outputHash, s.outputSize, s.finishedAt, s.detail])
                    }
                case let .failed(path, id, error, attempts, recipeFingerprint, failureClass, steps, recipes):
                    let rid = try Int64.fetchOne(upsert, arguments: [path, id.size, id.mtimeNs, id.inode, nil, nil,
                                                                     RecordingStatus.failed.rawValue, attempts, error, now])!
                    for (fp, text) in recipes { try recipe.execute(arguments: [fp, text]) }
                    for s in steps {
                        try step.execute(arguments: [rid, s.stage, s.fingerprint, s.source, s.output, s.outputHash, s.outputSize, s.finishedAt, s.detail])
                    }
                    try failedRecipe.execute(arguments: [recipeFingerprint, failureClass.rawValue, id.key, rid])
                case let .touched(path, id):
                    try touch.execute(arguments: [id.size, id.mtimeNs, id.inode, now, path])
                    try touchSteps.execute(arguments: [id.key, path])
                case let .archived(path, fingerprints, catalog):
                    try Self.applyArchive(db, path: path, fingerprints: fingerprints, catalog: catalog)
                case let .salvaged(path, report):
                    if let report {
                        try db.execute(sql: """
                            INSERT OR REPLACE INTO salvaged (recording_id, report, at) SELECT id, ?, ? FROM recording WHERE path = ?
                            """, arguments: [report, now, path])
                    } else {
                        try db.execute(sql: "DELETE FROM salvaged WHERE recording_id = (SELECT id FROM recording WHERE path = ?)", arguments: [path])
                    }
                }
            }
        }
    }

    /// Records the start of a run and returns its id.
    public func startRun(spec: String, specName: String) throws -> Int64 {
        try db.write { db in
            try db.execute(sql: "INSERT INTO run (started_at, spec, spec_name, segno_version, status) VALUES (?, ?, ?, ?, ?)",
                           arguments: [Date().timeIntervalSince1970, spec, specName, SegnoVersion.string, RunStatus.running.rawValue])
            return db.lastInsertedRowID
        }
    }

    /// Records how a run ended. A run that did nothing (`RunRecord.isNoOp`) right after another
    /// such run of the same spec is folded into that row (`repeats` + 1, its end and up-to-date
    /// count updated) so cron's every-minute runs do not flood `status`.
    public func finishRun(id: Int64, status: RunStatus, planned: Int, done: Int, failed: Int, skipped: Int, pruned: Int = 0) throws {
        try db.write { db in
            if RunRecord.isNoOp(status: status, planned: planned, done: done, failed: failed, pruned: pruned),
               let prev = try Row.fetchOne(db, sql: "SELECT id, status, planned, done, failed, pruned, spec = (SELECT spec FROM run WHERE id = ?) FROM run WHERE id < ? ORDER BY id DESC LIMIT 1", arguments: [id, id]),
               RunRecord.isNoOp(status: RunStatus(rawValue: prev[1]) ?? .killed, planned: prev[2], done: prev[3], failed: prev[4], pruned: prev[5]),
               prev[6] as Bool? == true {
                let previous: Int64 = prev[0]
                try db.execute(sql: "UPDATE run SET finished_at = ?, skipped = ?, repeats = repeats + 1 WHERE id = ?",
                               arguments: [Date().timeIntervalSince1970, skipped, previous])
                try db.execute(sql: "DELETE FROM run WHERE id = ?", arguments: [id])
                return
            }
            try db.execute(sql: "UPDATE run SET finished_at = ?, status = ?, planned = ?, done = ?, failed = ?, skipped = ?, pruned = ? WHERE id = ?",
                           arguments: [Date().timeIntervalSince1970, status.rawValue, planned, done, failed, skipped, pruned, id])
        }
    }

    /// Logs what a run pruned: each recording and the files and objects deleted for it.
    public func recordPruned(runId: Int64, _ entries: [(path: String, outputs: [String])]) throws {
        guard !entries.isEmpty else { return }
        let now = Date().timeIntervalSince1970
        try db.write { db in
            let st = try db.cachedStatement(sql: "INSERT INTO pruned (run_id, path, outputs, at) VALUES (?, ?, ?, ?)")
            for e in entries { try st.execute(arguments: [runId, e.path, StepState.encodeOutputs(e.outputs), now]) }
        }
    }

    /// The most recently pruned recordings, newest first: path, run, when.
    public func recentlyPruned(limit: Int = 20) throws -> [(path: String, runId: Int64, at: Double)] {
        try db.read { db in
            try Row.fetchAll(db, sql: "SELECT path, run_id, at FROM pruned ORDER BY id DESC LIMIT ?", arguments: [limit]).map {
                (path: $0[0], runId: $0[1], at: $0[2])
            }
        }
    }

    /// The most recent runs, newest first.
    public func recentRuns(limit: Int = 5) throws -> [RunRecord] { try runs("ORDER BY id DESC LIMIT ?", [limit]) }

    /// The run with this id, nil when the store has none (`report --run N`).
    public func run(id: Int64) throws -> RunRecord? { try runs("WHERE id = ?", [id]).first }

    private func runs(_ clause: String, _ arguments: StatementArguments) throws -> [RunRecord] {
        try db.read { db in
            return try Row.fetchAll(db, sql: "SELECT id, started_at, finished_at, spec, spec_name, status, planned, done, failed, skipped, repeats, pruned FROM run \(clause)", arguments: arguments).map {
                RunRecord(id: $0[0], startedAt: $0[1], finishedAt: $0[2], spec: $0[3], specName: $0[4],
                          status: RunStatus(rawValue: $0[5]) ?? .killed, planned: $0[6], done: $0[7], failed: $0[8], skipped: $0[9], repeats: $0[10], pruned: $0[11])
            }
        }
    }

    /// Recordings per status (`RecordingStatus` raw values: "done", "failed", "partial").
    public func statusCounts() throws -> [String: Int] {
        try db.read { db in
            var out: [String: Int] = [:]
            for r in try Row.fetchAll(db, sql: "SELECT status, COUNT(*) FROM recording GROUP BY status") { out[r[0]] = r[1] }
            return out
        }
    }

    /// Failed and partly done recordings: path, message, attempts, when, status and failure class.
    public func failures() throws -> [FailureRecord] {
        try db.read { db in
            try Row.fetchAll(db, sql: "SELECT path, COALESCE(error, ''), attempts, updated_at, status, failure_class FROM recording WHERE status != ? ORDER BY path",
                             arguments: [RecordingStatus.done.rawValue]).map {
                FailureRecord(path: $0[0], error: $0[1], attempts: $0[2], at: $0[3], status: RecordingStatus(rawValue: $0[4]) ?? .failed,
                              failureClass: ($0[5] as String?).flatMap(FailureClass.init(rawValue:)) ?? .environment)
            }
        }
    }

    public func salvagedRecordings() throws -> [SalvagedRecord] {
        try db.read { db in
            try Row.fetchAll(db, sql: "SELECT r.path, s.report, s.at FROM salvaged s JOIN recording r ON r.id = s.recording_id ORDER BY r.path").map {
                SalvagedRecord(path: $0[0], report: $0[1], at: $0[2])
            }
        }
    }

    /// Deletes recordings (and their steps) by relative path: `prune`.
    public func forget(paths: [String]) throws {
        guard !paths.isEmpty else { return }
        try db.write { db in
            let st = try db.cachedStatement(sql: "DELETE FROM recording WHERE path = ?")
            let kept = try db.cachedStatement(sql: "DELETE FROM speaker_kept WHERE path = ?")
            for p in paths {
                try st.execute(arguments: [p])
                try kept.execute(arguments: [p])
            }
        }
    }

    /// Marks runs left "running" by a killed process as interrupted. Called under the run lock.
    public func closeAbandonedRuns() throws {
        try db.write { try $0.execute(sql: "UPDATE run SET status = ? WHERE status = ?", arguments: [RunStatus.killed.rawValue, RunStatus.running.rawValue]) }
    }
}

/// Multipart uploads in flight, kept in the state database so a killed run resumes them.
/// Each call is its own transaction, written at once (not batched): a part recorded is a part
/// that need not be sent again.
extension StateStore: MultipartProgressStore {
    public func load(_ key: MultipartUploadKey) throws -> MultipartProgress? {
        try dbReader.read { db in
            guard let text = try String.fetchOne(db, sql: "SELECT progress FROM multipart WHERE bucket = ? AND key = ?", arguments: [key.bucket, key.key]) else { return nil }
            return try JSONDecoder().decode(MultipartProgress.self, from: Data(text.utf8))
        }
    }

    public func save(_ progress: MultipartProgress, for key: MultipartUploadKey) throws {
        let text = String(decoding: try JSONEncoder().encode(progress), as: UTF8.self)
        try dbReader.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO multipart (bucket, key, progress, started_at) VALUES (?, ?, ?, ?)",
                           arguments: [key.bucket, key.key, text, progress.startedAt.timeIntervalSince1970])
        }
    }

    public func clear(_ key: MultipartUploadKey) throws {
        try dbReader.write { try $0.execute(sql: "DELETE FROM multipart WHERE bucket = ? AND key = ?", arguments: [key.bucket, key.key]) }
    }

    /// Multipart uploads started before `date` (stale: to abort).
    public func multipartStarted(before date: Date) throws -> [(MultipartUploadKey, MultipartProgress)] {
        try dbReader.read { db in
            try Row.fetchAll(db, sql: "SELECT bucket, key, progress FROM multipart WHERE started_at < ?", arguments: [date.timeIntervalSince1970]).compactMap { r in
                let text: String = r[2]
                guard let p = try? JSONDecoder().decode(MultipartProgress.self, from: Data(text.utf8)) else { return nil }
                return (MultipartUploadKey(bucket: r[0], key: r[1]), p)
            }
        }
    }
}
