import Dispatch
import Foundation
import Synchronization

/// The one worker pool of `segno run` and `segno waveform`: `workers` threads take the next
/// item index from a shared counter until every item is taken or `shouldStop` says so. Each
/// item runs whole on one thread, so a recording's chain needs no locks.
public enum WorkerPool {
    /// Runs `body(i)` for i in 0..<count on up to `workers` threads and returns when all are done.
    /// `shouldStop` is asked before each item; items not started then are left (the caller counts them).
    public static func run(count: Int, workers: Int, shouldStop: @escaping @Sendable () -> Bool,
                           body: @escaping @Sendable (Int) -> Void) {
        guard count > 0 else { return }
        let next = Mutex(0)
        let group = DispatchGroup()
        for _ in 0..<max(1, min(workers, count)) {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                while !shouldStop() {
                    let i = next.withLock { n -> Int in defer { n += 1 }; return n }
                    if i >= count { return }
                    body(i)
                }
            }
        }
        group.wait()
    }

    /// Runs `body` on up to `workers` threads for each item `next` hands out, until it returns nil
    /// or `shouldStop` says so (asked before each item). `onThread` runs first on each thread.
    /// With `parking`, a thread whose item waits parked (`WorkerParking.park`) is stood in for by
    /// a new thread, and a thread beyond `workers` leaves before taking another item.
    public static func run<T>(workers: Int, shouldStop: @escaping @Sendable () -> Bool, next: @escaping @Sendable () -> T?,
                              onThread: (@Sendable () -> Void)? = nil, parking: WorkerParking? = nil, body: @escaping @Sendable (T) -> Void) {
        let group = DispatchGroup()
        let loop: @Sendable () -> Void = {
            var counted = true
            defer { if counted { parking?.left() }; group.leave() }
            onThread?()
            while !shouldStop() {
                if parking?.leavesAsSurplus() == true { counted = false; return }
                guard let item = next() else { parking?.markExhausted(); return }
                body(item)
            }
        }
        parking?.attach {
            group.enter()
            Thread.detachNewThread(loop)
        }
        for _ in 0..<max(1, workers) {
            group.enter()
            parking?.entering()
            Thread.detachNewThread(loop)
        }
        group.wait()
    }
}
