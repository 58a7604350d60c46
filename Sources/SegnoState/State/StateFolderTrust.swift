import Foundation
import SegnoCore

/// The state folder is segno's, or it is refused (as ssh's StrictModes and cron refuse files
/// others control; docs/decisions/33-shared-state-folders.md). Whoever can write the folder that
/// holds the database and its lock can plant a link there that turns a root run's lock write or
/// database creation into a write anywhere, or a crafted database that steers `prune`.
///
/// Trusted: the folder (a symbolic link to it only when the link is the user's or root's), the
/// database, its `-wal`/`-shm` and `<state>.lock`, each owned by the running user or root and
/// writable by no one else. With `shared_folder` (a team's folder on purpose): group-writable is
/// fine and so is another member of the folder's group as owner; writable by others never, links
/// to files never.
package struct StateFolderTrust: Sendable {
    /// `state: { shared_folder: true }`.
    package var sharedFolder: Bool

    package init(sharedFolder: Bool) { self.sharedFolder = sharedFolder }

    /// Refuses the state folder `dir` (which exists) when someone else controls it.
    package func checkFolder(_ dir: String) throws(AudioError) {
        var st = stat()
        guard FileNameBytes.withCPath(dir, { lstat($0, &st) }) == 0 else { throw AudioError.system(dir, "cannot read the state folder", errno: errno) }
        if (st.st_mode & S_IFMT) == S_IFLNK {
            // A link the user or root made (a state folder on another disk) is followed; one
            // planted by another user is not.
            if !ownerTrusted(st, shared: false) { throw refusal(dir, "state folder", st, "is a symbolic link another user made") }
            guard FileNameBytes.withCPath(dir, { stat($0, &st) }) == 0 else { throw AudioError.system(dir, "cannot read the state folder", errno: errno) }
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { throw AudioError.refused(path: dir, detail: "the state folder is not a folder") }
        try check(dir, "state folder", st)
    }

    /// Refuses a state file (database, WAL, lock) already open as `fd`: not a regular file, or
    /// someone else's.
    package func checkOpenFile(_ fd: Int32, path: String, what: String) throws(AudioError) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw AudioError.system(path, "cannot read the \(what)", errno: errno) }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw refusal(path, what, st, "is not a regular file") }
        try check(path, what, st)
    }

    /// Refuses a state file at `path` when it is a symbolic link, not a regular file or someone
    /// else's; nothing there is fine. For the files SQLite opens itself (`-wal`, `-shm`).
    package func checkFile(_ path: String, what: String) throws(AudioError) {
        var st = stat()
        guard FileNameBytes.withCPath(path, { lstat($0, &st) }) == 0 else { return }
        if (st.st_mode & S_IFMT) == S_IFLNK { throw refusal(path, what, st, "is a symbolic link") }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw refusal(path, what, st, "is not a regular file") }
        try check(path, what, st)
    }

    /// Opens (creating when missing, mode 0644) the state file at `path` read-write without
    /// following a link and checks it. The caller closes the descriptor.
    package func openFile(_ path: String, what: String) throws(AudioError) -> Int32 {
        // O_NONBLOCK: a FIFO planted under the name must not hang the run before fstat says what it is.
        let flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK
        for _ in 0..<3 {
            var fd = FileNameBytes.withCPath(path) { open($0, flags) }
            if fd < 0 && errno == ENOENT { fd = FileNameBytes.withCPath(path) { open($0, flags | O_CREAT | O_EXCL, 0o644) } }
            if fd < 0 && errno == EEXIST { continue }   // made meanwhile: open it as it is
            if fd < 0 && errno == ELOOP {
                var st = stat()
                _ = FileNameBytes.withCPath(path) { lstat($0, &st) }
                throw refusal(path, what, st, "is a symbolic link")
            }
            if fd < 0 { throw AudioError.system(path, "cannot open the \(what)", errno: errno) }
            do { try checkOpenFile(fd, path: path, what: what) } catch { close(fd); throw error }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            return fd
        }
        throw AudioError.system(path, "cannot open the \(what)", errno: EEXIST)
    }

    private func check(_ path: String, _ what: String, _ st: stat) throws(AudioError) {
        if !ownerTrusted(st, shared: sharedFolder) {
            throw refusal(path, what, st, "belongs to another user than \(Self.user(geteuid()))")
        }
        if st.st_mode & S_IWOTH != 0 { throw refusal(path, what, st, "is writable by every user") }
        if st.st_mode & S_IWGRP != 0 && !sharedFolder { throw refusal(path, what, st, "is writable by its group (\(Self.group(st.st_gid)))") }
    }

    /// The running user or root; with `shared`, also any owner when the file's group is one of
    /// the running user's.
    private func ownerTrusted(_ st: stat, shared: Bool) -> Bool {
        if st.st_uid == geteuid() || st.st_uid == 0 { return true }
        guard shared else { return false }
        if st.st_gid == getegid() { return true }
        let n = getgroups(0, nil)
        var groups = [gid_t](repeating: 0, count: Int(max(n, 0)))
        return getgroups(n, &groups) >= 0 && groups.contains(st.st_gid)
    }

    private func refusal(_ path: String, _ what: String, _ st: stat, _ why: String) -> AudioError {
        let mode = String(st.st_mode & 0o7777, radix: 8)
        let fix = sharedFolder ? "make it the folder group's and not writable by others"
            : "remove it, or make it yours and writable only by you (chown, chmod go-w); a folder a team shares on purpose takes `state: { path: …, shared_folder: true }`"
        return .refused(path: path, detail: "the \(what) \(why) (owner \(Self.user(st.st_uid)), group \(Self.group(st.st_gid)), mode 0\(mode)); segno does not trust state another user can change: \(fix)")
    }

    /// "root (uid 0)".
    static package func user(_ uid: uid_t) -> String {
        guard let pw = getpwuid(uid), let name = pw.pointee.pw_name else { return "uid \(uid)" }
        return "\(String(cString: name)) (uid \(uid))"
    }

    static private func group(_ gid: gid_t) -> String {
        guard let gr = getgrgid(gid), let name = gr.pointee.gr_name else { return "gid \(gid)" }
        return "\(String(cString: name))"
    }
}
