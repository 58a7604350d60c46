import Dispatch
import Foundation
import Synchronization

/// Shared "stop taking work" flag, set by SIGINT/SIGTERM or a deadline, read by workers once per block.
public final class StopFlag: Sendable {
    private let state = Mutex<Int32?>(nil)
    public init() {}
    /// The signal that asked to stop (2 or 15), or 0 for a deadline; nil while running.
    public var signal: Int32? { state.withLock { $0 } }
    /// Records the first reason to stop; later ones are ignored.
    public func stop(_ signal: Int32) { state.withLock { if $0 == nil { $0 = signal } } }
    public var isStopped: Bool { signal != nil }
}

/// Turns SIGINT and SIGTERM into a `StopFlag` instead of killing the process, so in-flight
/// work can be abandoned cleanly and state written. A second signal exits at once.
/// Keep the watcher alive for as long as signals should be caught.
public final class SignalWatcher {
    /// The flag the handlers set.
    public let flag: StopFlag
    private var sources: [DispatchSourceSignal] = []

    /// Installs the handlers. Called once by the CLI command that runs work.
    public init() {
        let flag = StopFlag()
        self.flag = flag
        let queue = DispatchQueue(label: "segno.signals")
        for sig in [SIGINT, SIGTERM] {
            Foundation.signal(sig, SIG_IGN)
            let src = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            src.setEventHandler {
                if flag.isStopped { exit(128 + sig) }
                flag.stop(sig)
            }
            src.resume()
            sources.append(src)
        }
    }

    deinit { sources.forEach { $0.cancel() } }
}

/// segno's version, printed by `--version` and stored with each run.
public enum SegnoVersion {
    public static let string = "0.1.0"
}
