import Dispatch
import Foundation
import Synchronization

/// The one writer of a run's state: workers hand it updates; it applies them in batches (one
/// transaction per 64 updates or per 100 ms, whichever comes first) on its own serial queue,
/// so workers never wait for SQLite and the database sees few transactions.
public final class StateWriter: Sendable {
    private let store: any StateBackend
    private let pending = Mutex<[StateUpdate]>([])
    private let queue = DispatchQueue(label: "segno.state-writer")
    private let lastError = Mutex<String?>(nil)
    private let scheduled = Mutex(false)
    /// Updates per transaction before an immediate flush.
    public static let batchSize = 64
    /// Longest an update waits, in seconds.
    public static let maxDelay = 0.1

    public init(store: any StateBackend) { self.store = store }

    /// Queues an update. Called by workers when a recording finishes or fails.
    public func submit(_ update: StateUpdate) {
        let count = pending.withLock { $0.append(update); return $0.count }
        if count >= Self.batchSize {
            queue.async { self.flushNow() }
        } else if scheduled.withLock({ s in defer { s = true }; return !s }) {
            queue.asyncAfter(deadline: .now() + Self.maxDelay) {
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
