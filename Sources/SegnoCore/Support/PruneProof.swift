import CLinux
import Crypto
import Foundation

/// Why `prune` kept a file: it cannot prove segno wrote it (a state row pointing outside the
/// output root, a link on the way, no mark, another size or hash). Nothing was deleted.
package struct PruneRefusal: Error, Sendable, CustomStringConvertible {
    package var path: String
    package var reason: String
    package init(path: String, reason: String) { self.path = path; self.reason = reason }
    package var description: String { "\(AudioError.quoted(path)): \(reason)" }
}

/// Prune deletes only what it proves it wrote (issue 33): the state is a database anyone with
/// write access to it (a shared folder, a PostgreSQL role) can fill with any path. A recorded
/// step's files are deleted only when every one of them
/// - lies inside `root` as written (no `..`, `.` or empty component, not absolute elsewhere),
/// - is reached from `root` through real folders (each opened without following a link),
/// - is a regular file (not a link) carrying segno's mark (`OutputFile.markAttribute`) where the
///   file system keeps user attributes,
/// - and, all together, has the recorded size (when recorded; checked first, it is free) and the
///   recorded hash (`FileHash.combine` of the files' SHA-256 in order).
/// A step with some files already gone cannot be proven (its hash covers all of them): the rest
/// are kept. Deletion is `unlinkat` in the folder that was checked.
package enum PruneProof {
    /// Deletes `paths` (absolute) but those in `keeping`, after proving the whole step; returns the
    /// paths deleted (missing ones count as deleted). Throws `PruneRefusal` and deletes nothing
    /// when the proof fails.
    package static func delete(_ paths: [String], keeping: Set<String> = [], root: String,
                               recordedSize: Int64?, recordedHash: Data) throws(PruneRefusal) -> [String] {
        guard !paths.isEmpty else { return [] }
        let rootFD = FileNameBytes.withCPath(root) { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard rootFD >= 0 else { throw PruneRefusal(path: root, reason: "cannot open the folder: \(String(cString: strerror(errno)))") }
        defer { close(rootFD) }
        var opened: [(path: String, folder: Int32, name: String, file: Int32)] = []
        defer { for o in opened { if o.folder != rootFD { close(o.folder) }; close(o.file) } }
        var missing: [String] = []
        for path in paths {
            guard let (folder, name) = try openFolder(of: path, root: root, rootFD: rootFD) else { missing.append(path); continue }
            let fd = FileNameBytes.withCPath(name) { openat(folder, $0, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
            if fd < 0 {
                let e = errno
                if folder != rootFD { close(folder) }
                if e == ENOENT { missing.append(path); continue }
                throw PruneRefusal(path: path, reason: e == ELOOP ? "is a symbolic link" : "cannot open: \(String(cString: strerror(e)))")
            }
            opened.append((path, folder, name, fd))
        }
        if opened.isEmpty { return paths.filter { !keeping.contains($0) } }
        if !missing.isEmpty {
            throw PruneRefusal(path: opened[0].path, reason: "cannot be proven segno's: other files of its step are gone (\(AudioError.quoted(missing[0])))")
        }
        var sizes: Int64 = 0
        for o in opened {
            var st = stat()
            guard fstat(o.file, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { throw PruneRefusal(path: o.path, reason: "is not a regular file") }
            var value: UInt8 = 0
            let n = fgetxattr(o.file, OutputFile.markAttribute, &value, 1)
            // A file system without user attributes cannot carry the mark: size and hash decide there.
            if (n < 0 && errno != EOPNOTSUPP) || (n >= 0 && (n != 1 || value != OutputFile.markValue[0])) {
                throw PruneRefusal(path: o.path, reason: "carries no segno mark (\(OutputFile.markAttribute)): segno did not write it")
            }
            sizes += Int64(st.st_size)
        }
        if let recordedSize, sizes != recordedSize {
            throw PruneRefusal(path: opened[0].path, reason: "is \(sizes) bytes, not the \(recordedSize) the state recorded")
        }
        var digests: [Data] = []
        for o in opened {
            do { digests.append(try FileHash.sha256(fd: o.file, path: o.path).digest) } catch {
                throw PruneRefusal(path: o.path, reason: "cannot read it to check its hash: \(error)")
            }
        }
        guard FileHash.combine(digests) == recordedHash else {
            throw PruneRefusal(path: opened[0].path, reason: "does not hold what the state recorded (another SHA-256)")
        }
        var deleted = missing
        for o in opened where !keeping.contains(o.path) {
            if FileNameBytes.withCPath(o.name, { unlinkat(o.folder, $0, 0) }) == 0 || errno == ENOENT { deleted.append(o.path) }
        }
        return deleted.filter { !keeping.contains($0) }
    }

    /// The folder holding `path` opened from `rootFD` one real folder at a time, and the file's
    /// name; nil when a folder on the way is gone.
    private static func openFolder(of path: String, root: String, rootFD: Int32) throws(PruneRefusal) -> (Int32, String)? {
        let base = root.hasSuffix("/") ? root : root + "/"
        guard path.hasPrefix(base) else { throw PruneRefusal(path: path, reason: "lies outside \(AudioError.quoted(root))") }
        let parts = path.dropFirst(base.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) {
            throw PruneRefusal(path: path, reason: "does not resolve inside \(AudioError.quoted(root)) as written")
        }
        var fd = rootFD
        for (i, part) in parts.dropLast().enumerated() {
            let next = FileNameBytes.withCPath(part) { openat(fd, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            let e = errno
            if fd != rootFD { close(fd) }
            if next < 0 {
                if e == ENOENT { return nil }
                let folder = base + parts[...i].joined(separator: "/")
                throw PruneRefusal(path: path, reason: e == ELOOP || e == ENOTDIR
                                   ? "its folder \(AudioError.quoted(folder)) is a symbolic link or not a folder"
                                   : "cannot open its folder \(AudioError.quoted(folder)): \(String(cString: strerror(e)))")
            }
            fd = next
        }
        return (fd, parts.last!)
    }
}
