import Foundation
import SegnoCore

/// One run per state store: an advisory `flock` on `<state>.lock`. The kernel drops the lock when
/// the process dies, so a killed run never blocks the next one.
public final class RunLock: RunHold {
    private let fd: Int32
    /// The lock file.
    public let path: String

    /// Takes the lock without waiting; nil when another process holds it. The state folder and
    /// the lock file must be the user's (`StateFolderTrust`; `sharedFolder`: `state: { shared_folder: true }`),
    /// and the lock file is opened without following a link.
    public init?(statePath: String, sharedFolder: Bool = false) throws {
        path = statePath + ".lock"
        let dir = (path as NSString).deletingLastPathComponent
        try OutputFile.makeFolders(dir, for: path)
        let trust = StateFolderTrust(sharedFolder: sharedFolder)
        try trust.checkFolder(dir)
        fd = try trust.openFile(path, what: "lock file")
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
        let fd = open(statePath + ".lock", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 { return nil }
        defer { close(fd) }
        var buf = [UInt8](repeating: 0, count: 32)
        let n = read(fd, &buf, buf.count)
        guard n > 0 else { return nil }
        let text = String(decoding: buf[..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.allSatisfy(\.isNumber) && !text.isEmpty ? text : nil
    }

    /// True when a lock file is there and no process holds it (a run left `running` was killed);
    /// nil without a lock file (no run yet, or a state without one). Opens it read-only and
    /// changes nothing. Called by `status`.
    public static func isFree(statePath: String) -> Bool? {
        // Never through a link, and never blocked by a FIFO planted under the name.
        let fd = open(statePath + ".lock", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
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
