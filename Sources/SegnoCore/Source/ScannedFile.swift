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
    package init(path: String, reason: String) { self.path = path; self.reason = reason }
    public var description: String { "\(AudioError.quoted(path)): \(reason)" }
}
