import Foundation
import Glibc
import SegnoAudio
import SegnoCore

/// Linux inotify, as the folder watcher needs it: one non-blocking instance, watches added per
/// folder, events read in batches. Not thread-safe: one thread owns it (`FolderWatch`'s).
final package class Inotify {
    /// One event: the watch it came from, the kernel's mask bits, and the child's name bytes
    /// (empty for events about the watched folder itself).
    package struct Event {
        package var wd: Int32
        package var mask: UInt32
        package var name: [UInt8]

        package func has(_ bit: Int32) -> Bool { mask & UInt32(bitPattern: bit) != 0 }
    }

    /// Why a folder could not be watched.
    package enum AddFailure: Error {
        /// `fs.inotify.max_user_watches` reached.
        case limit
        /// Gone, unreadable, or not a folder any more.
        case other(Int32)
    }

    /// What every folder is watched for: files finished (closed after writing, moved in, created
    /// — a hard link or a symbolic link has no close), files gone (deleted, moved out: `prune`),
    /// folders made or moved in (watched in turn), and the folder itself deleted.
    static package let folderMask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF
        | IN_ONLYDIR | IN_EXCL_UNLINK)

    package let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    /// Opens an instance (close-on-exec, non-blocking). Throws the errno text, naming the limit
    /// when it is `fs.inotify.max_user_instances`.
    package init() throws(RunError) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else {
            let e = errno
            let hint = e == EMFILE ? " (fs.inotify.max_user_instances reached; raise it with sysctl)" : ""
            throw .input("--watch: cannot start inotify: \(String(cString: strerror(e)))\(hint)")
        }
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    /// Watches one folder (following a symbolic link to it). Returns the watch descriptor; the
    /// kernel hands back the same one for a folder already watched.
    package func add(_ path: String) -> Result<Int32, AddFailure> {
        let wd = FileNameBytes.withCPath(path) { inotify_add_watch(fd, $0, Self.folderMask) }
        if wd >= 0 { return .success(wd) }
        return .failure(errno == ENOSPC ? .limit : .other(errno))
    }

    /// Stops watching one folder (its `IN_IGNORED` follows).
    package func remove(_ wd: Int32) { _ = inotify_rm_watch(fd, wd) }

    /// Waits up to `seconds` for events to read. Called by the watcher thread between its checks.
    package func wait(seconds: Double) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ms = Int32(max(0, min(seconds, 3600)) * 1000)
        return poll(&p, 1, ms) > 0 && p.revents & Int16(POLLIN) != 0
    }

    /// Every event queued now (none when nothing is queued).
    package func read() -> [Event] {
        var events: [Event] = []
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }  // EAGAIN: drained
            buffer.withUnsafeBytes { raw in
                var off = 0
                // struct inotify_event { int wd; uint32_t mask, cookie, len; char name[len]; }
                while off + 16 <= n {
                    let wd = raw.loadUnaligned(fromByteOffset: off, as: Int32.self)
                    let mask = raw.loadUnaligned(fromByteOffset: off + 4, as: UInt32.self)
                    let len = Int(raw.loadUnaligned(fromByteOffset: off + 12, as: UInt32.self))
                    let nameBytes = raw[(off + 16)..<min(n, off + 16 + len)].prefix { $0 != 0 }
                    events.append(Event(wd: wd, mask: mask, name: Array(nameBytes)))
                    off += 16 + len
                }
            }
        }
        return events
    }
}
