import Foundation
import GRDB

/// Opens the state store for a run and tells a damaged database from other failures: a database
/// SQLite calls corrupt or "not a database" is moved aside (with its WAL and SHM files) and the
/// run stops with one line saying what to do, instead of failing every recording every minute.
enum StateOpening {
    /// Opens (creating and migrating) the store at `path`.
    static func open(path: String) throws(RunError) -> StateStore {
        do {
            let store = try StateStore(path: path)
            try store.checkReadable()
            return store
        } catch {
            throw classify(error, path: path)
        }
    }

    /// Maps an error from opening or reading the store to a `RunError`; a damaged database is
    /// moved aside first.
    static func classify(_ error: any Error, path: String) -> RunError {
        if let e = error as? RunError { return e }
        if let db = error as? DatabaseError, [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(db.resultCode) {
            let aside = path + ".damaged-" + Self.stamp()
            let moved = rename(path, aside) == 0
            for suffix in ["-wal", "-shm"] { _ = rename(path + suffix, aside + suffix) }
            return .stateLost(statePath: path, movedTo: moved ? aside : nil,
                              detail: "is damaged (\(db.resultCode == .SQLITE_NOTADB ? "not a database" : "corrupt"))")
        }
        if let db = error as? DatabaseError { return .state("\(AudioError.quoted(path)): \(db.message ?? "\(db.resultCode)")") }
        return .state("\(error)")
    }

    static func stamp() -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return f.string(from: Date())
    }
}
