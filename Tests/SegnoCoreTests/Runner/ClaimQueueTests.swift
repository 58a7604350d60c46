import Foundation
@testable import SegnoCore
import SegnoCoreTestSupport
import Testing

/// The claim queue over a store many workers share, played by the in-memory state, with time
/// from a clock the test moves: one claim per batch, a batch of about two seconds of this
/// process's work, what another worker holds kept for later, what it finished skipped.
@Suite struct ClaimQueueTests {
    static func plans(_ n: Int) -> [RecordingPlan] {
        let id = FileIdentity(size: 1, mtimeNs: 1, inode: 1)
        return (0..<n).map { RecordingPlan(file: ScannedFile(relativePath: String(format: "r%04d.wav", $0), root: "/in", identity: id),
                                            action: .run(taps: [0], uploads: [], reasons: []), prior: nil) }
    }

    @Test func aStoreOfOneProcessIsNeverAskedAndGivesEveryPlanInOrder() throws {
        let state = InMemoryState()
        let queue = ClaimQueue(Self.plans(5), store: state, workers: 2)
        var taken: [String] = []
        while let p = queue.take() { taken.append(p.file.relativePath) }
        #expect(taken == Self.plans(5).map(\.file.relativePath))
        #expect(state.contents.withLock { $0.claims }.isEmpty)
    }

    @Test func theBatchFollowsTheThroughputOnTheClock() throws {
        let clock = TestClock()
        let state = InMemoryState(clock: clock.clock, sharing: true)
        let queue = ClaimQueue(Self.plans(200), store: state, workers: 2, clock: clock.clock)
        // The first ask is one recording per worker; at 0.2 s, before a rate means anything, two per worker.
        _ = queue.take(); _ = queue.take()
        clock.advance(by: 0.2)
        _ = queue.take()
        var sizes = state.contents.withLock { $0.claims.map(\.count) }
        #expect(sizes == [2, 4])
        // A slow process: ten recordings handed out in 20 s, 0.4 a second past the first two, so
        // 2 s of work is less than one: it asks for one per worker and hoards no lease.
        for _ in 0..<3 { _ = queue.take() }  // the rest of the batch of 4
        for _ in 0..<4 { _ = queue.take() }
        clock.advance(by: 19.8)
        _ = queue.take()
        sizes = state.contents.withLock { $0.claims.map(\.count) }
        #expect(sizes == [2, 4, 4, 2], "\(sizes)")
        // A fast process: 40 recordings in 0.6 s past the first two ask for the largest batch.
        let fast = InMemoryState(clock: clock.clock, sharing: true)
        let quick = ClaimQueue(Self.plans(200), store: fast, workers: 2, clock: clock.clock)
        for _ in 0..<42 { _ = quick.take() }   // a batch of 2, then ten of 4 (all at the first claim's time)
        #expect(fast.contents.withLock { $0.claims.map(\.count) } == [2] + Array(repeating: 4, count: 10))
        clock.advance(by: 0.6)
        _ = quick.take()
        #expect(fast.contents.withLock { $0.claims.last?.count } == ClaimQueue.maxBatch)
    }

    @Test func whatAnotherWorkerHoldsWaitsAndWhatItFinishedIsSkipped() throws {
        let state = InMemoryState(sharing: true)
        state.contents.withLock { $0.elsewhere = ["r0001.wav": .held, "r0002.wav": .done] }
        let plans = Self.plans(4)
        let queue = ClaimQueue(plans, store: state, workers: 4)
        var taken: [String] = []
        while let p = queue.take() { taken.append(p.file.relativePath) }
        #expect(Set(taken) == ["r0000.wav", "r0003.wav"])
        let (held, skipped) = queue.leftovers
        #expect(held.map(\.file.relativePath) == ["r0001.wav"])
        #expect(skipped.map(\.path) == ["r0002.wav"] && skipped.first?.status == .elsewhere)
    }

    @Test func aClaimThatFailsFailsTheRestAsTheEnvironmentsFault() throws {
        let state = InMemoryState(sharing: true)
        state.contents.withLock { $0.claimError = "the database is gone" }
        let queue = ClaimQueue(Self.plans(6), store: state, workers: 2)
        #expect(queue.take() == nil)
        let skipped = queue.leftovers.skipped
        #expect(skipped.count == 6 && skipped.allSatisfy { $0.status == .failed && $0.failureClass == .environment })
        #expect(skipped.first?.error?.contains("cannot claim it: the database is gone") == true, "\(String(describing: skipped.first?.error))")
        #expect(state.contents.withLock { $0.claims.count } == 1, "one ask, not one per batch")
    }
}
