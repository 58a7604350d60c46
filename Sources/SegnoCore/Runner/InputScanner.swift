import Foundation

/// A source file found by the scanner.
public struct ScannedFile: Sendable {
    /// Relative to the input root, `/`-separated.
    public var relativePath: String
    public var absolutePath: String
    public var identity: FileIdentity
}

/// Something the scanner could not take, reported but not fatal.
public struct ScanProblem: Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(AudioError.quoted(path)): \(reason)" }
}

/// Walks `input.root` recursively with readdir/fstatat: include/exclude patterns, hidden files
/// skipped unless included, symbolic links to folders not followed unless asked (and never in a
/// loop), the output root and every `.segno` folder left out, files younger than `settle` skipped.
public struct InputScanner {
    public let input: JobSpec.Input
    /// Folders never scanned (the output root when it lies inside the input root).
    public let skipDirectories: Set<String>

    public init(input: JobSpec.Input, skipDirectories: Set<String>) {
        self.input = input
        self.skipDirectories = skipDirectories
    }

    /// Walks the tree; files come back sorted by relative path so plans and reports are stable.
    public func scan(now: Date = Date()) throws -> (files: [ScannedFile], problems: [ScanProblem], settling: Int, settlingPaths: Set<String>) {
        var files: [ScannedFile] = []
        var problems: [ScanProblem] = []
        var settling = 0
        var settlingPaths = Set<String>()
        var st = stat()
        guard stat(input.root, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw AudioError.missing(path: input.root)
        }
        var visited: Set<[UInt64]> = [[UInt64(st.st_dev), UInt64(st.st_ino)]]
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
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(validatingCString: $0) }
                }
                guard let name else {
                    problems.append(ScanProblem(path: abs + "/?", reason: "file name is not valid UTF-8; rename it"))
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
                        problems.append(ScanProblem(path: childAbs, reason: "broken symbolic link"))
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
                    if !visited.insert(key).inserted { continue }  // a loop, or a folder seen through another link
                    stack.append(childRel)
                } else if kind == S_IFREG {
                    if name.hasPrefix(OutputFile.tempPrefix) { continue }
                    guard input.include.contains(where: { $0.matches(childRel) }) else { continue }
                    if input.exclude.contains(where: { $0.matches(childRel) }) { continue }
                    let mtimeNs = Int64(cst.st_mtim.tv_sec) * 1_000_000_000 + Int64(cst.st_mtim.tv_nsec)
                    if Double(cst.st_mtim.tv_sec) > cutoff { settling += 1; settlingPaths.insert(childRel); continue }
                    files.append(ScannedFile(relativePath: childRel, absolutePath: childAbs,
                                             identity: FileIdentity(size: Int64(cst.st_size), mtimeNs: mtimeNs, inode: Int64(cst.st_ino))))
                } else if input.include.contains(where: { $0.matches(childRel) }) {
                    problems.append(ScanProblem(path: childAbs, reason: "not a regular file"))
                }
            }
            closedir(dir)
        }
        files.sort { $0.relativePath < $1.relativePath }
        return (files, problems, settling, settlingPaths)
    }
}
