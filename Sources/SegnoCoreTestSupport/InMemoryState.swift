import Foundation
import SegnoCore
import SegnoMultipart
import Synchronization

/// A state store in plain memory for the core's tests: the `StateBackend` calls kept in
/// dictionaries, no SQLite (the assembly's tests use `MemoryStateLocation`, SQLite in memory,
/// SegnoTestSupport). Its times come from a clock the test can move (`TestClock`). It is also its
/// own `StateLocation`: a run is always free, every opening sees the same store, and `close`
/// keeps it. With `sharing`, it plays a store many workers share (`claimsRecordings`): the test
/// says which recordings another worker holds or finished.
package final class InMemoryState: StateBackend, StateLocation, Sendable {
    /// What another worker does to a recording, for a store with `sharing`.
    package enum Elsewhere: Sendable { case held, done }

    package struct Contents: Sendable {
        package var recordings: [String: RecordingState] = [:]
        package var recipes: [String: String] = [:]
        package var runs: [RunRecord] = []
        package var pruned: [(path: String, runId: Int64, at: Double)] = []
        package var fingerprints: [String: [String: AudioFingerprint]] = [:]
        package var catalog: [String: CatalogEntry] = [:]
        package var salvaged: [String: SalvagedRecord] = [:]
        package var multipart: [MultipartUploadKey: MultipartProgress] = [:]
        package var elsewhere: [String: Elsewhere] = [:]
        /// Every batch `claim` was asked for, in order.
        package var claims: [[String]] = []
        /// Claims fail with this (an outage), when set.
        package var claimError: String?
        package var nextId: Int64 = 1
    }

    package let contents = Mutex(Contents())
    package let clock: WallClock
    package let claimsRecordings: Bool

    final package class Hold: RunHold {}

    package init(clock: WallClock = .system, sharing: Bool = false) {
        self.clock = clock
        self.claimsRecordings = sharing
    }

    private var now: Double { clock.now().timeIntervalSince1970 }

    // StateLocation
    package func openForRun() throws(RunError) -> (hold: any RunHold, store: any StateBackend) { (Hold(), self) }
    package func openForReading() throws(RunError) -> (any StateBackend)? { self }

    // Planning and claims
    package func loadAll() throws -> StateIndex { StateIndex(contents.withLock { $0.recordings }) }

    package func claim(_ paths: [String]) throws -> [String: ClaimResult] {
        try contents.withLock { c in
            c.claims.append(paths)
            if let why = c.claimError { throw TestSupportError(why) }
            var answers: [String: ClaimResult] = [:]
            for p in paths {
                switch c.elsewhere[p] {
                case .held?: answers[p] = .heldElsewhere
                case .done?: answers[p] = .doneElsewhere
                case nil: answers[p] = .granted
                }
            }
            return answers
        }
    }

    package func release(_ path: String) {}

    /// As SQLite applies them: a recording's row is replaced but keeps its id, content hash and
    /// duration when the update gives none; steps are replaced stage by stage; a failure with a
    /// step of the same source is `partial`.
    package func apply(_ updates: [StateUpdate]) throws {
        let t = now
        contents.withLock { c in
            func upsert(_ path: String, _ id: FileIdentity, hash: Data?, duration: Double?, status: RecordingStatus,
                        attempts: Int, error: String?) -> RecordingState {
                let old = c.recordings[path]
                let rid: Int64
                if let old { rid = old.id } else { rid = c.nextId; c.nextId += 1 }
                return RecordingState(id: rid, path: path, identity: id, contentHash: hash ?? old?.contentHash,
                                      duration: duration ?? old?.duration, status: status, attempts: attempts, error: error,
                                      updatedAt: t, steps: old?.steps ?? [:], failedRecipe: old?.failedRecipe,
                                      failureClass: old?.failureClass, fingerprinted: old?.fingerprinted ?? [])
            }
            for u in updates {
                switch u {
                case let .done(path, id, hash, duration, steps, recipes):
                    var r = upsert(path, id, hash: hash, duration: duration, status: .done, attempts: 0, error: nil)
                    r.failureClass = nil
                    r.failedRecipe = nil
                    for s in steps { r.steps[s.stage] = s }
                    c.recipes.merge(recipes) { old, _ in old }
                    c.recordings[path] = r
                case let .failed(path, id, error, attempts, recipe, failureClass, steps, recipes):
                    var r = upsert(path, id, hash: nil, duration: nil, status: .failed, attempts: attempts, error: error)
                    for s in steps { r.steps[s.stage] = s }
                    c.recipes.merge(recipes) { old, _ in old }
                    r.failedRecipe = recipe
                    r.failureClass = failureClass
                    r.status = r.steps.values.contains { $0.source == id.key } ? .partial : .failed
                    c.recordings[path] = r
                case let .touched(path, id):
                    guard var r = c.recordings[path] else { continue }
                    r.identity = id
                    r.updatedAt = t
                    for k in r.steps.keys { r.steps[k]?.source = id.key }
                    c.recordings[path] = r
                case let .archived(path, fingerprints, catalog):
                    c.fingerprints[path, default: [:]].merge(fingerprints) { _, new in new }
                    c.recordings[path]?.fingerprinted.formUnion(fingerprints.keys)
                    c.catalog[path] = catalog
                case let .salvaged(path, report):
                    c.salvaged[path] = report.map { SalvagedRecord(path: path, report: $0, at: t) }
                }
            }
        }
    }

    package func recipe(_ fingerprint: String) throws -> String? { contents.withLock { $0.recipes[fingerprint] } }

    package func forget(paths: [String]) throws {
        contents.withLock { c in
            for p in paths {
                c.recordings[p] = nil; c.fingerprints[p] = nil; c.catalog[p] = nil; c.salvaged[p] = nil
            }
        }
    }

    // Runs
    package func startRun(spec: String, specName: String) throws -> Int64 {
        let t = now
        return contents.withLock { c in
            let id = Int64(c.runs.count + 1)
            c.runs.append(RunRecord(id: id, startedAt: t, spec: spec, specName: specName, status: .running,
                                    planned: 0, done: 0, failed: 0, skipped: 0))
            return id
        }
    }

    package func finishRun(id: Int64, status: RunStatus, planned: Int, done: Int, failed: Int, skipped: Int, pruned: Int) throws {
        let t = now
        contents.withLock { c in
            guard let i = c.runs.firstIndex(where: { $0.id == id }) else { return }
            var run = c.runs[i]
            run.finishedAt = t
            run.status = status
            run.planned = planned
            run.done = done
            run.failed = failed
            run.skipped = skipped
            run.pruned = pruned
            c.runs[i] = run
        }
    }

    package func closeAbandonedRuns() throws {
        contents.withLock { c in
            for i in c.runs.indices where c.runs[i].status == .running { c.runs[i].status = .killed }
        }
    }

    package func recordPruned(runId: Int64, _ entries: [(path: String, outputs: [String])]) throws {
        let t = now
        contents.withLock { c in
            for e in entries { c.pruned.append((path: e.path, runId: runId, at: t)) }
        }
    }

    package func close() {}

    // Uploads
    package func multipartStarted(before date: Date) throws -> [(MultipartUploadKey, MultipartProgress)] {
        contents.withLock { $0.multipart.filter { $0.value.startedAt < date }.map { ($0.key, $0.value) } }
    }
    package func load(_ key: MultipartUploadKey) throws -> MultipartProgress? { contents.withLock { $0.multipart[key] } }
    package func save(_ progress: MultipartProgress, for key: MultipartUploadKey) throws { contents.withLock { $0.multipart[key] = progress } }
    package func clear(_ key: MultipartUploadKey) throws { _ = contents.withLock { $0.multipart.removeValue(forKey: key) } }

    // What `status` shows
    package func statusCounts() throws -> [String: Int] {
        contents.withLock { c in c.recordings.values.reduce(into: [:]) { $0[$1.status.rawValue, default: 0] += 1 } }
    }

    package func failures() throws -> [FailureRecord] {
        contents.withLock { c in
            c.recordings.values.filter(\.status.hasFailure).sorted { $0.path < $1.path }.map {
                FailureRecord(path: $0.path, error: $0.error ?? "", attempts: $0.attempts, at: $0.updatedAt, status: $0.status,
                              failureClass: $0.failureClass ?? .environment)
            }
        }
    }

    package func salvagedRecordings() throws -> [SalvagedRecord] { contents.withLock { $0.salvaged.values.sorted { $0.path < $1.path } } }
    package func recentRuns(limit: Int) throws -> [RunRecord] { contents.withLock { Array($0.runs.reversed().prefix(limit)) } }
    package func recentlyPruned(limit: Int) throws -> [(path: String, runId: Int64, at: Double)] {
        contents.withLock { Array($0.pruned.reversed().prefix(limit)) }
    }
    package func run(id: Int64) throws -> RunRecord? { contents.withLock { $0.runs.first { $0.id == id } } }
    package func fleet() throws -> [WorkerInfo] { [] }
    package var statementStats: (statements: Int, seconds: Double)? { nil }

    // The archive
    package func fingerprints(stage: String) throws -> [StoredFingerprint] {
        contents.withLock { c in
            c.fingerprints.keys.sorted().compactMap { p in c.fingerprints[p]?[stage].map { StoredFingerprint(path: p, fingerprint: $0) } }
        }
    }

    /// Words only (`from`, `to` and `near` are SQLite's and PostgreSQL's to test): every query
    /// term's words start words of a searched field; ranked by the fields' weights, ties by path.
    package func search(_ query: CatalogQuery, limit: Int) throws -> [CatalogHit] {
        let terms = SearchWords.terms(query.words).flatMap { $0 }
        return contents.withLock { c in
            var hits: [(rank: Double, hit: CatalogHit)] = []
            for (path, entry) in c.catalog {
                var rank = 0.0
                var matched = true
                for term in terms {
                    let weight = CatalogEntry.searchFields.filter { f in SearchWords.of(f.text(entry)).contains { $0.hasPrefix(term) } }
                        .map(\.weight).reduce(0, +)
                    if weight == 0 { matched = false; break }
                    rank += weight
                }
                guard matched else { continue }
                let outputs = c.recordings[path].map { $0.steps.values.flatMap(\.outputs).sorted() } ?? []
                hits.append((rank, CatalogHit(path: path, title: entry.title, recorded: entry.recorded, latitude: entry.latitude,
                                              longitude: entry.longitude, duration: entry.duration, rank: rank, outputs: outputs,
                                              chapters: entry.chapters)))
            }
            return hits.sorted { $0.rank != $1.rank ? $0.rank > $1.rank : $0.hit.path < $1.hit.path }.prefix(limit).map(\.hit)
        }
    }
}
