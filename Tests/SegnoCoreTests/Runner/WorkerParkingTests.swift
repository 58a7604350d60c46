import Foundation
@testable import SegnoCore
import Synchronization
import Testing

/// The worker pool stands in for parked threads (decision 0088): recordings that wait for each
/// other can gather beyond the pool's size, every item runs once, and the pool is stalled once
/// every thread is parked or gone.
@Suite struct WorkerParkingTests {
    @Test func parkedThreadsAreStoodInForAndEveryItemRunsOnce() {
        let parking = WorkerParking(workers: 2)
        let next = Mutex(0)
        let ran = Mutex<[Int]>([])
        let mostParked = Mutex(0)
        let working = Mutex(0), mostWorking = Mutex(0)
        WorkerPool.run(workers: 2, shouldStop: { false }, next: { next.withLock { n -> Int? in defer { n += 1 }; return n < 8 ? n : nil } },
                       parking: parking) { i in
            ran.withLock { $0.append(i) }
            guard i < 4 else {
                let w = working.withLock { $0 += 1; return $0 }
                mostWorking.withLock { $0 = max($0, w) }
                Thread.sleep(forTimeInterval: 0.05)
                working.withLock { $0 -= 1 }
                return
            }
            // Items 0–3 wait for each other: only possible if the pool starts threads for them.
            parking.park()
            let deadline = Date().addingTimeInterval(10)
            while parking.parkedCount < 4 && !parking.isStalled && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
            mostParked.withLock { $0 = max($0, parking.parkedCount) }
            parking.unpark()
        }
        #expect(ran.withLock { $0.sorted() } == Array(0..<8))
        #expect(mostParked.withLock { $0 } == 4)
        // Items that do not park never ran more than the pool's size at once.
        #expect(mostWorking.withLock { $0 } <= 2)
        #expect(parking.parkedCount == 0 && parking.isStalled)
    }

    @Test func withoutWorkLeftAParkedPoolIsStalled() {
        let parking = WorkerParking(workers: 2)
        let next = Mutex(0)
        let sawStall = Mutex(0)
        WorkerPool.run(workers: 2, shouldStop: { false }, next: { next.withLock { n -> Int? in defer { n += 1 }; return n < 2 ? n : nil } },
                       parking: parking) { _ in
            // Two items, both parked: the stand-ins find nothing to take and leave, so the pool
            // stalls and the waiters learn that nobody else can come.
            parking.park()
            let deadline = Date().addingTimeInterval(10)
            while !parking.isStalled && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
            if parking.isStalled { sawStall.withLock { $0 += 1 } }
            parking.unpark()
        }
        #expect(sawStall.withLock { $0 } >= 1)
    }
}
