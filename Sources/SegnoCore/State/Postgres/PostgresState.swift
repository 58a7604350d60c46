import Foundation
import SegnoS3
import Synchronization

/// The state backend for many machines (`state: postgres://…`): the same tables and meaning as
/// SQLite, and claims instead of a global lock. A worker claims a recording with a lease (worker
/// id, host, pid, expiry) that its heartbeat renews; a lease that expires (the machine died,
/// `kill -9`) may be taken over by another worker; state is written only while the lease is still
/// this worker's, so a worker that lost its lease abandons the recording instead.
public final class PostgresState: StateBackend {
    let pool: PGPool
    /// "host:pid:random": this process's identity in `lease` and `run`.
    public let worker: String
    let host: String
    let pid: Int32
    /// Seconds a lease lasts without a heartbeat.
    public let leaseSeconds: Double

    init(pool: PGPool, leaseSeconds: Double) {
        self.pool = pool
        self.leaseSeconds = leaseSeconds
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, 255)
        host = String(cString: name)
        pid = getpid()
        worker = "\(host):\(pid):\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
    }

    static let recordingColumns = "r.id, r.path, r.size, r.mtime_ns, r.inode, r.content_hash, r.duration, r.status, r.attempts, r.error, r.updated_at, r.failed_recipe, r.failure_class"

    static func recording(_ row: [String?], at i: Int = 0) -> RecordingState {
        func int(_ k: Int) -> Int64 { Int64(row[i + k] ?? "0") ?? 0 }
        return RecordingState(id: int(0), path: row[i + 1] ?? "", identity: FileIdentity(size: int(2), mtimeNs: int(3), inode: int(4)),
                              contentHash: row[i + 5].flatMap(Self.data(hex:)), duration: row[i + 6].flatMap(Double.init),
                              status: RecordingStatus(rawValue: row[i + 7] ?? "") ?? .failed, attempts: Int(int(8)), error: row[i + 9],
                              updatedAt: row[i + 10].flatMap(Double.init) ?? 0, steps: [:], failedRecipe: row[i + 11],
                              failureClass: row[i + 12].flatMap(FailureClass.init(rawValue:)))
    }

    static func step(_ row: [String?], at i: Int) -> StepState {
        StepState(stage: row[i] ?? "", fingerprint: row[i + 1] ?? "", source: row[i + 2] ?? "", output: row[i + 3] ?? "[]",
                  outputHash: row[i + 4].flatMap(Self.data(hex:)) ?? Data(), outputSize: Int64(row[i + 5] ?? "0") ?? 0,
                  finishedAt: row[i + 6].flatMap(Double.init) ?? 0, detail: row[i + 7])
    }

    static func data(hex: String) -> Data? {
        var out = Data(capacity: hex.count / 2)
        var it = hex.utf8.makeIterator()
        while let a = it.next(), let b = it.next() {
            guard let hi = Int(String(UnicodeScalar(a)), radix: 16), let lo = Int(String(UnicodeScalar(b)), radix: 16) else { return nil }
            out.append(UInt8(hi * 16 + lo))
        }
        return out
    }

    public func loadAll() throws -> [String: RecordingState] {
        try pool.with { conn in
            var out: [String: RecordingState] = [:]
            var byId: [Int64: String] = [:]
            for row in try conn.exec("SELECT \(Self.recordingColumns) FROM recording r") {
                let r = Self.recording(row)
                out[r.path] = r
                byId[r.id] = r.path
            }
            for row in try conn.exec("SELECT recording_id, stage, fingerprint, source, output, output_hash, output_size, finished_at, detail FROM step") {
                guard let id = row[0].flatMap(Int64.init), let path = byId[id] else { continue }
                let s = Self.step(row, at: 1)
                out[path]?.steps[s.stage] = s
            }
            return out
        }
    }

    /// Takes a lease on `path` (or renews this worker's own) and returns the recording as stored
    /// now, in one statement; another worker's live lease means `heldElsewhere`.
    public func claim(_ path: String) throws -> ClaimResult {
        try pool.with { conn in
            let rows = try conn.exec("""
                WITH c AS (
                  INSERT INTO lease (path, worker, host, pid, expires_at) VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))
                  ON CONFLICT (path) DO UPDATE SET worker = excluded.worker, host = excluded.host, pid = excluded.pid,
                    claimed_at = now(), expires_at = excluded.expires_at
                  WHERE lease.expires_at < now() OR lease.worker = excluded.worker
                  RETURNING path)
                SELECT c.path, \(Self.recordingColumns),
                  (SELECT json_agg(json_build_array(s.stage, s.fingerprint, s.source, s.output, s.output_hash, s.output_size, s.finished_at, s.detail))
                   FROM step s WHERE s.recording_id = r.id)
                FROM c LEFT JOIN recording r ON r.path = c.path
                """, [path, worker, host, String(pid), String(leaseSeconds)])
            guard let row = rows.first else { return .heldElsewhere }
            guard row[1] != nil else { return .granted(refreshed: true, current: nil) }
            var rec = Self.recording(row, at: 1)
            if let json = row[14], let list = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[Any]] {
                for item in list {
                    let texts: [String?] = item.map { v in
                        if v is NSNull { return nil }
                        if let s = v as? String { return s }
                        if let n = v as? NSNumber { return n.stringValue }
                        return "\(v)"
                    }
                    let s = Self.step(texts, at: 0)
                    rec.steps[s.stage] = s
                }
            }
            return .granted(refreshed: true, current: rec)
        }
    }

    public func release(_ path: String) {
        _ = try? pool.with { try $0.exec("DELETE FROM lease WHERE path = $1 AND worker = $2", [path, worker]) }
    }

    /// Renews every lease this worker holds. Called by the heartbeat.
    func renewLeases() throws {
        try pool.with { try $0.exec("UPDATE lease SET expires_at = now() + make_interval(secs => $2) WHERE worker = $1", [worker, String(leaseSeconds)]) }
    }

    /// Applies updates in one transaction. An update for a recording whose lease is no longer
    /// this worker's is dropped: another worker took it over and its result counts.
    public func apply(_ updates: [StateUpdate]) throws {
        guard !updates.isEmpty else { return }
        let now = String(Date().timeIntervalSince1970)
        try pool.transaction { conn in
            for u in updates {
                let path: String
                switch u {
                case .done(let p, _, _, _, _, _), .failed(let p, _, _, _, _, _, _, _), .touched(let p, _): path = p
                case .archived: continue  // fingerprints and search are SQLite-only for now (README)
                }
                // A result is written only under this worker's lease; `touched` needs no claim.
                if case .touched = u {} else if try conn.exec("SELECT 1 FROM lease WHERE path = $1 AND worker = $2 FOR UPDATE", [path, worker]).isEmpty {
                    continue
                }
                switch u {
                case let .done(path, id, hash, duration, steps, recipes):
                    let rid = try Self.upsert(conn, path, id, hash: hash, duration: duration, status: .done, attempts: 0, error: nil, now: now)
                    try conn.exec("UPDATE recording SET failure_class = NULL, failed_recipe = NULL WHERE id = $1", [rid])
                    try Self.insert(conn, rid: rid, steps: steps, recipes: recipes)
                case let .failed(path, id, error, attempts, recipe, cls, steps, recipes):
                    let rid = try Self.upsert(conn, path, id, hash: nil, duration: nil, status: .failed, attempts: attempts, error: error, now: now)
                    try Self.insert(conn, rid: rid, steps: steps, recipes: recipes)
                    try conn.exec("""
                        UPDATE recording SET failed_recipe = $2, failure_class = $3,
                          status = CASE WHEN EXISTS (SELECT 1 FROM step WHERE recording_id = $1 AND source = $4) THEN 'partial' ELSE 'failed' END
                        WHERE id = $1
                        """, [rid, recipe, cls.rawValue, id.key])
                case let .touched(path, id):
                    try conn.exec("UPDATE recording SET size = $2, mtime_ns = $3, inode = $4, updated_at = $5 WHERE path = $1",
                                  [path, String(id.size), String(id.mtimeNs), String(id.inode), now])
                    try conn.exec("UPDATE step SET source = $2 WHERE recording_id = (SELECT id FROM recording WHERE path = $1)", [path, id.key])
                case .archived:
                    continue
                }
                try conn.exec("DELETE FROM lease WHERE path = $1 AND worker = $2", [path, worker])
            }
        }
    }

    static func upsert(_ conn: PGConnection, _ path: String, _ id: FileIdentity, hash: Data?, duration: Double?, status: RecordingStatus,
                       attempts: Int, error: String?, now: String) throws -> String {
        let rows = try conn.exec("""
            INSERT INTO recording (path, size, mtime_ns, inode, content_hash, duration, status, attempts, error, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, inode = excluded.inode,
              content_hash = COALESCE(excluded.content_hash, recording.content_hash),
              duration = COALESCE(excluded.duration, recording.duration), status = excluded.status,
              attempts = excluded.attempts, error = excluded.error, updated_at = excluded.updated_at
            RETURNING id
            """, [path, String(id.size), String(id.mtimeNs), String(id.inode), hash.map(FileHash.hex), duration.map { String($0) },
                  status.rawValue, String(attempts), error, now])
        return rows[0][0] ?? "0"
    }

    static func insert(_ conn: PGConnection, rid: String, steps: [StepState], recipes: [String: String]) throws {
        for (fp, text) in recipes { try conn.exec("INSERT INTO recipe (fingerprint, text) VALUES ($1, $2) ON CONFLICT DO NOTHING", [fp, text]) }
        for s in steps {
            try conn.exec("""
                INSERT INTO step (recording_id, stage, fingerprint, source, output, output_hash, output_size, finished_at, detail)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                ON CONFLICT (recording_id, stage) DO UPDATE SET fingerprint = excluded.fingerprint, source = excluded.source,
                  output = excluded.output, output_hash = excluded.output_hash, output_size = excluded.output_size,
                  finished_at = excluded.finished_at, detail = excluded.detail
                """, [rid, s.stage, s.fingerprint, s.source, s.output, FileHash.hex(s.outputHash), String(s.outputSize), String(s.finishedAt), s.detail])
        }
    }

    public func recipe(_ fingerprint: String) throws -> String? {
        try pool.with { try $0.exec("SELECT text FROM recipe WHERE fingerprint = $1", [fingerprint]).first?[0] ?? nil }
    }

    public func forget(paths: [String]) throws {
        guard !paths.isEmpty else { return }
        try pool.transaction { conn in for p in paths { try conn.exec("DELETE FROM recording WHERE path = $1", [p]) } }
    }

    public func startRun(spec: String, specName: String) throws -> Int64 {
        try pool.with { conn in
            let rows = try conn.exec("""
                INSERT INTO run (started_at, spec, spec_name, segno_version, status, worker, host, pid)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id
                """, [String(Date().timeIntervalSince1970), spec, specName, SegnoVersion.string, RunStatus.running.rawValue, worker, host, String(pid)])
            return Int64(rows[0][0] ?? "0") ?? 0
        }
    }

    /// As SQLite's: a no-op run right after another finished no-op run of the same spec is folded
    /// into that row (`repeats` + 1), whichever worker ran it.
    public func finishRun(id: Int64, status: RunStatus, planned: Int, done: Int, failed: Int, skipped: Int, pruned: Int) throws {
        let now = String(Date().timeIntervalSince1970)
        if RunRecord.isNoOp(status: status, planned: planned, done: done, failed: failed, pruned: pruned) {
            let folded = try pool.transaction { conn -> Bool in
                let prev = try conn.exec("""
                    SELECT id FROM run WHERE id < $1 AND finished_at IS NOT NULL AND status = 'done' AND planned = 0 AND done = 0
                      AND failed = 0 AND pruned = 0 AND spec = (SELECT spec FROM run WHERE id = $1) ORDER BY id DESC LIMIT 1 FOR UPDATE
                    """, [String(id)])
                guard let previous = prev.first?[0] ?? nil else { return false }
                try conn.exec("UPDATE run SET finished_at = $2, skipped = $3, repeats = repeats + 1 WHERE id = $1", [previous, now, String(skipped)])
                try conn.exec("DELETE FROM run WHERE id = $1", [String(id)])
                return true
            }
            if folded { return }
        }
        try pool.with {
            try $0.exec("UPDATE run SET finished_at = $2, status = $3, planned = $4, done = $5, failed = $6, skipped = $7, pruned = $8 WHERE id = $1",
                        [String(id), String(Date().timeIntervalSince1970), status.rawValue, String(planned), String(done), String(failed), String(skipped), String(pruned)])
        }
    }

    /// Runs left `running` by workers whose leases are all gone and that started long ago are
    /// marked killed; a live worker's run is left alone.
    public func closeAbandonedRuns() throws {
        try pool.with {
            try $0.exec("""
                UPDATE run SET status = $1 WHERE status = $2 AND worker <> $3
                  AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.worker = run.worker AND lease.expires_at > now())
                  AND started_at < $4
                """, [RunStatus.killed.rawValue, RunStatus.running.rawValue, worker, String(Date().timeIntervalSince1970 - 2 * leaseSeconds)])
        }
    }

    public func recordPruned(runId: Int64, _ entries: [(path: String, outputs: [String])]) throws {
        guard !entries.isEmpty else { return }
        let now = String(Date().timeIntervalSince1970)
        try pool.transaction { conn in
            for e in entries {
                try conn.exec("INSERT INTO pruned (run_id, path, outputs, at) VALUES ($1, $2, $3, $4)", [String(runId), e.path, StepState.encodeOutputs(e.outputs), now])
            }
        }
    }

    public func close() {}

    public func statusCounts() throws -> [String: Int] {
        try pool.with { conn in
            var out: [String: Int] = [:]
            for r in try conn.exec("SELECT status, count(*) FROM recording GROUP BY status") { out[r[0] ?? ""] = Int(r[1] ?? "0") }
            return out
        }
    }

    public func failures() throws -> [FailureRecord] {
        try pool.with { conn in
            try conn.exec("SELECT path, COALESCE(error, ''), attempts, updated_at, status, failure_class FROM recording WHERE status <> $1 ORDER BY path",
                          [RecordingStatus.done.rawValue]).map {
                FailureRecord(path: $0[0] ?? "", error: $0[1] ?? "", attempts: Int($0[2] ?? "0") ?? 0, at: Double($0[3] ?? "0") ?? 0,
                              status: RecordingStatus(rawValue: $0[4] ?? "") ?? .failed,
                              failureClass: $0[5].flatMap(FailureClass.init(rawValue:)) ?? .environment)
            }
        }
    }

    public func recentRuns(limit: Int) throws -> [RunRecord] {
        try pool.with { conn in
            // A reader may see a store from before pg2 (readers never migrate).
            let hasRepeats = try conn.exec("SELECT 1 FROM information_schema.columns WHERE table_name = 'run' AND column_name = 'repeats'").isEmpty == false
            return try conn.exec("SELECT id, started_at, finished_at, spec, spec_name, status, planned, done, failed, skipped, \(hasRepeats ? "repeats" : "1") FROM run ORDER BY id DESC LIMIT $1",
                          [String(limit)]).map {
                RunRecord(id: Int64($0[0] ?? "0") ?? 0, startedAt: Double($0[1] ?? "0") ?? 0, finishedAt: $0[2].flatMap(Double.init),
                          spec: $0[3] ?? "", specName: $0[4] ?? "", status: RunStatus(rawValue: $0[5] ?? "") ?? .killed,
                          planned: Int($0[6] ?? "0") ?? 0, done: Int($0[7] ?? "0") ?? 0, failed: Int($0[8] ?? "0") ?? 0, skipped: Int($0[9] ?? "0") ?? 0, repeats: Int($0[10] ?? "1") ?? 1)
            }
        }
    }

    public func recentlyPruned(limit: Int) throws -> [(path: String, runId: Int64, at: Double)] {
        try pool.with { conn in
            try conn.exec("SELECT path, run_id, at FROM pruned ORDER BY id DESC LIMIT $1", [String(limit)]).map {
                (path: $0[0] ?? "", runId: Int64($0[1] ?? "0") ?? 0, at: Double($0[2] ?? "0") ?? 0)
            }
        }
    }

    /// The fleet: per worker with live or expired leases, its host, pid, claims and expiry.
    public func fleet() throws -> [WorkerInfo] {
        try pool.with { conn in
            try conn.exec("""
                SELECT worker, host, pid, count(*), bool_and(expires_at < now())
                FROM lease GROUP BY worker, host, pid ORDER BY worker
                """).map {
                WorkerInfo(worker: $0[0] ?? "", host: $0[1] ?? "", pid: Int($0[2] ?? "0") ?? 0, claimed: Int($0[3] ?? "0") ?? 0,
                           expired: $0[4] == "t")
            }
        }
    }

    // MARK: multipart progress

    public func load(_ key: MultipartUploadKey) throws -> MultipartProgress? {
        guard let text = try pool.with({ try $0.exec("SELECT progress FROM multipart WHERE bucket = $1 AND key = $2", [key.bucket, key.key]).first?[0] ?? nil }) else { return nil }
        return try JSONDecoder().decode(MultipartProgress.self, from: Data(text.utf8))
    }

    public func save(_ progress: MultipartProgress, for key: MultipartUploadKey) throws {
        let text = String(decoding: try JSONEncoder().encode(progress), as: UTF8.self)
        try pool.with {
            try $0.exec("""
                INSERT INTO multipart (bucket, key, progress, started_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (bucket, key) DO UPDATE SET progress = excluded.progress
                """, [key.bucket, key.key, text, String(progress.startedAt.timeIntervalSince1970)])
        }
    }

    public func clear(_ key: MultipartUploadKey) throws {
        try pool.with { try $0.exec("DELETE FROM multipart WHERE bucket = $1 AND key = $2", [key.bucket, key.key]) }
    }

    public func multipartStarted(before date: Date) throws -> [(MultipartUploadKey, MultipartProgress)] {
        try pool.with { conn in
            try conn.exec("SELECT bucket, key, progress FROM multipart WHERE started_at < $1", [String(date.timeIntervalSince1970)]).compactMap { r in
                guard let p = try? JSONDecoder().decode(MultipartProgress.self, from: Data((r[2] ?? "").utf8)) else { return nil }
                return (MultipartUploadKey(bucket: r[0] ?? "", key: r[1] ?? ""), p)
            }
        }
    }
}

/// One worker as `segno status` shows the fleet.
public struct WorkerInfo: Sendable {
    public var worker: String
    public var host: String
    public var pid: Int
    public var claimed: Int
    /// True when every lease of the worker expired (it died or stalls).
    public var expired: Bool
}

/// `state: postgres://…`: no run lock (exit 75 is SQLite's); each worker claims recordings.
public struct PostgresStateLocation: StateLocation {
    public let url: String
    public let leaseSeconds: Double

    public init(url: String, leaseSeconds: Double = 60) {
        self.url = url
        self.leaseSeconds = leaseSeconds
    }

    /// The URL as shown in messages: without a password, if one was written in it.
    public var shown: String {
        guard var c = URLComponents(string: url) else { return "postgres://…" }
        if c.password != nil { c.password = "***" }
        return c.string ?? "postgres://…"
    }

    /// Keeps this worker's leases alive while it runs; stops (and frees what it still holds) when released.
    final class Heartbeat: RunHold, @unchecked Sendable {
        let state: PostgresState
        let timer: DispatchSourceTimer
        init(state: PostgresState) {
            self.state = state
            timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "segno.lease-heartbeat"))
            let every = max(0.5, state.leaseSeconds / 3)
            timer.schedule(deadline: .now() + every, repeating: every)
            timer.setEventHandler { [state] in try? state.renewLeases() }
            timer.resume()
        }
        deinit {
            timer.cancel()
            _ = try? state.pool.with { try $0.exec("DELETE FROM lease WHERE worker = $1", [state.worker]) }
        }
    }

    public func openForRun() throws(RunError) -> (hold: any RunHold, store: any StateBackend) {
        let state = PostgresState(pool: PGPool(url: url), leaseSeconds: leaseSeconds)
        do {
            try state.pool.with { try PostgresMigrations.migrate($0) }
            try state.closeAbandonedRuns()
        } catch {
            throw .state("\(shown): \(error)")
        }
        return (Heartbeat(state: state), state)
    }

    public func openForReading() throws(RunError) -> (any StateBackend)? {
        let state = PostgresState(pool: PGPool(url: url, patience: 5), leaseSeconds: leaseSeconds)
        do {
            guard try state.pool.with({ try PostgresMigrations.isCurrent($0) }) else { return nil }
        } catch {
            throw .state("\(shown): \(error)")
        }
        return state
    }
}
