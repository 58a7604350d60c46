import Foundation
import GRDB
import SegnoCore

/// Opens the state store for a run and tells a damaged database from other failures: a database
/// SQLite calls corrupt or "not a database" is moved aside (with its WAL and SHM files) and the
/// run stops with one line saying what to do, instead of failing every recording every minute.
package enum StateOpening {
    /// Opens (creating and migrating) the store at `path`, and leaves the marker that says a store
    /// lives here (`wasCreated`). The database and its WAL and SHM files must pass `trust`: the
    /// database is created here (without following a link) before SQLite opens it.
    static package func open(path: String, trust: StateFolderTrust) throws(RunError) -> StateStore {
        // An empty file where a store was created (a truncating copy, a full disk, `> file`) is as
        // damaged as garbage: SQLite would take it for a new database and every record would be lost.
        var st = stat()
        if lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size == 0, access(marker(path), F_OK) == 0 {
            throw damaged(path, "empty file")
        }
        do {
            close(try trust.openFile(path, what: "state database"))
            for suffix in ["-wal", "-shm"] { try trust.checkFile(path + suffix, what: "state database's \(suffix.dropFirst()) file") }
        } catch {
            throw .state("\(error)")
        }
        do {
            let store = try StateStore(path: path)
            if access(marker(path), F_OK) != 0 { try OutputFile.write(Array("segno state store\n".utf8), to: marker(path)) }
            return store
        } catch {
            throw classify(error, path: path)
        }
    }

    /// Maps an error from opening or reading the store to a `RunError`; a damaged database is
    /// moved aside first.
    static package func classify(_ error: any Error, path: String, moveAside: Bool = true) -> RunError {
        if let e = error as? RunError { return e }
        if let db = error as? DatabaseError, [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(db.resultCode) {
            return damaged(path, db.resultCode == .SQLITE_NOTADB ? "not a database" : "corrupt", moveAside: moveAside)
        }
        if let db = error as? DatabaseError { return .state("\(AudioError.quoted(path)): \(db.message ?? "\(db.resultCode)")") }
        return .state("\(error)")
    }

    /// The run's error for a damaged database (`what` is wrong with it), moved aside first (with
    /// its WAL and SHM files) when `moveAside`.
    static package func damaged(_ path: String, _ what: String, moveAside: Bool = true) -> RunError {
        guard moveAside else { return .stateLost(statePath: path, movedTo: nil, detail: "is damaged (\(what))") }
        let aside = path + ".damaged-" + Self.stamp()
        let moved = rename(path, aside) == 0
        for suffix in ["-wal", "-shm"] { _ = rename(path + suffix, aside + suffix) }
        return .stateLost(statePath: path, movedTo: moved ? aside : nil, detail: "is damaged (\(what))")
    }

    /// Beside the database: present once a store was created here, so a missing database is
    /// told from a new job.
    static package func marker(_ path: String) -> String { path + ".created" }

    /// True when a store lived at `path` before (its marker, or a damaged copy moved aside) but the
    /// database file is gone: a run must not silently start from nothing.
    static package func isLost(_ path: String) -> Bool {
        guard access(path, F_OK) != 0 else { return false }
        if access(marker(path), F_OK) == 0 { return true }
        let dir = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent + ".damaged-"
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).contains { $0.hasPrefix(name) }
    }

    static package func stamp() -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return f.string(from: Date())
    }
}
