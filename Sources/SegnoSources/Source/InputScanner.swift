import Foundation
import SegnoCore

/// Walks `input.root` recursively with readdir/fstatat: include/exclude patterns, hidden files
/// skipped unless included, symbolic links (to files and folders) not followed unless asked (and
/// never in a loop), the output root and every `.segno` folder left out, files younger than `settle` skipped.
public struct InputScanner {
    public let input: JobSpec.Input
    /// Folders never scanned (the output root when it lies inside the input root).
    public let skipDirectories: Set<String>

    public init(input: JobSpec.Input, skipDirectories: Set<String>) {
        self.input = input
        self.skipDirectories = skipDirectories
    }

    /// A name's bytes with valid UTF-8 kept and every other byte written `\xNN`.
    static package func escaped(_ bytes: [UInt8]) -> String {
        var out = ""
        var i = 0
        while i < bytes.count {
            // The longest valid UTF-8 sequence starting here (1–4 bytes), else one escaped byte.
            var taken = false
            for n in stride(from: min(4, bytes.count - i), through: 1, by: -1) {
                if let s = String(validating: bytes[i..<(i + n)], as: UTF8.self), s.unicodeScalars.count == 1 {
                    out += s; i += n; taken = true; break
                }
            }
            if !taken { out += String(format: "\\x%02x", bytes[i]); i += 1 }
        }
        return out
    }

    /// Walks the tree; files come back sorted by relative path so plans and reports are stable.
    public func scan(now: Date = Date()) throws -> ScanResult {
        var files: [ScannedFile] = []
        var problems: [ScanProblem] = []
        var settlingPaths = Set<String>()
        var unreadable: [ScannedFile] = []
        var st = stat()
        guard stat(input.root, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw AudioError.missing(path: input.root)
        }
        var visited: Set<[UInt64]> = [[UInt64(st.st_dev), UInt64(st.st_ino)]]
        // Skipped folders by device and inode too, so a link into the output root is not followed.
        var skipped = Set<[UInt64]>()
        for dir in skipDirectories {
            var sst = stat()
            if stat(dir, &sst) == 0 { skipped.insert([UInt64(sst.st_dev), UInt64(sst.st_ino)]) }
        }
        let cutoff = now.timeIntervalSince1970 - input.settle
        var stack: [String] = [""]
        while let rel = stack.popLast() {
            let abs = rel.isEmpty ? input.root : input.root + "/" + rel
            guard let dir = opendir(abs) else {
                problems.append(ScanProblem(path: abs, reason: "cannot read folder: \(String(cString: strerror(errno)))"))
                continue
            }
            let dfd = dirfd(dir)
            while let entry = readdir(dir) {
                // A name that is not UTF-8 is taken as its bytes (`FileNameBytes`); only one that
                // cannot be mapped back to them is left for a rename.
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { FileNameBytes.string(cString: $0) }
                }
                guard let name else {
                    let bytes = withUnsafePointer(to: entry.pointee.d_name) {
                        $0.withMemoryRebound(to: UInt8.self, capacity: 256) { Array(UnsafeBufferPointer(start: $0, count: strlen(UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)))) }
                    }
                    let escaped = Self.escaped(bytes)
                    var cst = stat()
                    let childRel = rel.isEmpty ? escaped : rel + "/" + escaped
                    let isFile = bytes.withUnsafeBufferPointer { b in
                        (Array(b) + [0]).withUnsafeBufferPointer { fstatat(dfd, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), &cst, 0) == 0 }
                    } && (cst.st_mode & S_IFMT) == S_IFREG
                    if isFile && input.include.contains(where: { $0.matches(childRel) }) {
                        let mtimeNs = Int64(cst.st_mtim.tv_sec) * 1_000_000_000 + Int64(cst.st_mtim.tv_nsec)
                        unreadable.append(ScannedFile(relativePath: childRel, absolutePath: abs + "/" + escaped,
                                                      identity: FileIdentity(size: Int64(cst.st_size), mtimeNs: mtimeNs, inode: Int64(cst.st_ino))))
                    }
                    continue
                }
                if name == "." || name == ".." { continue }
                let childRel = rel.isEmpty ? name : rel + "/" + name
                let childAbs = abs + "/" + name
                var cst = stat()
                guard fstatat(dfd, name, &cst, AT_SYMLINK_NOFOLLOW) == 0 else {
                    problems.append(ScanProblem(path: childAbs, reason: String(cString: strerror(errno))))
                    continue
                }
                var isLink = false
                if (cst.st_mode & S_IFMT) == S_IFLNK {
                    isLink = true
                    guard fstatat(dfd, name, &cst, 0) == 0 else {
                        // ELOOP: the link leads back to itself (a → b → a); else its target is missing.
                        let why = errno == ELOOP ? "symbolic link loop" : errno == ENOENT ? "broken symbolic link" : "symbolic link: \(String(cString: strerror(errno)))"
                        problems.append(ScanProblem(path: childAbs, reason: why))
                        continue
                    }
                }
                let kind = cst.st_mode & S_IFMT
                if kind == S_IFDIR {
                    if name == ".segno" || skipDirectories.contains(childAbs) { continue }
                    if input.exclude.contains(where: { $0.matches(childRel) }) { continue }
                    if isLink && !input.followLinks { continue }
                    guard input.include.contains(where: { $0.mayMatchBelow(childRel) }) else { continue }
                    let key = [UInt64(cst.st_dev), UInt64(cst.st_ino)]
                    if skipped.contains(key) { continue }
                    if !visited.insert(key).inserted { continue }  // a loop, or a folder seen through another link
                    stack.append(childRel)
                } else if kind == S_IFREG {
                    if name.hasPrefix(OutputFile.tempPrefix) { continue }
                    // `follow_links: false` holds for files as for folders: a link planted in the
                    // input could lead anywhere (another user's file, a device's data).
                    if isLink && !input.followLinks { continue }
                    guard input.include.contains(where: { $0.matches(childRel) }) else { continue }
                    if input.exclude.contains(where: { $0.matches(childRel) }) { continue }
                    let mtimeNs = Int64(cst.st_mtim.tv_sec) * 1_000_000_000 + Int64(cst.st_mtim.tv_nsec)
                    // To the nanosecond: whole seconds would let a file written 0.1 s ago through.
                    if Double(cst.st_mtim.tv_sec) + Double(cst.st_mtim.tv_nsec) / 1e9 > cutoff { settlingPaths.insert(childRel); continue }
                    files.append(ScannedFile(relativePath: childRel, root: input.root,
                                             identity: FileIdentity(size: Int64(cst.st_size), mtimeNs: mtimeNs, inode: Int64(cst.st_ino))))
                } else if input.include.contains(where: { $0.matches(childRel) }) {
                    problems.append(ScanProblem(path: childAbs, reason: "not a regular file"))
                }
            }
            closedir(dir)
        }
        files.sort { $0.relativePath < $1.relativePath }
        return ScanResult(files: files, problems: problems, unreadableNames: unreadable, settlingPaths: settlingPaths)
    }
}
