import Foundation

/// One run per state store: an advisory `flock` on `<state>.lock`. The kernel drops the lock when
/// the process dies, so a killed run never blocks the next one.
public final class RunLock: RunHold {
    private let fd: Int32
    /// The lock file.
    public let path: String

    /// Takes the lock without waiting; nil when another process holds it.
    public init?(statePath: String) throws {
        path = statePath + ".lock"
        try OutputFile.makeFolders((path as NSString).deletingLastPathComponent, for: path)
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 { throw AudioError.system(path, "cannot open lock file", errno: errno) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            close(fd)
            return nil
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { write(fd, $0, strlen($0)) }
    }

    /// The pid written by the holder (for the "another run holds the state" message).
    public static func holder(statePath: String) -> String? {
        (try? String(contentsOfFile: statePath + ".lock", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// True when a lock file is there and no process holds it (a run left `running` was killed);
    /// nil without a lock file (no run yet, or a state without one). Opens it read-only and
    /// changes nothing. Called by `status`.
    public static func isFree(statePath: String) -> Bool? {
        let fd = open(statePath + ".lock", O_RDONLY | O_CLOEXEC)
        if fd < 0 { return nil }
        defer { close(fd) }
        guard flock(fd, LOCK_SH | LOCK_NB) == 0 else { return false }
        flock(fd, LOCK_UN)
        return true
    }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
