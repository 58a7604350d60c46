import Dispatch
import Foundation
import Synchronization

/// The one writer of a run's state: workers hand it updates; it applies them on its own serial
/// queue, so workers never wait for SQLite. Each update is applied as soon as the queue is free
/// (group commit: the updates that arrive while a transaction runs share the next one), so a
/// result handed over is in the state within a transaction's time even if the process dies a
/// moment later (issue 33: a crash no longer takes the last 100 ms of results with it).
public final class StateWriter: Sendable {
    private let store: any StateBackend
    private let pending = Mutex<[StateUpdate]>([])
    private let queue = DispatchQueue(label: "segno.state-writer")
    private let lastError = Mutex<String?>(nil)
    private let scheduled = Mutex(false)

    public init(store: any StateBackend) { self.store = store }

    /// Queues an update. Called by workers when a recording finishes or fails.
    public func submit(_ update: StateUpdate) { submit([update]) }

    /// Queues a recording's updates together (its result, salvage report and archive entry), so
    /// they reach the store in one transaction.
    public func submit(_ updates: [StateUpdate]) {
        guard !updates.isEmpty else { return }
        pending.withLock { $0 += updates }
        if scheduled.withLock({ s in defer { s = true }; return !s }) {
            queue.async {
                self.scheduled.withLock { $0 = false }
                self.flushNow()
            }
        }
    }

    /// Applies everything queued and waits for it. Called at the end of a run (and on signals).
    public func flush() throws {
        queue.sync { self.flushNow() }
        if let e = lastError.withLock({ $0 }) { throw RunError.state("could not record what was done: \(e)") }
    }

    private func flushNow() {
        let batch = pending.withLock { p -> [StateUpdate] in defer { p.removeAll(keepingCapacity: true) }; return p }
        guard !batch.isEmpty else { return }
        do { try store.apply(batch) } catch {
            lastError.withLock { $0 = "\(error)" }
        }
    }
}
