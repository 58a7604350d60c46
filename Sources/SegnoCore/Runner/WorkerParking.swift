import Synchronization

/// Lets a worker thread of a `WorkerPool` wait for other recordings (a batch, decision 0088)
/// without holding its place: while it is parked, the pool starts another thread, so the cores
/// stay busy and the recordings it waits for can arrive; a thread beyond the pool's size leaves
/// after its recording once a parked one comes back. One per `WorkerPool.run`; a stage reaches it
/// through `RecordingContext.parking` (nil outside a run's pool: `convert`, one-off use).
public final class WorkerParking: Sendable {
    private struct State {
        /// Threads of the pool working (not parked, not gone).
        var running = 0
        var parked = 0
        /// The pool's list ran out: a new thread would find nothing.
        var exhausted = false
        var spawn: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())
    /// The pool's size: the number of threads that work at once.
    public let workers: Int

    public init(workers: Int) { self.workers = max(1, workers) }

    /// Called by the pool before it starts a thread (so a thread that is starting counts as running).
    package func entering() { state.withLock { $0.running += 1 } }

    /// Called by the pool as a thread ends.
    package func left() { state.withLock { $0.running -= 1 } }

    /// How the pool starts one more thread (it calls `entering` itself). Set once by the pool.
    package func attach(spawn: @escaping @Sendable () -> Void) { state.withLock { $0.spawn = spawn } }

    /// Called by the pool when its list ran out.
    package func markExhausted() { state.withLock { $0.exhausted = true } }

    /// True when the calling thread should leave rather than take another recording: more threads
    /// run than the pool's size (a parked one came back); it then no longer counts as running.
    /// Asked by the pool before each item.
    package func leavesAsSurplus() -> Bool {
        state.withLock { s in
            guard s.running > workers else { return false }
            s.running -= 1
            return true
        }
    }

    /// Called by a worker thread just before it waits: it no longer counts as working, and the
    /// pool starts a thread in its place while recordings are left and fewer than `workers` work.
    public func park() {
        let spawn = state.withLock { s -> (@Sendable () -> Void)? in
            s.running -= 1
            s.parked += 1
            guard !s.exhausted, s.running < workers, let spawn = s.spawn else { return nil }
            s.running += 1
            return spawn
        }
        spawn?()
    }

    /// Called by a parked thread when it works again (its wait is over).
    public func unpark() {
        state.withLock { $0.running += 1; $0.parked -= 1 }
    }

    /// True when no thread of the pool works: every one is parked or gone, so nothing more can
    /// join a batch and whoever waits for one must act. Asked by a parked thread as it waits.
    public var isStalled: Bool { state.withLock { $0.running <= 0 } }

    /// Threads parked now (tests).
    public var parkedCount: Int { state.withLock { $0.parked } }
}
