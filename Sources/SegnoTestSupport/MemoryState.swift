import Foundation
import SegnoCore
import SegnoS3
import SegnoState

/// A store in memory for tests: the run is always free, and readers see the same store.
package final class MemoryStateLocation: StateLocation, @unchecked Sendable {
    package let store: StateStore
    final package class Hold: RunHold {}
    package init() throws { store = try StateStore.inMemory() }
    package func openForRun() throws(RunError) -> (hold: any RunHold, store: any StateBackend) { (Hold(), Unclosed(store)) }

    /// The shared in-memory store survives the runs that use it: `close` does nothing.
    final package class Unclosed: StateBackend, @unchecked Sendable {
        package let inner: StateStore
        package init(_ inner: StateStore) { self.inner = inner }
        package func loadAll() throws -> StateIndex { try inner.loadAll() }
        package func recordings(_ paths: [String]) throws -> [String: RecordingState] { try inner.recordings(paths) }
        package var claimsRecordings: Bool { false }
        package func claim(_ paths: [String]) throws -> [String: ClaimResult] { try inner.claim(paths) }
        package func release(_ path: String) {}
        package func apply(_ updates: [StateUpdate]) throws { try inner.apply(updates) }
        package func recipe(_ fingerprint: String) throws -> String? { try inner.recipe(fingerprint) }
        package func forget(paths: [String]) throws { try inner.forget(paths: paths) }
        package func startRun(spec: String, specName: String) throws -> Int64 { try inner.startRun(spec: spec, specName: specName) }
        package func finishRun(id: Int64, status: RunStatus, planned: Int, done: Int, failed: Int, skipped: Int, pruned: Int) throws {
            try inner.finishRun(id: id, status: status, planned: planned, done: done, failed: failed, skipped: skipped, pruned: pruned)
        }
        package func closeAbandonedRuns() throws { try inner.closeAbandonedRuns() }
        package func recordPruned(runId: Int64, _ entries: [(path: String, outputs: [String])]) throws { try inner.recordPruned(runId: runId, entries) }
        package func close() {}
        package func multipartStarted(before date: Date) throws -> [(MultipartUploadKey, MultipartProgress)] { try inner.multipartStarted(before: date) }
        package func statusCounts() throws -> [String: Int] { try inner.statusCounts() }
        package func failures() throws -> [FailureRecord] { try inner.failures() }
        package func salvagedRecordings() throws -> [SalvagedRecord] { try inner.salvagedRecordings() }
        package func recentRuns(limit: Int) throws -> [RunRecord] { try inner.recentRuns(limit: limit) }
        package func recentlyPruned(limit: Int) throws -> [(path: String, runId: Int64, at: Double)] { try inner.recentlyPruned(limit: limit) }
        package func run(id: Int64) throws -> RunRecord? { try inner.run(id: id) }
        package func fleet() throws -> [WorkerInfo] { [] }
        package var statementStats: (statements: Int, seconds: Double)? { nil }
        package func fingerprints(stage: String) throws -> [StoredFingerprint] { try inner.fingerprints(stage: stage) }
        package func search(_ query: CatalogQuery, limit: Int) throws -> [CatalogHit] { try inner.search(query, limit: limit) }
        package func load(_ key: MultipartUploadKey) throws -> MultipartProgress? { try inner.load(key) }
        package func save(_ progress: MultipartProgress, for key: MultipartUploadKey) throws { try inner.save(progress, for: key) }
        package func clear(_ key: MultipartUploadKey) throws { try inner.clear(key) }
    }
    package func openForReading() throws(RunError) -> (any StateBackend)? { Unclosed(store) }
}
