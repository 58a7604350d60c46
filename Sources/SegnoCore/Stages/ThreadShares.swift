import Foundation
import Synchronization

/// Which of a split pass's own threads give way to the busiest (decision 0085, amended
/// 2026-11-29). While all three threads can run, two cores give each two thirds of a core, so the
/// thread the pass waits on (the one with the most work per block) runs at two thirds of its
/// speed while a lighter one takes the rest. Each thread reads its own CPU clock over the same
/// stretch of the stream, blocks `fromBlock + 1` to `fromBlock + overBlocks` (after the queues
/// have filled); the pipeline's own threads (the decoder's read-ahead and the taps') that used
/// less than `below` of the busiest thread's CPU lower their priority by `niceness` for the rest
/// of their life (`nice(3)`, which on Linux sets the calling thread's). The worker's thread is the
/// run's, lent to recording after recording: it never changes (an unprivileged thread cannot take
/// a priority back). Priorities weigh only against segno's own threads: the kernel shares the
/// cores between scheduling groups (segno's session) first.
///
/// Made by `ChainPipeline`. The decoder's thread calls `madeBlock` after each block, the worker's
/// `read` before each block it reads, the taps' thread `consumed` after each queued block it takes;
/// the pipeline's two threads then call `step` once per block until it returns true.
final class ThreadShares: @unchecked Sendable {
    /// Blocks before the stretch compared: one queue's worth (the queues fill first).
    static let fromBlock = ChainPipeline.queueBlocks
    /// Blocks compared: 256 × 4096 frames, 22 s of 48 kHz audio.
    static let overBlocks = 4 * ChainPipeline.queueBlocks
    /// A thread that used less than this share of the busiest thread's CPU gives way.
    static let below = 0.8
    /// How far a thread that gives way lowers its priority (nice levels; CFS weighs a thread at
    /// nice 5 a third of one at nice 0).
    static let niceness: Int32 = 5

    enum Role: Int, CaseIterable, Sendable { case decoder = 0, worker = 1, taps = 2 }

    /// CPU seconds each thread used over the stretch, and who takes part (fixed by the worker at
    /// the stretch's end: the taps' thread only when it had started).
    private let state = Mutex<(used: [Role: Double], takingPart: Set<Role>?)>(([:], nil))
    /// Bit `role.rawValue` set: that thread gives way.
    private let verdict = Atomic<Int>(0)
    /// The blocks the taps' lane had been given when the worker's thread began and ended the
    /// stretch (-1: not yet).
    private let tapsFrom = Atomic<Int>(-1)
    private let tapsTo = Atomic<Int>(-1)
    /// The worker's side (worker's thread only): its reads, and its clock at the stretch's start.
    private var reads = 0
    private var workerStart = 0.0
    /// The taps' side (taps' thread only): its clock at the stretch's start.
    private var tapsStart: Double?
    private var tapsDone = false
    /// The decoder's side (decoder's thread only).
    private var madeBlocks = 0
    private var decoderStart = 0.0
    /// The blocks the taps' lane has been given so far; set by `ChainPipeline`.
    var queued: () -> Int = { 0 }
    /// The nice value each thread that gave way reached (for tests).
    let reached = Mutex<[Role: Int32]>([:])
    /// CPU seconds over the stretch, once every thread taking part reported (for tests).
    var measured: [Role: Double]? {
        state.withLock { s in s.takingPart.map { t in t.isSubset(of: Set(s.used.keys)) ? s.used : nil } ?? nil }
    }

    /// Called by the decoder's thread after each block it made (and ran through its transforms).
    func madeBlock() {
        madeBlocks += 1
        if madeBlocks == Self.fromBlock { decoderStart = Self.cpu() }
        if madeBlocks == Self.fromBlock + Self.overBlocks { report(.decoder, Self.cpu() - decoderStart) }
    }

    /// Called by the worker's thread before each block it reads: it has pushed `reads` blocks.
    func read() {
        guard reads <= Self.fromBlock + Self.overBlocks else { return }
        if reads == Self.fromBlock {
            workerStart = Self.cpu()
            tapsFrom.store(queued(), ordering: .relaxed)
        }
        if reads == Self.fromBlock + Self.overBlocks {
            let given = queued()
            tapsTo.store(given, ordering: .relaxed)
            let fromGiven = tapsFrom.load(ordering: .relaxed)
            state.withLock { $0.takingPart = given > fromGiven && fromGiven > 0 ? [.decoder, .worker, .taps] : [.decoder, .worker] }
            report(.worker, Self.cpu() - workerStart)
        }
        reads += 1
    }

    /// Called by the taps' thread after it took a queued block: `taken` blocks so far.
    func consumed(_ taken: Int) {
        guard !tapsDone else { return }
        if tapsStart == nil {
            let from = tapsFrom.load(ordering: .relaxed)
            if from >= 0 && taken >= from { tapsStart = Self.cpu() }
        } else if let start = tapsStart {
            let to = tapsTo.load(ordering: .relaxed)
            if to >= 0 && taken >= to {
                tapsDone = true
                report(.taps, Self.cpu() - start)
            }
        }
    }

    /// Called by a pipeline thread once per block until it returns true: gives way if it was
    /// found lighter than the busiest. True once it has given way (nothing more to do).
    func step(_ role: Role) -> Bool {
        guard verdict.load(ordering: .relaxed) & (1 << role.rawValue) != 0 else { return false }
        errno = 0
        let now = nice(Self.niceness)
        if errno == 0 { reached.withLock { $0[role] = now } }
        return true
    }

    private func report(_ role: Role, _ seconds: Double) {
        state.withLock { s in
            s.used[role] = seconds
            guard let part = s.takingPart, part.isSubset(of: Set(s.used.keys)) else { return }
            let giving = Self.givingWay(worker: s.used[.worker] ?? 0, others: s.used.filter { $0.key != .worker && part.contains($0.key) })
            verdict.store(giving.reduce(0) { $0 | (1 << $1.rawValue) }, ordering: .relaxed)
        }
    }

    /// The threads that give way, given each thread's CPU seconds over the same blocks.
    static func givingWay(worker: Double, others: [Role: Double]) -> Set<Role> {
        let busiest = max(worker, others.values.max() ?? 0)
        guard busiest > 0 else { return [] }
        return Set(others.filter { $0.key != .worker && $0.value < below * busiest }.keys)
    }

    /// The calling thread's CPU time in seconds.
    private static func cpu() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
