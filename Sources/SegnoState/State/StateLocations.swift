import Foundation
import SegnoCore
import SegnoS3

extension StateStore: StateBackend {
    public var claimsRecordings: Bool { false }
    public func claim(_ paths: [String]) throws -> [String: ClaimResult] { Dictionary(paths.map { ($0, .granted) }) { a, _ in a } }
    public func release(_ path: String) {}
    public func fleet() throws -> [WorkerInfo] { [] }
    public var statementStats: (statements: Int, seconds: Double)? { nil }
}


extension JobSpec {
    /// Where this job's state lives: PostgreSQL for a `postgres://` URL, else the SQLite file.
    public var stateLocation: any StateLocation {
        stateIsShared ? PostgresStateLocation(url: statePath, leaseSeconds: leaseSeconds) : SQLiteStateLocation(path: statePath, sharedFolder: sharedStateFolder)
    }
}

/// The embedded default: a SQLite file (`state:`, by default `<output.root>/.segno/state.sqlite`)
/// and an `flock` on `<state>.lock` for the run. The folder, the lock and the database must be the
/// user's (`StateFolderTrust`); `sharedFolder` is `state: { shared_folder: true }`.
public struct SQLiteStateLocation: StateLocation {
    public let path: String
    public let sharedFolder: Bool
    public init(path: String, sharedFolder: Bool = false) {
        self.path = path
        self.sharedFolder = sharedFolder
    }

    public func openForRun() throws(RunError) -> (hold: any RunHold, store: any StateBackend) {
        let lock = try takeLock()
        if StateOpening.isLost(path) {
            throw .stateLost(statePath: path, movedTo: nil, detail: "is missing although earlier runs kept their state there")
        }
        let store = try StateOpening.open(path: path, trust: StateFolderTrust(sharedFolder: sharedFolder))
        do { try store.closeAbandonedRuns() } catch { throw StateOpening.classify(error, path: path) }
        return (lock, store)
    }

    public func openForRebuild() throws(RunError) -> (hold: any RunHold, store: any StateBackend) {
        (try takeLock(), try StateOpening.open(path: path, trust: StateFolderTrust(sharedFolder: sharedFolder)))
    }

    /// The run's lock; `.locked` when another process holds it, `.state` when the folder or the
    /// lock file is refused or cannot be made.
    private func takeLock() throws(RunError) -> RunLock {
        do {
            guard let l = try RunLock(statePath: path, sharedFolder: sharedFolder) else {
                throw RunError.locked(statePath: path, holder: RunLock.holder(statePath: path))
            }
            return l
        } catch let e as RunError { throw e } catch { throw .state("\(error)") }
    }

    public func openForReading() throws(RunError) -> (any StateBackend)? {
        do { return try StateStore.openForReading(path: path) } catch { throw StateOpening.classify(error, path: path, moveAside: false) }
    }
}

