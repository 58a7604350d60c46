import Foundation
import Synchronization

/// Hands a run's worker threads the recordings this process has claimed, claiming the next batch
/// from a shared store (PostgreSQL) when its stock runs out: one round trip per batch, not per
/// recording. The batch grows with the process's throughput (about two seconds of work, between
/// the thread count and 32), so a fast worker asks rarely and a slow one does not hoard leases
/// others could use. Each process starts at its own random place in the list, so workers that
/// start together do not ask for the same recordings, and asks that come back with nothing (a
/// stretch other workers already did) grow, so crossing it costs a few statements.
final package class ClaimQueue: Sendable {
    /// Largest batch: with 4 workers of one process, at most this many leases wait unused.
    static package let maxBatch = 32
    /// Seconds of this process's work a batch aims at.
    static package let batchSeconds = 2.0

    package struct Stock {
        package var candidates: [RecordingPlan]
        /// Next candidate not yet asked for.
        package var next = 0
        /// Claimed, not yet handed to a thread.
        package var ready: [RecordingPlan] = []
        package var readyStart = 0
        package var handedOut = 0
        package var firstClaim: Date?
        package var held: [RecordingPlan] = []
        package var skipped: [RecordingResult] = []
        /// Doubles while asks come back with nothing granted (a stretch other workers did), up
        /// to 256 candidates per ask; one granted recording resets it.
        package var widen = 1
    }

    package let stock: Mutex<Stock>
    package let store: any StateBackend
    package let workers: Int
    /// What the batch size measures throughput by (the system's clock; a test's in the tests).
    package let clock: WallClock

    /// `plans` in the order to work through; `workers` threads take from the queue.
    package init(_ plans: [RecordingPlan], store: any StateBackend, workers: Int, clock: WallClock = .system) {
        var list = plans
        if store.claimsRecordings, list.count > 1 {
            let start = Int.random(in: 0..<list.count)
            list = Array(list[start...] + list[..<start])
        }
        stock = Mutex(Stock(candidates: list))
        self.store = store
        self.workers = max(1, workers)
        self.clock = clock
    }

    /// The next recording this process holds, claiming a batch when none is left; nil when every
    /// candidate was asked for. Called by a worker thread before each recording.
    package func take() -> RecordingPlan? {
        stock.withLock { s in
            while true {
                if s.readyStart < s.ready.count {
                    defer { s.readyStart += 1; s.handedOut += 1 }
                    return s.ready[s.readyStart]
                }
                guard s.next < s.candidates.count else { return nil }
                guard store.claimsRecordings else {
                    defer { s.next += 1; s.handedOut += 1 }
                    return s.candidates[s.next]
                }
                claimBatch(&s)
            }
        }
    }

    /// Batch size from the throughput so far: about `batchSeconds` of this process's work.
    package func batchSize(_ s: Stock) -> Int {
        guard let first = s.firstClaim else { return workers }
        let elapsed = clock.now().timeIntervalSince(first)
        guard elapsed > 0.5 else { return max(workers, min(Self.maxBatch, 2 * workers)) }
        let rate = Double(max(0, s.handedOut - workers)) / elapsed
        return min(Self.maxBatch, max(workers, Int((rate * Self.batchSeconds).rounded(.up))))
    }

    /// Asks the store for the next batch of candidates (one statement); what another worker holds
    /// is kept for a later round, what another worker finished is reported as skipped.
    private func claimBatch(_ s: inout Stock) {
        let n = min(256, batchSize(s) * s.widen)
        let batch = Array(s.candidates[s.next..<min(s.candidates.count, s.next + n)])
        s.next += batch.count
        if s.firstClaim == nil { s.firstClaim = clock.now() }
        s.ready = []
        s.readyStart = 0
        let answers: [String: ClaimResult]
        do { answers = try store.claim(batch.map(\.file.relativePath)) } catch {
            // The store's own retries are spent (an outage longer than they wait): the rest fails
            // the same way now, as an environment failure the next run retries, rather than
            // after one more wait per batch.
            let rest = batch + s.candidates[s.next...]
            s.next = s.candidates.count
            for plan in rest {
                s.skipped.append(RecordingResult(path: plan.file.relativePath, status: .failed, duration: nil, seconds: 0, attempts: 0,
                                                 outputs: [], error: "\(AudioError.quoted(plan.file.relativePath)): cannot claim it: \(error)",
                                                 failureClass: .environment, reasons: []))
            }
            return
        }
        s.widen = batch.contains { answers[$0.file.relativePath] == .granted } ? 1 : min(256, s.widen * 2)
        for plan in batch {
            switch answers[plan.file.relativePath] ?? .heldElsewhere {
            case .granted: s.ready.append(plan)
            case .heldElsewhere: s.held.append(plan)
            case .doneElsewhere:
                s.skipped.append(RecordingResult(path: plan.file.relativePath, status: .elsewhere, duration: nil, seconds: 0, attempts: 0,
                                                 outputs: [], error: nil, reasons: []))
            }
        }
    }

    /// Claimed recordings no thread took (the run stopped): their claims are given back.
    package func releaseUnstarted() {
        let left = stock.withLock { s -> [RecordingPlan] in
            defer { s.ready = []; s.readyStart = 0 }
            return Array(s.ready[s.readyStart...])
        }
        for plan in left { store.release(plan.file.relativePath) }
    }

    /// What another worker holds (to ask for again), and the recordings skipped or failed at the claim.
    package var leftovers: (held: [RecordingPlan], skipped: [RecordingResult]) { stock.withLock { ($0.held, $0.skipped) } }

    /// Candidates never asked for (the run stopped first).
    package var notAsked: Int { stock.withLock { $0.candidates.count - $0.next } }
}
