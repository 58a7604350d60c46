import Foundation

/// A source file found by the scanner.
public struct ScannedFile: Sendable {
    /// Relative to the input root, `/`-separated.
    public var relativePath: String
    /// Where the source finds the recording (a path for folders). A folder scan stores its root
    /// once for every file (one shared string) and joins it with `relativePath` when asked: a
    /// second copy of every path would be a fifth of a 1,000,000-file plan's memory.
    public var absolutePath: String {
        get { joined ? location + "/" + relativePath : location }
        set { location = newValue; joined = false }
    }
    public var identity: FileIdentity
    /// `absolutePath` itself, or (when `joined`) the root it is `relativePath` under.
    private var location: String
    private var joined: Bool

    /// A recording the source finds at `absolutePath` (any text: a path, an `s3://` URL).
    package init(relativePath: String, absolutePath: String, identity: FileIdentity) {
        self.relativePath = relativePath
        self.location = absolutePath
        self.joined = false
        self.identity = identity
    }

    /// A recording at `root + "/" + relativePath` (a folder scan: every file shares `root`'s storage).
    package init(relativePath: String, root: String, identity: FileIdentity) {
        self.relativePath = relativePath
        self.location = root
        self.joined = true
        self.identity = identity
    }

    /// True when `absolutePath`'s bytes start with `prefix`'s (a folder test), without joining the path.
    package func absolutePathHasPrefix(_ prefix: String) -> Bool {
        let l = location.utf8, p = prefix.utf8
        guard joined else { return l.starts(with: p) }
        if p.count <= l.count { return l.starts(with: p) }
        let rest = p.dropFirst(l.count)
        return p.starts(with: l) && rest.first == UInt8(ascii: "/") && relativePath.utf8.starts(with: rest.dropFirst())
    }
}

/// What a scan found.
public struct ScanResult: Sendable {
    /// Recordings ready to process, sorted by relative path.
    public var files: [ScannedFile] = []
    /// What could not be read (a non-empty list holds `prune` back).
    public var problems: [ScanProblem] = []
    /// Files whose names `FileNameBytes` cannot carry (UTF-8 that already holds its private-use
    /// code points), with the name's bytes escaped: they fail with a message asking for a rename.
    /// A plain Latin-1 name (`caf\xe9.wav`) is not here: it is processed like any other.
    public var unreadableNames: [ScannedFile] = []
    /// Files modified within `settle`: picked up by a later run.
    public var settling: Int { settlingPaths.count }
    public var settlingPaths = Set<String>()

    package init(files: [ScannedFile] = [], problems: [ScanProblem] = [], unreadableNames: [ScannedFile] = [], settlingPaths: Set<String> = []) {
        self.files = files; self.problems = problems; self.unreadableNames = unreadableNames; self.settlingPaths = settlingPaths
    }
}

/// Something the scanner could not take, reported but not fatal.
public struct ScanProblem: Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(AudioError.quoted(path)): \(reason)" }
}

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
