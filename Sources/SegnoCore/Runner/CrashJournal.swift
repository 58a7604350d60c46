import Foundation
import Synchronization

/// Which recordings a run had in hand, so that the next run can tell which of them were being
/// processed when the process crashed inside a library (issue 33). A recording in hand at two
/// crashes is an input failure, parked until the file changes: one hostile file cannot take
/// down every cron run after it. A process killed from outside (`kill -9`, the OOM killer, a
/// power cut) leaves no crash mark: its recordings just run again, as DESIGN.md §3 promises.
///
/// One file per process, `<folder>/running-<host hash>-<pid>.journal`, created with
/// `O_CREAT | O_EXCL | O_NOFOLLOW` and mode 0600. Records are appended with one `write` each:
/// `+` or `-`, the path's length (4 bytes, little-endian) and its UTF-8 bytes; the CLI's fatal
/// signal handler appends `!` with length 0 (`crashMark`) before the process dies. A process that
/// ends normally removes its file; the file is emptied whenever nothing is in hand, so a watcher
/// that runs for months keeps it small.
public final class CrashJournal: Sendable {
    /// The journal's path.
    package let path: String
    /// The open file, for the CLI's fatal-signal handler to append `crashMark` to.
    public let fd: Int32
    /// The record a fatal-signal handler appends (one `write`, async-signal-safe).
    public static let crashMark: [UInt8] = [UInt8(ascii: "!"), 0, 0, 0, 0]
    /// Recordings begun and not ended.
    private let inHand = Mutex(0)

    /// The file name prefix of every journal.
    static package let prefix = "running-"
    static package let suffix = ".journal"

    /// Opens this process's journal in `folder` (created if missing). Called once when
    /// a run starts, after it holds the run; nil when the folder cannot take it (the run goes on
    /// without the crash guard, as on a read-only volume).
    package init?(folder: String) {
        guard (try? OutputFile.makeFolders(folder, for: folder)) != nil else { return nil }
        let path = folder + "/" + Self.prefix + OutputFile.owner + Self.suffix
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        self.path = path
        self.fd = fd
    }

    /// Notes that a worker starts on the recording at `relativePath`. Called before its source is opened.
    package func begin(_ relativePath: String) {
        inHand.withLock { $0 += 1 }
        append(UInt8(ascii: "+"), relativePath)
    }

    /// Notes that the recording's result was handed to the state writer (or that it was given up
    /// cleanly: interrupted, still being written). Called once for each `begin`.
    package func end(_ relativePath: String) {
        append(UInt8(ascii: "-"), relativePath)
        inHand.withLock { n in
            n -= 1
            // Emptied when nothing is in hand (a crash mark written later still lands at its end).
            if n == 0 { _ = ftruncate(fd, 0) }
        }
    }

    /// Closes and removes the journal: the process ends normally. Called once, at the end of the run.
    package func close() {
        _ = Foundation.close(fd)
        unlink(path)
    }

    private func append(_ op: UInt8, _ relativePath: String) {
        var record: [UInt8] = [op]
        let bytes = Array(relativePath.utf8)
        withUnsafeBytes(of: UInt32(bytes.count).littleEndian) { record += $0 }
        record += bytes
        _ = record.withUnsafeBufferPointer { OutputFile.writeAll(fd, $0) }
    }

    /// Reads the journals that processes of this host which are no longer alive left in `folder`,
    /// removes them, and returns every recording that a process which *crashed* (its journal
    /// holds `crashMark`) had begun and not ended, with the number of such journals naming it.
    /// Called once when a run starts, before it plans. Journals of other hosts (a shared output
    /// folder) are theirs to read.
    package static func recover(folder: String) -> [String: Int] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return [:] }
        let host = OutputFile.owner.split(separator: "-").first.map(String.init) ?? ""
        var found: [String: Int] = [:]
        for name in names where name.hasPrefix(prefix) && name.hasSuffix(suffix) {
            let owner = name.dropFirst(prefix.count).dropLast(suffix.count).split(separator: "-")
            guard owner.count == 2, String(owner[0]) == host, let pid = Int32(owner[1]), pid != getpid() else { continue }
            if kill(pid, 0) == 0 || errno != ESRCH { continue }  // still running (or not ours to signal)
            let file = folder + "/" + name
            let (paths, crashed) = unfinished(file)
            if crashed { for path in paths { found[path, default: 0] += 1 } }
            unlink(file)
        }
        return found
    }

    /// The paths a journal begins and does not end, and whether it holds a crash mark. A record
    /// cut short at the end is ignored.
    static package func unfinished(_ file: String) -> (paths: Set<String>, crashed: Bool) {
        let fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return ([], false) }
        defer { _ = Foundation.close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size < 1 << 30 else { return ([], false) }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return ([], false) }
        var crashed = false
        var open = Set<String>()
        var at = 0
        while at + 5 <= n {
            let length = Int(bytes[at + 1]) | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]) << 16 | Int(bytes[at + 4]) << 24
            guard at + 5 + length <= n else { break }
            let path = String(decoding: bytes[(at + 5)..<(at + 5 + length)], as: UTF8.self)
            switch bytes[at] {
            case UInt8(ascii: "+"): open.insert(path)
            case UInt8(ascii: "!"): crashed = true
            default: open.remove(path)
            }
            at += 5 + length
        }
        return (open, crashed)
    }
}

extension CrashJournal {
    /// The words every failure recorded for a process's death starts with (after the name).
    package static let stoppedMessage = "segno stopped while working on it"

    /// The state update for a recording that was in hand when a process crashed: the first time a
    /// transient failure (the next run tries it again, alone, before any other work), the
    /// second time in a row for the same file an input failure, parked until the file changes.
    /// Called by the run that recovered the journal, before it plans.
    package static func strike(path: String, identity: FileIdentity, prior: RecordingState?, recipe: String) -> StateUpdate {
        let before = prior.map { p in
            p.status.hasFailure && p.identity == identity && (p.error?.contains(stoppedMessage) ?? false) ? p.attempts : 0
        } ?? 0
        let times = before + 1
        let name = AudioError.quoted(path)
        if times >= 2 {
            return .failed(path: path, identity: identity,
                           error: "\(name): \(stoppedMessage): the process crashed \(times) times while this file was in hand (a library reading it failed); parked until the file changes",
                           attempts: times, recipe: recipe, failureClass: .input)
        }
        return .failed(path: path, identity: identity,
                       error: "\(name): \(stoppedMessage): the process crashed while this file was in hand; tried again alone first thing in the next run",
                       attempts: 1, recipe: recipe, failureClass: .transient)
    }

    /// True when the recording's last failure is a first `strike`: run it alone, before the rest.
    package static func isSuspect(_ prior: RecordingState?) -> Bool {
        guard let p = prior, p.status.hasFailure, p.failureClass == .transient else { return false }
        return p.error?.contains(stoppedMessage) ?? false
    }
}
