import CLinux
import Foundation
import Synchronization

/// A file written under a temporary name in its final folder, synced, then renamed into place,
/// so a reader never sees half a file and a crash leaves nothing that looks finished.
/// Every file segno writes goes through here: temporary names start with `OutputFile.tempPrefix`,
/// and the runner removes leftovers on start-up (nothing is written by Foundation's own
/// "atomic" writes, whose `.nosync` temporaries nobody would clean).
public final class OutputFile {
    /// Prefix of every temporary file segno writes.
    public static let tempPrefix = ".segno-tmp-"
    /// Longest file name (bytes) the common Linux file systems take.
    public static let nameMax = 255

    /// The final path.
    public let finalPath: String
    /// Where the bytes go until `commit()`.
    public let tempPath: String
    private var done = false

    /// Checks the final name's length, creates the folder if needed and picks a temporary name
    /// beside `finalPath`. Called once per output, before the first byte is written.
    public init(finalPath: String) throws(AudioError) {
        self.finalPath = finalPath
        let dir = (finalPath as NSString).deletingLastPathComponent
        var base = (finalPath as NSString).lastPathComponent
        let length = base.utf8.count
        if length > Self.nameMax {
            throw .refused(path: finalPath, detail: "output name too long (\(length) bytes, limit \(Self.nameMax))")
        }
        try Self.makeFolders(dir, for: finalPath)
        let token = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        // Keep the temporary name within NAME_MAX for long final names.
        while base.utf8.count > 200 { base.removeFirst() }
        // Under a pinned output root, through the root's open folder (`OutputRootPin`).
        tempPath = (OutputRootPin.physical(dir) as NSString).appendingPathComponent("\(Self.tempPrefix)\(Self.owner).\(token)-\(base)")
    }

    deinit { if !done { discard() } }

    /// Who writes a temporary: "<host hash>-<pid>", so a worker sharing the output tree with
    /// others removes only the leftovers of dead processes (`Temporaries`).
    static package let owner: String = {
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, 255)
        var hash: UInt32 = 2166136261
        for b in String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).utf8 { hash = (hash ^ UInt32(b)) &* 16777619 }
        return String(hash, radix: 36) + "-" + String(getpid())
    }()

    /// Creates `dir` and its parents (mode 0755), with the failing folder and `errno` in the error.
    static package func makeFolders(_ dir: String, for path: String) throws(AudioError) {
        var st = stat()
        if stat(OutputRootPin.physical(dir), &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFDIR { return }
            // A file stands where the folder should be: the environment's to fix, retried next run.
            throw AudioError.system(path, "cannot create folder \(AudioError.quoted(dir))", errno: ENOTDIR)
        }
        let parent = (dir as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != dir { try makeFolders(parent, for: path) }
        if mkdir(OutputRootPin.physical(dir), 0o755) != 0 && errno != EEXIST {
            throw AudioError.system(path, "cannot create folder \(AudioError.quoted(dir))", errno: errno)
        }
    }

    /// Writes `bytes` to the temporary file (created, truncated). Called before `commit()`.
    public func write(_ bytes: some Collection<UInt8>) throws(AudioError) {
        let fd = open(tempPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if fd < 0 { throw AudioError.system(finalPath, "cannot create", errno: errno) }
        defer { close(fd) }
        var failure: Int32 = 0
        bytes.withContiguousStorageIfAvailable { buf in failure = Self.writeAll(fd, buf) } ?? {
            failure = Array(bytes).withUnsafeBufferPointer { Self.writeAll(fd, $0) }
        }()
        if failure != 0 { throw AudioError.system(finalPath, "write failed", errno: failure) }
    }

    /// Copies `source` into the temporary file in 1 MiB pieces. Called before `commit()`.
    public func copy(from source: String) throws(AudioError) {
        let inFd = open(OutputRootPin.physical(source), O_RDONLY | O_CLOEXEC)
        if inFd < 0 { throw AudioError.system(source, "cannot open", errno: errno) }
        defer { close(inFd) }
        let outFd = open(tempPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if outFd < 0 { throw AudioError.system(finalPath, "cannot create", errno: errno) }
        defer { close(outFd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(inFd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw AudioError.system(source, "read failed", errno: errno) }
            if n == 0 { return }
            let failure = buffer.withUnsafeBufferPointer { Self.writeAll(outFd, UnsafeBufferPointer(rebasing: $0[0..<n])) }
            if failure != 0 { throw AudioError.system(finalPath, "write failed", errno: failure) }
        }
    }

    /// Writes every byte; returns 0 or the `errno` of the failing write.
    static package func writeAll(_ fd: Int32, _ buf: UnsafeBufferPointer<UInt8>) -> Int32 {
        var off = 0
        while off < buf.count {
            let n = Foundation.write(fd, buf.baseAddress! + off, buf.count - off)
            if n < 0 { if errno == EINTR { continue }; return errno }
            off += n
        }
        return 0
    }

    /// Marks the temporary file as segno's (`markAttribute`), syncs it to disk, renames it to the
    /// final name and syncs the folder. Called once, after the writer has closed the file.
    public func commit() throws(AudioError) {
        let fd = open(tempPath, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw AudioError.system(finalPath, "temporary file vanished", errno: errno) }
        // Best effort: a file system without user attributes (some network shares) keeps the file
        // unmarked, and segno then replaces it only when the state records it.
        _ = fsetxattr(fd, Self.markAttribute, Self.markValue, Self.markValue.count, 0)
        let syncResult = fsync(fd)
        let syncErr = errno
        close(fd)
        if syncResult != 0 {
            discard()
            throw AudioError.system(finalPath, "fsync failed", errno: syncErr)
        }
        if rename(tempPath, OutputRootPin.physical(finalPath)) != 0 {
            let e = errno
            discard()
            if e == ENAMETOOLONG {
                throw .refused(path: finalPath, detail: "output name too long (\((finalPath as NSString).lastPathComponent.utf8.count) bytes, limit \(Self.nameMax))")
            }
            throw AudioError.system(finalPath, "rename failed", errno: e)
        }
        done = true
        Self.syncDirectory(of: OutputRootPin.physical(finalPath))
    }

    /// The extended attribute (`user.segno`, value "1") on every file segno writes, so a later run
    /// or command can tell its own files from a user's file at the same path even when the state
    /// does not record it (a crash between the rename and the state write, a lost database).
    public static let markAttribute = "user.segno"
    static package let markValue: [UInt8] = [0x31]

    /// True when the file at `path` carries segno's mark (`markAttribute`): segno wrote it.
    /// Called before replacing an existing file; follows no symbolic link.
    public static func isMarked(_ path: String) -> Bool {
        var value: UInt8 = 0
        return FileNameBytes.withCPath(OutputRootPin.physical(path)) { lgetxattr($0, markAttribute, &value, 1) } == 1 && value == markValue[0]
    }

    /// Where a one-off `segno convert` keeps the input it made a file from (the input's absolute
    /// path, as bytes), beside the mark: a later convert from another input into the same name
    /// says so instead of replacing it silently.
    public static let sourceAttribute = "user.segno.from"

    /// Records `source` as what the file at `path` was made from (best effort: a file system
    /// without user attributes keeps nothing).
    public static func recordSource(_ source: String, of path: String) {
        let value = FileNameBytes.bytes(source)
        _ = FileNameBytes.withCPath(path) { lsetxattr($0, sourceAttribute, value, value.count, 0) }
    }

    /// The input recorded by `recordSource` for the file at `path`, nil when none is.
    public static func recordedSource(of path: String) -> String? {
        var value = [UInt8](repeating: 0, count: 8192)
        let n = FileNameBytes.withCPath(path) { lgetxattr($0, sourceAttribute, &value, value.count) }
        return n > 0 ? FileNameBytes.string(value.prefix(n)) : nil
    }

    /// True when something (a file, link or folder) stands at `path`.
    public static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(OutputRootPin.physical(path), &st) == 0
    }

    /// Writes a small file whole: temporary name, sync, rename. For waveform data, sidecars, reports.
    public static func write(_ bytes: some Collection<UInt8>, to path: String) throws(AudioError) {
        let out = try OutputFile(finalPath: path)
        do { try out.write(bytes); try out.commit() } catch { out.discard(); throw error }
    }

    /// Removes the temporary file (abandoned or failed output). Safe to call twice.
    public func discard() {
        done = true
        unlink(tempPath)
    }

    /// fsyncs the folder holding `path`, so a rename survives a power cut.
    static package func syncDirectory(of path: String) {
        let dir = (path as NSString).deletingLastPathComponent
        let fd = open(dir.isEmpty ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { fsync(fd); close(fd) }
    }
}

extension OutputFile {
    /// True when both paths name one existing file (same device and inode), however spelt.
    public static func sameFile(_ a: String, _ b: String) -> Bool {
        var sa = stat(), sb = stat()
        return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
    }
}

/// Where the library sends what its caller asked to see on standard output (`segno waveform -o -`):
/// the library never writes to the process's standard streams itself. Made by the command line.
public struct StandardOutputSink: Sendable {
    /// Writes `data` whole; throws when the reader went away.
    public let write: @Sendable (Data) throws -> Void
    public init(_ write: @escaping @Sendable (Data) throws -> Void) { self.write = write }
}

/// An output root held open for a run (issue 33): every file `OutputFile` writes below it, its
/// folders, temporaries, renames and mark checks, goes through the folder opened when the run
/// started (`/proc/<pid>/fd/<fd>/…`), so a root swapped for a symbolic link mid-run cannot
/// redirect the writes. The root itself may be a link when the run starts (resolved once, then);
/// folders below it are followed as they are. Paths shown to the user stay as the spec spells
/// them. Decision 0070.
public final class OutputRootPin: Sendable {
    /// Pinned roots → (open folder, holders), for this process.
    private static let pins = Mutex<[String: (fd: Int32, holders: Int)]>([:])
    private let root: String

    /// Opens `root` (creating it, mode 0755, if missing) and pins it until `release()`; nil when
    /// it cannot be opened or /proc is not mounted (then writes go by path, as without a pin).
    /// Called by a run before its first recording.
    public init?(_ root: String) {
        let root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
        guard access("/proc/self/fd", X_OK) == 0 else { return nil }
        do { try OutputFile.makeFolders(root, for: root) } catch { return nil }
        self.root = root
        let opened = Self.pins.withLock { pins -> Bool in
            if let p = pins[root] { pins[root] = (p.fd, p.holders + 1); return true }
            let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { return false }
            pins[root] = (fd, 1)
            return true
        }
        if !opened { return nil }
    }

    /// Ends this hold; the folder is closed when no run holds it. Called when the run's work ends.
    public func release() {
        Self.pins.withLock { pins in
            guard let p = pins[root] else { return }
            if p.holders > 1 { pins[root] = (p.fd, p.holders - 1) } else { close(p.fd); pins[root] = nil }
        }
    }

    /// `path` as the kernel should open it: through its pinned root's open folder when one holds
    /// it, else unchanged.
    public static func physical(_ path: String) -> String {
        pins.withLock { pins in
            if pins.isEmpty { return path }
            // Byte by byte: a root is a prefix of its files' paths as spelt, not as read.
            let bytes = path.utf8
            for (root, p) in pins where bytes.starts(with: root.utf8) {
                let rest = bytes.dropFirst(root.utf8.count)
                guard rest.isEmpty || rest.first == UInt8(ascii: "/") else { continue }
                return "/proc/\(getpid())/fd/\(p.fd)" + String(decoding: rest, as: UTF8.self)
            }
            return path
        }
    }
}
