import Foundation
import SegnoMultipart

/// Everything the runner and `status` need from state (DESIGN.md §8). SQLite (`StateStore`) is
/// the embedded default; a store for many machines implements the same calls, with `claim`
/// doing real work there.
public protocol StateBackend: AnyObject, Sendable, MultipartProgressStore {
    /// Every recording with its steps, keyed by relative path: what planning reads, once per run
    /// (a compact index; a `RecordingState` is made per look-up).
    func loadAll() throws -> StateIndex
    /// The recordings at `paths` with their steps, keyed by path (a path the store does not hold
    /// is left out): what `find --measure` checks its catalogue hits against, without loading the
    /// whole state. The default reads `loadAll()`; SQLite asks for those rows only.
    func recordings(_ paths: [String]) throws -> [String: RecordingState]
    /// True when other processes share the store and recordings must be claimed before their
    /// pass (PostgreSQL); SQLite's run lock already excludes every other process.
    var claimsRecordings: Bool { get }
    /// Claims a batch of recordings for this worker before their passes, in one round trip.
    /// Always granted by SQLite; a shared store grants what no other worker holds and tells what
    /// another worker finished since this worker's `loadAll`.
    func claim(_ paths: [String]) throws -> [String: ClaimResult]
    /// Gives a claim back without a state update (interrupted, still being written).
    func release(_ path: String)
    /// Applies updates in one transaction.
    func apply(_ updates: [StateUpdate]) throws
    /// The recipe text a fingerprint stands for (`--explain`).
    func recipe(_ fingerprint: String) throws -> String?
    /// Deletes recordings and their steps (prune).
    func forget(paths: [String]) throws

    func startRun(spec: String, specName: String) throws -> Int64
    func finishRun(id: Int64, status: RunStatus, planned: Int, done: Int, failed: Int, skipped: Int, pruned: Int) throws
    /// Marks runs a killed process left `running`. Called when a run starts.
    func closeAbandonedRuns() throws
    func recordPruned(runId: Int64, _ entries: [(path: String, outputs: [String])]) throws

    /// Ends the use of the store (a run's last call; nothing is read or written after it).
    func close()

    /// Multipart uploads started before `date` (stale: to abort).
    func multipartStarted(before date: Date) throws -> [(MultipartUploadKey, MultipartProgress)]

    // What `status` shows.
    func statusCounts() throws -> [String: Int]
    func failures() throws -> [FailureRecord]
    /// Recordings processed from what salvage recovered, sorted by path.
    func salvagedRecordings() throws -> [SalvagedRecord]
    func recentRuns(limit: Int) throws -> [RunRecord]
    func recentlyPruned(limit: Int) throws -> [(path: String, runId: Int64, at: Double)]
    /// The run with this id (`report --run N`); nil when the store has none.
    func run(id: Int64) throws -> RunRecord?
    /// The workers holding claims now (a shared store); empty where one process runs at a time.
    func fleet() throws -> [WorkerInfo]
    /// Statements sent to the store so far and the seconds they took, where the store counts them
    /// (PostgreSQL: the claim overhead a run reports); nil otherwise.
    var statementStats: (statements: Int, seconds: Double)? { get }

    // The archive (written through `apply(.archived …)`).
    /// Every fingerprint the tap with identity `stage` stored, in path order (`duplicates`, `outputs`).
    func fingerprints(stage: String) throws -> [StoredFingerprint]
    /// The recordings matching `query`, best first, at most `limit` (`find`): every word of the
    /// query matches the start of a word (`SearchWords`) of a field in `CatalogEntry.searchFields`;
    /// ranked by where the words matched (fields' weights) when words are given, else by distance
    /// when `near` is given, else newest first; ties by path.
    func search(_ query: CatalogQuery, limit: Int) throws -> [CatalogHit]
}

extension StateBackend {
    public func recordings(_ paths: [String]) throws -> [String: RecordingState] {
        let index = try loadAll()
        return Dictionary(paths.compactMap { p in index[p].map { (p, $0) } }, uniquingKeysWith: { first, _ in first })
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

    /// Every stored property: the initializer the other modules of segno use.
    package init(worker: String, host: String, pid: Int, claimed: Int, expired: Bool) {
        self.worker = worker
        self.host = host
        self.pid = pid
        self.claimed = claimed
        self.expired = expired
    }
}

/// The answer to a claim.
public enum ClaimResult: Sendable, Equatable {
    /// This worker has the recording; the plan made from its `loadAll` stands.
    case granted
    /// Another worker holds a live lease on it: ask again later.
    case heldElsewhere
    /// Another worker wrote its result after this worker's `loadAll`: skip it.
    case doneElsewhere
}

/// What a run holds while it works (SQLite: the `flock` on `<state>.lock`); released when dropped.
public protocol RunHold: AnyObject, Sendable {}

/// Where a job's state lives, and how a run or a reader gets at it.
public protocol StateLocation: Sendable {
    /// For a run: takes the run (throws `RunError.locked` when another process holds it, exit 75)
    /// and opens the store for writing, creating and migrating it.
    func openForRun() throws(RunError) -> (hold: any RunHold, store: any StateBackend)
    /// For `status`, `report` and `--dry-run`: read-only; nil when nothing has run yet. Never
    /// migrates, creates or changes a file.
    func openForReading() throws(RunError) -> (any StateBackend)?
    /// For `state rebuild`: as `openForRun`, but a store that was lost is no reason to stop (it
    /// is what a rebuild is for).
    func openForRebuild() throws(RunError) -> (hold: any RunHold, store: any StateBackend)
}

extension StateLocation {
    public func openForRebuild() throws(RunError) -> (hold: any RunHold, store: any StateBackend) { try openForRun() }
}
