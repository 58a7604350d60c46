import Foundation
import SegnoCore

/// A helper program (ffmpeg, ffprobe) started with an argv array through `posix_spawn`, never a
/// shell. Its stdin is /dev/null, or a pipe this object writes (`stdinPipe`, stream capture); stdout and stderr are pipes this object reads. The child gets
/// its own process group (a terminal's Ctrl-C reaches segno, which then stops the child itself)
/// and default signal dispositions. `terminate()` (also run by `deinit`) kills it with SIGKILL and
/// reaps it, so no zombie is left whatever path a recording takes. Owned by one thread.
final package class ChildProcess {
    /// The child's process id.
    package let pid: pid_t
    /// The program, for messages.
    package let executable: String
    private var stdoutFD: Int32
    private var stderrFD: Int32
    /// The write end of the child's stdin when started with `stdinPipe`, else -1.
    private var stdinFD: Int32 = -1
    private var stderrTail = [UInt8]()
    /// The poll set and stderr buffer of every read and write, kept so a block costs no allocation.
    private var pollSet = [pollfd](repeating: pollfd(), count: 2)
    private var stderrChunk = [UInt8](repeating: 0, count: 4096)
    /// The exit status once reaped: `.exited(code)` or `.signalled(number)`.
    private(set) package var termination: Termination?

    /// How a child ended.
    package enum Termination: Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)
        package var succeeded: Bool { self == .exited(0) }
        package var description: String {
            switch self {
            case .exited(let c): return "exit status \(c)"
            case .signalled(let s): return "killed by signal \(s)"
            }
        }
    }

    /// Bytes of stderr kept (the last ones), enough for ffmpeg's closing error lines.
    static package let stderrLimit = 4096

    /// Starts `executable` (an absolute path) with `arguments` (argv[1...]). Throws `POSIXError`
    /// when the pipes cannot be made or the program cannot be started. With `stdinPipe` the
    /// child reads its stdin from `writeStdin` until `closeStdin`.
    package init(executable: String, arguments: [String], stdinPipe: Bool = false) throws {
        self.executable = executable
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1], inp: [Int32] = [-1, -1]
        if stdinPipe {
            guard Self.makePipe(&inp) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        }
        // O_CLOEXEC: a child spawned by another worker must not inherit these ends (it would
        // hold our stdout open and we would never see end of file).
        guard Self.makePipe(&out) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        guard Self.makePipe(&err) == 0 else {
            let e = errno
            Glibc.close(out[0]); Glibc.close(out[1])
            if stdinPipe { Glibc.close(inp[0]); Glibc.close(inp[1]) }
            throw POSIXError(.init(rawValue: e) ?? .EIO)
        }
        // A larger pipe means fewer wake-ups per second of audio (either way); best effort.
        _ = fcntl(out[0], Self.setPipeSize, 1 << 20)
        if stdinPipe { _ = fcntl(inp[1], Self.setPipeSize, 1 << 20) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if stdinPipe {
            posix_spawn_file_actions_adddup2(&actions, inp[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, out[1], 1)   // dup2 clears O_CLOEXEC on 1 and 2
        posix_spawn_file_actions_adddup2(&actions, err[1], 2)

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var noSignals = sigset_t(), defaults = sigset_t()
        sigemptyset(&noSignals)
        sigemptyset(&defaults)
        // segno ignores SIGINT/SIGTERM (SignalWatcher) and may ignore SIGPIPE; ignored signals
        // survive exec, so reset them: a child whose reader is gone must die of SIGPIPE.
        for s in [SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigmask(&attr, &noSignals)
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setpgroup(&attr, 0)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        // Each word's own bytes: a file name that is not UTF-8 reaches ffmpeg as it is (`FileNameBytes`).
        let argv = ([executable] + arguments).map { FileNameBytes.withCPath($0) { strdup($0) } }
        defer { argv.forEach { free($0) } }
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv + [nil]
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, &attr, &cArgs, environ)
        Glibc.close(out[1])
        Glibc.close(err[1])
        if stdinPipe { Glibc.close(inp[0]) }
        guard rc == 0 else {
            Glibc.close(out[0]); Glibc.close(err[0])
            if stdinPipe { Glibc.close(inp[1]) }
            throw POSIXError(.init(rawValue: rc) ?? .EIO)
        }
        pid = child
        stdoutFD = out[0]
        stderrFD = err[0]
        stdinFD = inp[1]
    }

    /// Writes every byte to the child's stdin (started with `stdinPipe`), collecting its stderr
    /// meanwhile. Throws `POSIXError` (EPIPE when the child is gone).
    package func writeStdin(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try writeStdin($0) }
    }

    /// Writes every byte of `bytes` to the child's stdin (started with `stdinPipe`), collecting
    /// its stderr meanwhile. Throws `POSIXError` (EPIPE when the child is gone).
    package func writeStdin(_ bytes: UnsafeRawBufferPointer) throws {
        guard stdinFD >= 0 else { throw POSIXError(.EPIPE) }
        var off = 0
        while off < bytes.count {
            let (ready, out, err) = pollPair(stdinFD, Int16(POLLOUT), timeout: -1)
            if ready < 0 { if errno == EINTR { continue }; throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            if err != 0 { drainStderrOnce() }
            if out & Int16(POLLERR | POLLHUP) != 0 { throw POSIXError(.EPIPE) }
            if out != 0 {
                let n = Glibc.write(stdinFD, bytes.baseAddress! + off, bytes.count - off)
                if n < 0 { if errno == EINTR || errno == EAGAIN { continue }; throw POSIXError(.init(rawValue: errno) ?? .EIO) }
                off += n
            }
        }
    }

    /// Closes the child's stdin: it sees end of file.
    package func closeStdin() {
        if stdinFD >= 0 { Glibc.close(stdinFD); stdinFD = -1 }
    }

    deinit { terminate() }

    /// Linux's F_SETPIPE_SZ (F_LINUX_SPECIFIC_BASE + 7), which Glibc's Swift overlay leaves out.
    private static let setPipeSize: Int32 = 1031

    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32
    /// glibc's pipe2, looked up once (Swift's Glibc module hides it behind _GNU_SOURCE).
    private static let pipe2: Pipe2? = dlsym(nil, "pipe2").map { unsafeBitCast($0, to: Pipe2.self) }

    /// A pipe whose ends are close-on-exec from the start (atomically with pipe2, so a child
    /// another thread spawns at that moment cannot inherit them).
    private static func makePipe(_ fds: inout [Int32]) -> Int32 {
        if let pipe2 { return fds.withUnsafeMutableBufferPointer { pipe2($0.baseAddress, O_CLOEXEC) } }
        let rc = fds.withUnsafeMutableBufferPointer { Glibc.pipe($0.baseAddress) }
        if rc == 0 { for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) } }
        return rc
    }

    /// Reads up to `buffer.count` bytes of the child's stdout, collecting stderr meanwhile (so a
    /// chatty child can never block on a full stderr pipe). Blocks until at least one byte or end
    /// of file; returns 0 at end of file. Throws `POSIXError` on a read error.
    package func readStdout(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard stdoutFD >= 0, buffer.count > 0 else { return 0 }
        while true {
            let (ready, out, err) = pollPair(stdoutFD, Int16(POLLIN), timeout: -1)
            if ready < 0 {
                if errno == EINTR { continue }
                throw POSIXError(.init(rawValue: errno) ?? .EIO)
            }
            if err != 0 { drainStderrOnce() }
            if out != 0 {
                let n = Glibc.read(stdoutFD, buffer.baseAddress, buffer.count)
                if n < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    throw POSIXError(.init(rawValue: errno) ?? .EIO)
                }
                return n
            }
        }
    }

    /// Polls `fd` for `events` together with stderr (when still open), in the stored poll set.
    /// Returns poll's result and the two `revents` (stderr's 0 when closed).
    private func pollPair(_ fd: Int32, _ events: Int16, timeout: Int32) -> (Int32, Int16, Int16) {
        pollSet[0] = pollfd(fd: fd, events: events, revents: 0)
        pollSet[1] = pollfd(fd: stderrFD, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pollSet, stderrFD >= 0 ? 2 : 1, timeout)
        return (ready, pollSet[0].revents, stderrFD >= 0 ? pollSet[1].revents : 0)
    }

    /// Waits up to `milliseconds` for the child's stdout to have something to read (or end),
    /// collecting stderr meanwhile. False on time-out. Called before a read that must not hang.
    package func waitForStdout(milliseconds: Int32) -> Bool {
        guard stdoutFD >= 0 else { return true }
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let end = Int64(deadline.tv_sec) * 1000 + Int64(deadline.tv_nsec) / 1_000_000 + Int64(milliseconds)
        while true {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let left = end - (Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000)
            if left <= 0 { return false }
            let (ready, out, err) = pollPair(stdoutFD, Int16(POLLIN), timeout: Int32(left))
            if ready < 0 && errno != EINTR { return true }  // let the read report it
            if err != 0 { drainStderrOnce() }
            if out != 0 { return true }
        }
    }

    /// True when the child has ended or is ending, though it may not be reapable yet: its exit is
    /// ready to reap, its process is gone from `/proc`, its main thread has exited (state `Z` or
    /// `X`), or a SIGKILL is pending for it. A killed child with several threads (a Python helper
    /// with a model loaded) shows `Z` while its other threads still tear down, and `waitid` does
    /// not see it until the last one has: a check by `waitid` alone passed such a helper as alive.
    /// The child is not reaped yet, so its pid is still its own. Called before an idle helper is reused.
    package var isEnding: Bool {
        if termination != nil { return true }
        var info = siginfo_t()
        if waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info._sifields._sigchld.si_pid != 0 { return true }
        let fd = Glibc.open("/proc/\(pid)/status", O_RDONLY | O_CLOEXEC)
        if fd < 0 { return errno == ENOENT }   // gone; any other failure says nothing
        defer { Glibc.close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return false }
        return Self.statusSaysEnding(String(decoding: bytes[..<n], as: UTF8.self))
    }

    /// Reads `/proc/<pid>/status`: a main thread that has exited (`State: Z` or `X`), or SIGKILL
    /// among the signals pending for the process or its main thread (`ShdPnd`, `SigPnd`: hex masks
    /// where signal n is bit n - 1).
    static package func statusSaysEnding(_ status: String) -> Bool {
        for line in status.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let value = parts[1].trimmingCharacters(in: .whitespaces)
            switch parts[0] {
            case "State": if value.hasPrefix("Z") || value.hasPrefix("X") { return true }
            case "ShdPnd", "SigPnd": if let mask = UInt64(value, radix: 16), mask & (1 << (UInt64(SIGKILL) - 1)) != 0 { return true }
            default: continue
            }
        }
        return false
    }

    /// Reads stdout to the end into memory, refusing more than `limit` bytes (ffprobe's JSON).
    package func readAllStdout(limit: Int) throws -> [UInt8] {
        var all = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = try chunk.withUnsafeMutableBytes { try readStdout(into: $0) }
            if n == 0 { return all }
            all.append(contentsOf: chunk[0..<n])
            if all.count > limit { throw POSIXError(.EFBIG) }
        }
    }

    /// After stdout ended: reads stderr to its end, then reaps the child and returns how it ended.
    package func wait() -> Termination {
        if let t = termination { return t }
        while stderrFD >= 0 { drainStderrOnce() }
        closeFDs()
        return reap()
    }

    /// Kills the child (SIGKILL to the child only) if it is still running and reaps it. Safe to
    /// call more than once; called on close, on abandon and from `deinit`.
    package func terminate() {
        if termination != nil { closeFDs(); return }
        kill(pid, SIGKILL)
        closeFDs()
        _ = reap()
    }

    /// The last lines the child wrote to stderr, as one line: ffmpeg's "[aac @ 0x…] " prefixes
    /// dropped, lines joined with "; ", at most `maxCharacters`.
    package func stderrSummary(maxCharacters: Int = 400) -> String {
        let text = String(decoding: stderrTail, as: UTF8.self)
        var lines: [String] = []
        for raw in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            var line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("["), let close = line.range(of: "] ") {
                line = String(line[close.upperBound...])
            }
            if !line.isEmpty && lines.last != line { lines.append(line) }
        }
        var joined = ""
        for line in lines.reversed() {
            let candidate = joined.isEmpty ? line : line + "; " + joined
            if candidate.count > maxCharacters { break }
            joined = candidate
        }
        if joined.isEmpty, let last = lines.last { joined = String(last.prefix(maxCharacters)) }
        return AudioError.quoted(joined)
    }

    /// The stderr bytes kept so far, as text.
    package var stderrText: String { String(decoding: stderrTail, as: UTF8.self) }

    private func drainStderrOnce() {
        let fd = stderrFD
        let n = stderrChunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n < 0 && (errno == EINTR || errno == EAGAIN) { return }
        if n <= 0 {
            Glibc.close(stderrFD)
            stderrFD = -1
            return
        }
        stderrTail.append(contentsOf: stderrChunk[0..<n])
        if stderrTail.count > Self.stderrLimit { stderrTail.removeFirst(stderrTail.count - Self.stderrLimit) }
    }

    private func closeFDs() {
        closeStdin()
        if stdoutFD >= 0 { Glibc.close(stdoutFD); stdoutFD = -1 }
        if stderrFD >= 0 { Glibc.close(stderrFD); stderrFD = -1 }
    }

    private func reap() -> Termination {
        if let t = termination { return t }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR {
                // ECHILD: someone else reaped it (cannot happen unless SIGCHLD is ignored).
                termination = .exited(-1)
                return .exited(-1)
            }
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift cannot import.
        let t: Termination = (status & 0x7F) == 0 ? .exited((status >> 8) & 0xFF) : .signalled(status & 0x7F)
        termination = t
        return t
    }
}
