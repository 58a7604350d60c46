import Foundation
import SegnoCore
import SegnoS3
import Synchronization

/// The state backend for many machines (`state: postgres://…`): the same tables and meaning as
/// SQLite, and claims instead of a global lock. A worker claims a recording with a lease (worker
/// id, host, pid, expiry) that its heartbeat renews; a lease that expires (the machine died,
/// `kill -9`) may be taken over by another worker; state is written only while the lease is still
/// this worker's, so a worker that lost its lease abandons the recording instead.
public final class PostgresState: StateBackend {
    package let pool: PGPool
    /// "host:pid:random": this process's identity in `lease` and `run`.
    public let worker: String
    package let host: String
    package let pid: Int32
    /// Seconds a lease lasts without a heartbeat.
    public let leaseSeconds: Double

    package init(pool: PGPool, leaseSeconds: Double) {
        self.pool = pool
        self.leaseSeconds = leaseSeconds
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, 255)
        host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        pid = getpid()
        worker = "\(host):\(pid):\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
    }

    public var claimsRecordings: Bool { true }

    static package let recordingColumns = "r.id, r.path, r.size, r.mtime_ns, r.inode, r.content_hash, r.duration, r.status, r.attempts, r.error, r.updated_at, r.failed_recipe, r.failure_class"

    static package func recording(_ row: [String?], at i: Int = 0) -> RecordingState {
        func int(_ k: Int) -> Int64 { Int64(row[i + k] ?? "0") ?? 0 }
        return RecordingState(id: int(0), path: row[i + 1] ?? "", identity: FileIdentity(size: int(2), mtimeNs: int(3), inode: int(4)),
                              contentHash: row[i + 5].flatMap(Self.data(hex:)), duration: row[i + 6].flatMap(Double.init),
                              status: RecordingStatus(rawValue: row[i + 7] ?? "") ?? .failed, attempts: Int(int(8)), error: row[i + 9],
                              updatedAt: row[i + 10].flatMap(Double.init) ?? 0, steps: [:], failedRecipe: row[i + 11],
                              failureClass: row[i + 12].flatMap(FailureClass.init(rawValue:)))
    }

    static package func step(_ row: [String?], at i: Int) -> StepState {
        StepState(stage: row[i] ?? "", fingerprint: row[i + 1] ?? "", source: row[i + 2] ?? "", output: row[i + 3] ?? "[]",
                  outputHash: row[i + 4].flatMap(Self.data(hex:)) ?? Data(), outputSize: Int64(row[i + 5] ?? "0") ?? 0,
                  finishedAt: row[i + 6].flatMap(Double.init) ?? 0, detail: row[i + 7])
    }

    /// The bytes of a hex column (hashes), or nil when it is not hex.
    static package func data(hex: String) -> Data? { Hex.decode(hex).map { Data($0) } }

    /// Every recording with its steps, read in one REPEATABLE READ transaction together with the
    /// transaction snapshot it saw: a later claim skips a recording whose result another worker
    /// wrote after that snapshot (`doneElsewhere`), so the plan made from it never redoes it.
    public func loadAll() throws -> StateIndex {
        try pool.with { conn in
            try conn.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            let snap = try conn.exec("SELECT pg_current_snapshot()::text").first?[0] ?? nil
            let counts = try conn.exec("SELECT (SELECT count(*) FROM recording), (SELECT count(*) FROM step)").first
            var b = StateIndex.Builder(recordings: Int(counts?[0] ?? "0") ?? 0, steps: Int(counts?[1] ?? "0") ?? 0)
            try conn.forEachRow("SELECT \(Self.recordingColumns) FROM recording r ORDER BY r.id") { row in
                let r = Self.recording(row)
                b.addRecording(id: r.id, path: r.path, identity: r.identity, contentHash: r.contentHash, duration: r.duration, status: r.status,
                               attempts: r.attempts, error: r.error, updatedAt: r.updatedAt, failedRecipe: r.failedRecipe, failureClass: r.failureClass)
            }
            try conn.forEachRow("SELECT recording_id, stage, fingerprint, source, output, output_hash, output_size, finished_at, detail FROM step ORDER BY recording_id") { row in
                guard let id = row[0].flatMap(Int64.init) else { return }
                b.addStep(recordingId: id, Self.step(row, at: 1))
            }
            try conn.forEachRow("SELECT recording_id, stage FROM fingerprint") { row in
                guard let id = row[0].flatMap(Int64.init), let stage = row[1] else { return }
                b.addFingerprinted(recordingId: id, stage: stage)
            }
            try conn.exec("COMMIT")
            snapshot.withLock { $0 = snap }
            return StateIndex(building: &b)
        }
    }

    /// The snapshot of the last `loadAll` (text of `pg_snapshot`); nil before the first.
    package let snapshot = Mutex<String?>(nil)

    /// Claims a batch of recordings in one statement. A recording without a lease row gets one; an
    /// expired lease (or this worker's own) is taken over with `FOR UPDATE SKIP LOCKED`, so a row
    /// another worker is claiming or writing at this moment is skipped, never waited for. A
    /// recording whose result was written (by any worker) after this worker's snapshot is
    /// `doneElsewhere`; one under another worker's live lease is `heldElsewhere`. Called by the
    /// runner's claim queue on a worker thread, for 1…32 paths at a time.
    public func claim(_ paths: [String]) throws -> [String: ClaimResult] {
        guard !paths.isEmpty else { return [:] }
        let snap = snapshot.withLock { $0 }
        return try pool.with { conn in
            let rows = try conn.exec("""
                WITH want AS (SELECT p AS path FROM unnest($5::text[]) AS p),
                snap AS (SELECT COALESCE($6::pg_snapshot, pg_current_snapshot()) AS s),
                ins AS (
                  INSERT INTO lease (path, worker, host, pid, expires_at)
                  SELECT path, $1::text, $2::text, $3::int4, now() + make_interval(secs => $4::float8) FROM want ORDER BY path
                  ON CONFLICT (path) DO NOTHING RETURNING path),
                took AS (
                  UPDATE lease l SET worker = $1::text, host = $2::text, pid = $3::int4, claimed_at = now(),
                    expires_at = now() + make_interval(secs => $4::float8), finished_xid = NULL
                  FROM (SELECT l2.path FROM lease l2 JOIN want USING (path), snap
                        WHERE (l2.expires_at < now() OR l2.worker = $1::text)
                          AND (l2.finished_xid IS NULL OR pg_visible_in_snapshot(l2.finished_xid, snap.s))
                        ORDER BY l2.path FOR UPDATE OF l2 SKIP LOCKED) t
                  WHERE l.path = t.path RETURNING l.path)
                SELECT path, 'c' FROM ins
                UNION ALL SELECT path, 'c' FROM took
                UNION ALL SELECT l.path, 'x' FROM lease l JOIN want USING (path), snap
                  WHERE l.finished_xid IS NOT NULL AND NOT pg_visible_in_snapshot(l.finished_xid, snap.s)
                """, [worker, host, String(pid), String(leaseSeconds), PGArray.text(paths), snap])
            var out: [String: ClaimResult] = [:]
            for p in paths { out[p] = .heldElsewhere }
            for r in rows {
                guard let p = r[0] else { continue }
                out[p] = r[1] == "c" ? .granted : .doneElsewhere
            }
            return out
        }
    }

    /// Gives a claim back (interrupted, still being written): the lease row goes, so any worker
    /// may take the recording at once.
    public func release(_ path: String) {
        _ = try? pool.with { try $0.exec("DELETE FROM lease WHERE path = $1 AND worker = $2 AND finished_xid IS NULL", [path, worker]) }
    }

    /// Renews every lease this worker holds, in one statement. Called by the heartbeat.
    package func renewLeases() throws {
        try pool.with {
            try $0.exec("UPDATE lease SET expires_at = now() + make_interval(secs => $2) WHERE worker = $1 AND finished_xid IS NULL",
                        [worker, String(leaseSeconds)])
        }
    }

    /// Applies updates: every result of the batch in one statement (the lease check, the
    /// recordings, their steps and recipes, and the lease's release), plus one for `touched`
    /// sources. A result for a recording whose lease is no longer this worker's is dropped:
    /// another worker took it over and its result counts. Called by the state writer.
    public func apply(_ updates: [StateUpdate]) throws {
        var results: [StateUpdate] = []
        var touched: [(String, FileIdentity)] = []
        var salvaged: [(path: String, report: String?)] = []
        var archived: [(path: String, fingerprints: [String: AudioFingerprint], catalog: CatalogEntry?)] = []
        for u in updates {
            switch u {
            case .done, .failed: results.append(u)
            case let .touched(path, id): touched.append((path, id))
            case let .salvaged(path, report): salvaged.append((path, report))
            case let .archived(path, fingerprints, catalog): archived.append((path, fingerprints, catalog))
            }
        }

        let now = String(Date().timeIntervalSince1970)
        // One statement may not change a row twice: a path seen again starts a new statement.
        var chunk: [StateUpdate] = []
        var seen = Set<String>()
        for u in results {
            let path: String
            switch u {
            case .done(let p, _, _, _, _, _), .failed(let p, _, _, _, _, _, _, _): path = p
            default: continue
            }
            if seen.contains(path) {
                try writeResults(chunk, now: now)
                chunk = []
                seen = []
            }
            seen.insert(path)
            chunk.append(u)
        }
        try writeResults(chunk, now: now)
        if !touched.isEmpty {
            try pool.with {
                try $0.exec("""
                    WITH t AS (SELECT * FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::text[]) AS t(path, size, mtime_ns, inode, key)),
                    r AS (UPDATE recording SET size = t.size, mtime_ns = t.mtime_ns, inode = t.inode, updated_at = $6
                          FROM t WHERE recording.path = t.path RETURNING recording.id, t.key)
                    UPDATE step SET source = r.key FROM r WHERE step.recording_id = r.id
                    """, [PGArray.text(touched.map(\.0)), PGArray.numbers(touched.map { $0.1.size }), PGArray.numbers(touched.map { $0.1.mtimeNs }),
                          PGArray.numbers(touched.map { $0.1.inode }), PGArray.text(touched.map { $0.1.key }), now])
            }
        }
        if !salvaged.isEmpty { try writeSalvaged(salvaged, now: Date().timeIntervalSince1970) }
        if !archived.isEmpty { try writeArchive(archived) }
    }

    /// Writes finished and failed recordings (distinct paths) in one statement. The lease row is
    /// stamped with the writing transaction's id (and expires at once) instead of deleted: a
    /// worker whose snapshot predates that transaction is told `doneElsewhere` when it asks.
    package func writeResults(_ updates: [StateUpdate], now: String) throws {
        guard !updates.isEmpty else { return }
        var paths: [String?] = [], sizes: [Int64?] = [], mtimes: [Int64?] = [], inodes: [Int64?] = [], hashes: [String?] = []
        var durations: [Double?] = [], statuses: [String?] = [], attempts: [Int?] = [], errors: [String?] = []
        var recipesFailed: [String?] = [], classes: [String?] = [], keys: [String?] = []
        var steps: [(String, StepState)] = []
        var recipes: [String: String] = [:]
        for u in updates {
            switch u {
            case let .done(path, id, hash, duration, st, rc):
                paths.append(path); sizes.append(id.size); mtimes.append(id.mtimeNs); inodes.append(id.inode)
                hashes.append(hash.map(FileHash.hex)); durations.append(duration); statuses.append(RecordingStatus.done.rawValue)
                attempts.append(0); errors.append(nil); recipesFailed.append(nil); classes.append(nil); keys.append(id.key)
                steps += st.map { (path, $0) }
                recipes.merge(rc) { a, _ in a }
            case let .failed(path, id, error, count, recipe, cls, st, rc):
                paths.append(path); sizes.append(id.size); mtimes.append(id.mtimeNs); inodes.append(id.inode)
                hashes.append(nil); durations.append(nil); statuses.append(RecordingStatus.failed.rawValue)
                attempts.append(count); errors.append(error); recipesFailed.append(recipe); classes.append(cls.rawValue); keys.append(id.key)
                steps += st.map { (path, $0) }
                recipes.merge(rc) { a, _ in a }
            default: continue
            }
        }
        // Recipes in one order everywhere: two workers inserting the same ones never deadlock.
        let recipeList = recipes.sorted { $0.key < $1.key }
        try pool.with { conn in
            try conn.exec("""
                WITH u AS (
                  SELECT * FROM unnest($2::text[], $3::int8[], $4::int8[], $5::int8[], $6::text[], $7::float8[], $8::text[], $9::int4[],
                                       $10::text[], $11::text[], $12::text[], $13::text[])
                    AS u(path, size, mtime_ns, inode, content_hash, duration, status, attempts, error, failed_recipe, failure_class, key)),
                mine AS (
                  UPDATE lease l SET finished_xid = pg_current_xact_id(), expires_at = now()
                  FROM u WHERE l.path = u.path AND l.worker = $1::text AND l.finished_xid IS NULL RETURNING l.path),
                s AS (
                  SELECT * FROM unnest($14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::text[], $20::int8[], $21::float8[], $22::text[])
                    AS s(path, stage, fingerprint, source, output, output_hash, output_size, finished_at, detail)),
                rec AS (
                  INSERT INTO recording (path, size, mtime_ns, inode, content_hash, duration, status, attempts, error, updated_at, failed_recipe, failure_class)
                  SELECT u.path, u.size, u.mtime_ns, u.inode, u.content_hash, u.duration,
                    CASE WHEN u.status <> 'failed' THEN u.status
                         WHEN EXISTS (SELECT 1 FROM s WHERE s.path = u.path AND s.source = u.key)
                           OR EXISTS (SELECT 1 FROM recording r0 JOIN step st ON st.recording_id = r0.id WHERE r0.path = u.path AND st.source = u.key)
                         THEN 'partial' ELSE 'failed' END,
                    u.attempts, u.error, $23::float8, u.failed_recipe, u.failure_class
                  FROM u JOIN mine ON mine.path = u.path
                  ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, inode = excluded.inode,
                    content_hash = COALESCE(excluded.content_hash, recording.content_hash),
                    duration = COALESCE(excluded.duration, recording.duration), status = excluded.status,
                    attempts = excluded.attempts, error = excluded.error, updated_at = excluded.updated_at,
                    failed_recipe = excluded.failed_recipe, failure_class = excluded.failure_class
                  RETURNING id, path),
                rcp AS (INSERT INTO recipe (fingerprint, text) SELECT * FROM unnest($24::text[], $25::text[]) ON CONFLICT DO NOTHING)
                INSERT INTO step (recording_id, stage, fingerprint, source, output, output_hash, output_size, finished_at, detail)
                SELECT rec.id, s.stage, s.fingerprint, s.source, s.output, s.output_hash, s.output_size, s.finished_at, s.detail
                FROM s JOIN rec ON rec.path = s.path
                ON CONFLICT (recording_id, stage) DO UPDATE SET fingerprint = excluded.fingerprint, source = excluded.source,
                  output = excluded.output, output_hash = excluded.output_hash, output_size = excluded.output_size,
                  finished_at = excluded.finished_at, detail = excluded.detail
                """, [worker, PGArray.text(paths), PGArray.numbers(sizes), PGArray.numbers(mtimes), PGArray.numbers(inodes), PGArray.text(hashes),
                      PGArray.numbers(durations), PGArray.text(statuses), PGArray.numbers(attempts), PGArray.text(errors),
                      PGArray.text(recipesFailed), PGArray.text(classes), PGArray.text(keys),
                      PGArray.text(steps.map(\.0)), PGArray.text(steps.map(\.1.stage)), PGArray.text(steps.map(\.1.fingerprint)),
                      PGArray.text(steps.map(\.1.source)), PGArray.text(steps.map(\.1.output)), PGArray.text(steps.map { FileHash.hex($0.1.outputHash) }),
                      PGArray.numbers(steps.map(\.1.outputSize)), PGArray.numbers(steps.map(\.1.finishedAt)), PGArray.text(steps.map(\.1.detail)),
                      now, PGArray.text(recipeList.map(\.key)), PGArray.text(recipeList.map(\.value))])
        }
    }

    /// Records (or, for nil, removes) what salvage recovered of recordings whose results are written.
    package func writeSalvaged(_ entries: [(path: String, report: String?)], now: Double) throws {
        let kept = entries.filter { $0.report != nil }, cleared = entries.filter { $0.report == nil }
        try pool.with { conn in
            try conn.exec("""
                WITH gone AS (DELETE FROM salvaged WHERE recording_id IN (SELECT id FROM recording WHERE path = ANY($1::text[])))
                INSERT INTO salvaged (recording_id, report, at)
                SELECT r.id, u.report, $4::float8 FROM unnest($2::text[], $3::text[]) AS u(path, report) JOIN recording r ON r.path = u.path
                ON CONFLICT (recording_id) DO UPDATE SET report = excluded.report, at = excluded.at
                """, [PGArray.text(cleared.map(\.path)), PGArray.text(kept.map(\.path)), PGArray.text(kept.map(\.report)), String(now)])
        }
    }

    public func salvagedRecordings() throws -> [SalvagedRecord] {
        try pool.with { conn in
            try conn.exec("SELECT r.path, s.report, s.at FROM salvaged s JOIN recording r ON r.id = s.recording_id ORDER BY r.path").compactMap { row in
                guard let path = row[0], let report = row[1] else { return nil }
                return SalvagedRecord(path: path, report: report, at: row[2].flatMap(Double.init) ?? 0)
            }
        }
    }

    public func recipe(_ fingerprint: String) throws -> String? {
        try pool.with { try $0.exec("SELECT text FROM recipe WHERE fingerprint = $1", [fingerprint]).first?[0] ?? nil }
    }

    public func forget(paths: [String]) throws {
        guard !paths.isEmpty else { return }
        try pool.with { conn in
            try conn.exec("""
                WITH gone AS (DELETE FROM recording WHERE path = ANY($1::text[]) RETURNING path),
                  kept AS (DELETE FROM speaker_kept WHERE path = ANY($1::text[]))
                DELETE FROM lease WHERE path IN (SELECT path FROM gone) AND finished_xid IS NOT NULL
                """, [PGArray.text(paths)])
        }
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
                  AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.worker = run.worker AND lease.expires_at > now() AND lease.finished_xid IS NULL)
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
        try runs("ORDER BY id DESC LIMIT $1", [String(limit)])
    }

    /// Runs as `clause` (with `params`) selects them. Readers see only a current schema (they never
    /// migrate, and open nothing older: `PostgresMigrations.isCurrent`).
    package func runs(_ clause: String, _ params: [String?]) throws -> [RunRecord] {
        try pool.with { conn in
            try conn.exec("SELECT id, started_at, finished_at, spec, spec_name, status, planned, done, failed, skipped, repeats, pruned FROM run \(clause)",
                          params).map {
                RunRecord(id: Int64($0[0] ?? "0") ?? 0, startedAt: Double($0[1] ?? "0") ?? 0, finishedAt: $0[2].flatMap(Double.init),
                          spec: $0[3] ?? "", specName: $0[4] ?? "", status: RunStatus(rawValue: $0[5] ?? "") ?? .killed,
                          planned: Int($0[6] ?? "0") ?? 0, done: Int($0[7] ?? "0") ?? 0, failed: Int($0[8] ?? "0") ?? 0, skipped: Int($0[9] ?? "0") ?? 0,
                          repeats: Int($0[10] ?? "1") ?? 1, pruned: Int($0[11] ?? "0") ?? 0)
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
                FROM lease WHERE finished_xid IS NULL GROUP BY worker, host, pid ORDER BY worker
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
    final package class Heartbeat: RunHold, @unchecked Sendable {
        package let state: PostgresState
        package let timer: DispatchSourceTimer
        package init(state: PostgresState) {
            self.state = state
            timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "segno.lease-heartbeat"))
            let every = max(0.5, state.leaseSeconds / 3)
            timer.schedule(deadline: .now() + every, repeating: every)
            timer.setEventHandler { [state] in try? state.renewLeases() }
            timer.resume()
        }
        deinit {
            timer.cancel()
            _ = try? state.pool.with { try $0.exec("DELETE FROM lease WHERE worker = $1 AND finished_xid IS NULL", [state.worker]) }
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
