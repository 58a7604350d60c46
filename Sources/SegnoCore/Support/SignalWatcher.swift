import Dispatch
import Foundation
import Synchronization

/// Shared "stop taking work" flag, set by the CLI on SIGINT/SIGTERM (its `SignalWatcher`) or by
/// a deadline, read by workers once per block.
public final class StopFlag: Sendable {
    private let state = Mutex<Int32?>(nil)
    public init() {}
    /// The signal that asked to stop (2 or 15), or 0 for a deadline; nil while running.
    public var signal: Int32? { state.withLock { $0 } }
    /// Records the first reason to stop; later ones are ignored.
    public func stop(_ signal: Int32) { state.withLock { if $0 == nil { $0 = signal } } }
    public var isStopped: Bool { signal != nil }
}

/// segno's version, printed by `--version` and stored with each run.
public enum SegnoVersion {
    public static let string = "0.1.0"
}

/// SIGPIPE without changing its disposition: the library never ignores signals process-wide.
public enum SignalMask {
    /// Runs `body` with SIGPIPE blocked on this thread, and swallows one that it raised: a reader
    /// (a helper, ffmpeg, a server's socket) that goes away between `poll` and `write` must make the
    /// write fail with EPIPE, not kill segno (which keeps SIGPIPE's default action for its own
    /// standard output).
    public static func withoutSIGPIPE<T>(_ body: () throws -> T) rethrows -> T {
        var pipeOnly = sigset_t(), old = sigset_t()
        sigemptyset(&pipeOnly)
        sigaddset(&pipeOnly, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeOnly, &old)
        defer {
            var pending = sigset_t()
            sigpending(&pending)
            if sigismember(&pending, SIGPIPE) == 1 {
                var now = timespec()
                _ = sigtimedwait(&pipeOnly, nil, &now)
            }
            pthread_sigmask(SIG_SETMASK, &old, nil)
        }
        return try body()
    }
}
