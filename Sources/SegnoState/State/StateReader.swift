import Foundation
import GRDB
import SegnoCore

/// Opens a state database for reading only (`segno report`): never migrates, never creates the
/// file, and leaves the state folder byte-for-byte as it was.
///
/// SQLite opens a WAL database read-only by creating its `-wal` and `-shm` files when they are
/// missing (and leaves them behind). So when no `-wal` file is present — no run is writing — the
/// database is opened `immutable`, which reads the main file alone; when one is present (a run is
/// working, or one was killed), a plain read-only open uses the files that are already there.
public enum StateReader {
    /// Why the store cannot be read.
    public enum OpenError: Error, CustomStringConvertible {
        /// There is no database at the path: nothing has run.
        case missing(path: String)
        /// SQLite refused it (damaged, not a database, unreadable).
        case unreadable(path: String, detail: String)

        public var description: String {
            switch self {
            case .missing(let p): return "no state yet at \(AudioError.quoted(p)): nothing has run"
            case .unreadable(let p, let d): return "state database \(AudioError.quoted(p)): \(d)"
            }
        }
    }

    /// A read-only connection to the store at `path` (absolute).
    public static func open(path: String) throws(OpenError) -> DatabaseQueue {
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { throw .missing(path: path) }
        var config = Configuration()
        config.readonly = true
        config.busyMode = .timeout(10)
        let writing = access(path + "-wal", F_OK) == 0
        let target = writing ? path : "file:" + uriEscaped(path) + "?immutable=1"
        do {
            let queue = try DatabaseQueue(path: target, configuration: config)
            // A store made by an older segno may lack later tables; the report reads what is there.
            _ = try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM recording") }
            return queue
        } catch let e as DatabaseError {
            throw .unreadable(path: path, detail: e.message ?? "\(e.resultCode)")
        } catch {
            throw .unreadable(path: path, detail: "\(error)")
        }
    }

    /// `path` as the path of a `file:` URI: everything but unreserved characters and `/` escaped
    /// (a `?` or `#` in a folder name would otherwise end the path).
    static package func uriEscaped(_ path: String) -> String {
        var out = ""
        for b in path.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += String(format: "%%%02X", b)
            }
        }
        return out
    }
}
