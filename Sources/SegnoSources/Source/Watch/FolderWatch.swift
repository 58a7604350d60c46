import Dispatch
import Foundation
import Logging
import SegnoAudio
import SegnoCore
import Synchronization

/// The watcher of `segno run --watch`, as the runner's live loop sees it: `finishedCount` is the
/// number of passes asked for so far (the runner passes whenever it grows), `isRunning` turns
/// false on a stop (signal, `--max-time`). One thread owns the inotify instance and every map.
///
/// A pass is asked for when a recording that changed has been quiet for `settle` seconds — its
/// last event and its modification time both that long ago, rounded up to the next whole second
/// (the scan's resolution), so a file written in many chunks, or a hundred files copied in one
/// second, give one pass — when a recording or folder disappeared (`settle` later: `prune`), at
/// once on a queue overflow, and when no pass has run for `rescan` seconds. A due recording whose modification time
/// moved without an event (still open for writing) is put back, not passed for.
final package class FolderWatch: LiveCapture, Sendable {
    private struct Shared {
        var passes = 1  // the catch-up pass at the start
        var running = true
        var startError: RunError?
        var started = false
    }

    private let shared = Mutex(Shared())
    private let done = DispatchGroup()

    /// Starts the watcher thread and returns once every folder is watched. Throws when inotify
    /// cannot start.
    package init(input: JobSpec.Input, skipDirectories: Set<String>, rescan: Double, inbox: WatchInbox, logger: Logger,
         deadline: Date?, shouldStop: @escaping @Sendable () -> Bool) throws(RunError) {
        let ready = DispatchSemaphore(value: 0)
        done.enter()
        Thread.detachNewThread { [self] in
            defer { shared.withLock { $0.running = false }; done.leave() }
            let loop: WatchLoop
            do throws(RunError) {
                loop = try WatchLoop(input: input, skipDirectories: skipDirectories, rescan: rescan, logger: logger)
            } catch {
                shared.withLock { $0.startError = error }
                ready.signal()
                return
            }
            ready.signal()
            loop.run(inbox: inbox, deadline: deadline, shouldStop: shouldStop) {
                shared.withLock { $0.passes += 1 }
            }
        }
        ready.wait()
        if let e = shared.withLock({ $0.startError }) { throw e }
    }

    package var finishedCount: Int { shared.withLock { $0.passes } }
    package var isRunning: Bool { shared.withLock { $0.running } }
    package var failures: [String] { [] }
    package func wait() { done.wait() }
}

/// The watcher thread's state: the inotify instance, which folder each watch is, and the
/// recordings waiting to be quiet. Lives on that one thread.
private final class WatchLoop {
    let input: JobSpec.Input
    let skipDirectories: Set<String>
    let rescan: Double
    let logger: Logger
    let inotify: Inotify
    /// Watch descriptor → folder relative to the input root ("" for the root).
    var folders: [Int32: String] = [:]
    /// Folder relative to the input root → its watch descriptor.
    var watches: [String: Int32] = [:]
    /// Absolute path of a recording → when it is due (seconds since 1970).
    var pending: [String: Double] = [:]
    /// A pass due without a path to check (a name that is not UTF-8, a folder gone).
    var blindDue: Double?
    var nextRescan: Double
    var warnedLimit = false
    /// Why the root could not be watched, for the message at start.
    var rootFailure: String?

    init(input: JobSpec.Input, skipDirectories: Set<String>, rescan: Double, logger: Logger) throws(RunError) {
        self.input = input
        self.skipDirectories = skipDirectories
        self.rescan = rescan
        self.logger = logger
        inotify = try Inotify()
        nextRescan = Date().timeIntervalSince1970 + rescan
        fullWalk()
        guard watches[""] != nil else {
            throw .input("input.root \(AudioError.quoted(input.root)) cannot be watched: \(rootFailure ?? "not a readable folder")")
        }
        logger.info("watching \(AudioError.quoted(input.root)): \(watches.count) folder\(watches.count == 1 ? "" : "s"); settle \(Self.seconds(input.settle)), full rescan every \(Self.seconds(rescan)); SIGTERM stops")
    }

    static func seconds(_ s: Double) -> String {
        if s >= 60, s.truncatingRemainder(dividingBy: 60) == 0 { return "\(Int(s / 60))m" }
        return s == s.rounded() ? "\(Int(s))s" : String(format: "%.1fs", s)
    }

    /// Reads events and checks what is due until a stop or the deadline; `pass` asks the runner
    /// for a pass.
    func run(inbox: WatchInbox, deadline: Date?, shouldStop: @Sendable () -> Bool, pass: () -> Void) {
        while !shouldStop() {
            let now = Date().timeIntervalSince1970
            if let deadline, now >= deadline.timeIntervalSince1970 { break }
            var due = false
            for path in inbox.take() { arm(path, now: now) }
            let nextDue = min(pending.values.min() ?? .infinity, blindDue ?? .infinity, nextRescan)
            if inotify.wait(seconds: min(0.25, max(0, nextDue - now))) {
                due = handle(inotify.read()) || due
            }
            due = checkDue(now: Date().timeIntervalSince1970) || due
            if Date().timeIntervalSince1970 >= nextRescan {
                fullWalk()
                due = true
            }
            if due {
                pass()
                // Every pass scans everything: the next full one is `rescan` after it.
                nextRescan = Date().timeIntervalSince1970 + rescan
            }
        }
    }

    // MARK: the watch set

    /// Watches the root and every folder the scan would enter, and forgets watches on folders no
    /// longer reached (moved out while events were lost).
    func fullWalk() {
        let seen = walk(from: "", armFiles: false)
        for (rel, wd) in watches where !seen.contains(rel) {
            inotify.remove(wd)
            watches[rel] = nil
            folders[wd] = nil
        }
    }

    /// Watches the folder `start` (relative to the root) and those below it that the scan would
    /// enter (same rules: `.segno`, the output root and the state's folder left out by path and by
    /// device/inode, `exclude`, `include` prefixes, links only with `follow_links`, never a
    /// loop). With `armFiles`, its recordings wait to be quiet (a folder just made or moved in:
    /// files may have landed in it before its watch). Returns the folders watched.
    @discardableResult
    func walk(from start: String, armFiles: Bool) -> Set<String> {
        var skipped = Set<[UInt64]>()
        for dir in skipDirectories {
            var st = stat()
            if stat(dir, &st) == 0 { skipped.insert([UInt64(st.st_dev), UInt64(st.st_ino)]) }
        }
        var visited = Set<[UInt64]>()
        var seen = Set<String>()
        var stack = [start]
        let now = Date().timeIntervalSince1970
        while let rel = stack.popLast() {
            let abs = rel.isEmpty ? input.root : input.root + "/" + rel
            var st = stat()
            let found = stat(abs, &st) == 0
            guard found, (st.st_mode & S_IFMT) == S_IFDIR else {
                if rel.isEmpty { rootFailure = found ? "not a folder" : String(cString: strerror(errno)) }
                continue
            }
            let key = [UInt64(st.st_dev), UInt64(st.st_ino)]
            guard !skipped.contains(key), visited.insert(key).inserted else { continue }
            guard watch(rel, abs) else { continue }
            seen.insert(rel)
            guard let dir = opendir(abs) else { continue }
            defer { closedir(dir) }
            let dfd = dirfd(dir)
            while let entry = readdir(dir) {
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { FileNameBytes.string(cString: $0) }  // names are bytes
                }
                guard let name, name != ".", name != ".." else { continue }
                let childRel = rel.isEmpty ? name : rel + "/" + name
                var cst = stat()
                guard fstatat(dfd, name, &cst, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
                let isLink = (cst.st_mode & S_IFMT) == S_IFLNK
                if isLink && fstatat(dfd, name, &cst, 0) != 0 { continue }
                switch cst.st_mode & S_IFMT {
                case S_IFDIR:
                    if entersFolder(name: name, rel: childRel, isLink: isLink),
                       !skipped.contains([UInt64(cst.st_dev), UInt64(cst.st_ino)]) {
                        stack.append(childRel)
                    }
                case S_IFREG where armFiles && takesFile(name: name, rel: childRel):
                    arm(abs + "/" + name, now: now)
                default: break
                }
            }
        }
        return seen
    }

    /// Adds one folder's watch; false when it cannot be watched (the scan reports unreadable
    /// folders; past the kernel's limit the rescan covers the rest).
    func watch(_ rel: String, _ abs: String) -> Bool {
        switch inotify.add(abs) {
        case .success(let wd):
            if let old = folders[wd], old != rel, watches[old] == wd { watches[old] = nil }
            folders[wd] = rel
            watches[rel] = wd
            return true
        case .failure(.limit):
            if rel.isEmpty { rootFailure = "fs.inotify.max_user_watches reached (raise it with sysctl)" }
            if !warnedLimit {
                warnedLimit = true
                logger.warning("--watch: fs.inotify.max_user_watches reached after \(watches.count) folders; changes in the others are found by the full rescan every \(Self.seconds(rescan)) (raise the limit with sysctl)")
            }
            return false
        case .failure(.other(let e)):
            if rel.isEmpty { rootFailure = String(cString: strerror(e)) }
            return false
        }
    }

    /// The scan's rule for entering a folder, less the device/inode checks.
    func entersFolder(name: String, rel: String, isLink: Bool) -> Bool {
        let abs = input.root + "/" + rel
        if name == ".segno" || skipDirectories.contains(abs) { return false }
        if input.exclude.contains(where: { $0.matches(rel) }) { return false }
        if isLink && !input.followLinks { return false }
        return input.include.contains { $0.mayMatchBelow(rel) }
    }

    /// The scan's rule for taking a file as a recording.
    func takesFile(name: String, rel: String) -> Bool {
        !name.hasPrefix(OutputFile.tempPrefix) && input.include.contains { $0.matches(rel) }
            && !input.exclude.contains { $0.matches(rel) }
    }

    // MARK: events

    /// Applies a batch of events; true when a pass is due at once (queue overflow).
    func handle(_ events: [Inotify.Event]) -> Bool {
        let now = Date().timeIntervalSince1970
        var overflow = false
        for e in events {
            if e.has(IN_Q_OVERFLOW) { overflow = true; continue }
            if e.has(IN_IGNORED) {
                // The folder was deleted, moved away or unmounted: forget it; a pass follows
                // (the root gone makes that pass fail as a run would).
                if let rel = folders.removeValue(forKey: e.wd) {
                    if watches[rel] == e.wd { watches[rel] = nil }
                    blindDue = min(blindDue ?? .infinity, quietUntil(now))
                }
                continue
            }
            guard let rel = folders[e.wd], !e.name.isEmpty else { continue }
            guard let name = FileNameBytes.string(e.name) else {
                // A name `FileNameBytes` cannot carry: the scan reports it (it asks for a rename); a pass says so.
                blindDue = min(blindDue ?? .infinity, quietUntil(now))
                continue
            }
            let childRel = rel.isEmpty ? name : rel + "/" + name
            let childAbs = input.root + "/" + childRel
            if e.has(IN_ISDIR) {
                if e.has(IN_CREATE) || e.has(IN_MOVED_TO) {
                    var st = stat()
                    if entersFolder(name: name, rel: childRel, isLink: lstat(childAbs, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK) {
                        walk(from: childRel, armFiles: true)
                    }
                } else if e.has(IN_MOVED_FROM) || e.has(IN_DELETE), watches[childRel] != nil {
                    forget(below: childRel)
                    blindDue = min(blindDue ?? .infinity, quietUntil(now))
                }
                continue
            }
            if e.has(IN_CREATE) && input.followLinks {
                // A symbolic link to a folder is created as a file; with follow_links it is a folder.
                var st = stat()
                if stat(childAbs, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR {
                    if entersFolder(name: name, rel: childRel, isLink: true) { walk(from: childRel, armFiles: true) }
                    continue
                }
            }
            guard takesFile(name: name, rel: childRel) else { continue }
            arm(childAbs, now: now)
        }
        if overflow {
            logger.warning("--watch: the inotify queue overflowed (fs.inotify.max_queued_events); scanning everything")
            fullWalk()
        }
        return overflow
    }

    /// Stops watching a folder moved out of the tree (or deleted) and every folder below it.
    func forget(below rel: String) {
        for (r, wd) in watches where r == rel || r.hasPrefix(rel + "/") {
            inotify.remove(wd)
            watches[r] = nil
            folders[wd] = nil
        }
    }

    /// A file's modification time in seconds since 1970.
    static func modified(_ st: stat) -> Double { Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9 }

    /// When something that happened at `t` has been quiet for `settle`: on the next whole second.
    func quietUntil(_ t: Double) -> Double { (t + input.settle).rounded(.up) }

    /// A recording changed (or appeared, or went): due once its last change and its modification
    /// time are `settle` behind, never earlier than an earlier arming said.
    func arm(_ path: String, now: Double) {
        var st = stat()
        let mtime = stat(path, &st) == 0 ? Self.modified(st) : now
        let due = quietUntil(max(now, mtime))
        pending[path] = max(pending[path] ?? 0, due)
    }

    /// Takes the recordings and blind passes that are due; true when a pass should run. A due
    /// recording modified since (written without a close: still open) waits again.
    func checkDue(now: Double) -> Bool {
        var due = false
        if let b = blindDue, b <= now { blindDue = nil; due = true }
        for (path, when) in pending where when <= now {
            var st = stat()
            if stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG {
                let ready = quietUntil(Self.modified(st))
                if ready > now { pending[path] = ready; continue }
            }
            pending[path] = nil
            due = true
        }
        return due
    }
}
