import Foundation

/// Temporary files a killed run left: every file segno writes goes through `OutputFile`, whose
/// temporary names start with `OutputFile.tempPrefix` and name their writer (host hash and pid).
package enum Temporaries {
    /// Deletes `.segno-tmp-*` files under `root`. Called before work starts: under the run lock
    /// (SQLite) every leftover goes; with shared state (`sharedWithOtherWorkers`) only those of
    /// processes that are gone — dead pids on this host, or files untouched for an hour elsewhere.
    static package func remove(under root: String, sharedWithOtherWorkers: Bool = false) {
        let me = OutputFile.owner
        let host = String(me.prefix { $0 != "-" })
        // readdir with d_type, not FileManager's enumerator: an output tree of 100,000 files is
        // walked in a tenth of a second instead of half a second (bench `fleet`, no-op rerun).
        let prefix = Array(OutputFile.tempPrefix.utf8CString.dropLast())
        var folders = [root]
        while let dir = folders.popLast() {
            guard let d = opendir(dir) else { continue }
            defer { closedir(d) }
            while let entry = readdir(d) {
                let (isTemporary, name): (Bool, String?) = withUnsafePointer(to: &entry.pointee.d_name) { raw in
                    raw.withMemoryRebound(to: CChar.self, capacity: 256) { c in
                        if c[0] == 46 && (c[1] == 0 || (c[1] == 46 && c[2] == 0)) { return (false, nil) }  // . and ..
                        let temporary = strncmp(c, prefix, prefix.count) == 0
                        return (temporary, temporary || entry.pointee.d_type == UInt8(DT_DIR) || entry.pointee.d_type == UInt8(DT_UNKNOWN) ? String(cString: c) : nil)
                    }
                }
                guard let name else { continue }
                let path = dir + "/" + name
                if !isTemporary {
                    var st = stat()
                    if entry.pointee.d_type == UInt8(DT_DIR) || (lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR) { folders.append(path) }
                    continue
                }
                if sharedWithOtherWorkers && isLive(name.dropFirst(OutputFile.tempPrefix.count), host: host, path: path) { continue }
                unlink(path)
            }
        }
    }

    /// True when the writer named in a temporary's name may still be writing it.
    static package func isLive(_ tail: Substring, host: String, path: String) -> Bool {
        let owner = tail.prefix { $0 != "." }
        let parts = owner.split(separator: "-")
        guard parts.count == 2, let pid = Int32(parts[1]) else { return false }
        if parts[0] == host { return pid == getpid() || kill(pid, 0) == 0 }
        var st = stat()
        guard stat(path, &st) == 0 else { return false }
        return Date().timeIntervalSince1970 - Double(st.st_mtim.tv_sec) < 3600
    }
}
