import Foundation

/// Temporary files a killed run left: every file segno writes goes through `OutputFile`, whose
/// temporary names start with `OutputFile.tempPrefix` and name their writer (host hash and pid).
enum Temporaries {
    /// Deletes `.segno-tmp-*` files under `root`. Called before work starts: under the run lock
    /// (SQLite) every leftover goes; with shared state (`sharedWithOtherWorkers`) only those of
    /// processes that are gone — dead pids on this host, or files untouched for an hour elsewhere.
    static func remove(under root: String, sharedWithOtherWorkers: Bool = false) {
        guard let e = FileManager.default.enumerator(atPath: root) else { return }
        let me = OutputFile.owner
        let host = String(me.prefix { $0 != "-" })
        while let rel = e.nextObject() as? String {
            let name = (rel as NSString).lastPathComponent
            guard name.starts(with: OutputFile.tempPrefix) else { continue }
            let path = root + "/" + rel
            if sharedWithOtherWorkers && isLive(name.dropFirst(OutputFile.tempPrefix.count), host: host, path: path) { continue }
            unlink(path)
        }
    }

    /// True when the writer named in a temporary's name may still be writing it.
    static func isLive(_ tail: Substring, host: String, path: String) -> Bool {
        let owner = tail.prefix { $0 != "." }
        let parts = owner.split(separator: "-")
        guard parts.count == 2, let pid = Int32(parts[1]) else { return false }
        if parts[0] == host { return pid == getpid() || kill(pid, 0) == 0 }
        var st = stat()
        guard stat(path, &st) == 0 else { return false }
        return Date().timeIntervalSince1970 - Double(st.st_mtim.tv_sec) < 3600
    }
}
