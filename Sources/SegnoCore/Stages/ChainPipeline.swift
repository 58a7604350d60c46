import Foundation
import SegnoDSP
import Synchronization

/// One recording's pass on three threads (decision 0085): the decoder reads ahead on its own
/// thread (`PrefetchingDecoder`), together with the chain's first transforms when `elements`
/// moves them there; the other transforms run on the worker's thread (`StageChain` as ever), and
/// the taps observe on a third (`TapLane`). Between them, bounded queues of
/// `queueBlocks` blocks whose buffers are reused, so memory stays flat with the recording's
/// length and the steady state allocates nothing. Every stage sees the same blocks in the same
/// order as in the one-thread pass, so the outputs are byte-identical.
///
/// Made by `ChainRecipe` when the runner split the recording (`SplitRule`); `shutdown` is called
/// once the pass is over (also on failure or interruption) and joins every thread it started.
package final class ChainPipeline {
    /// Blocks each queue holds (the decoder's read-ahead, the taps' backlog): 64 × 4096 frames,
    /// 1 MiB per queue for mono, 2 MiB for stereo. A thread that waits on a queue (empty for its
    /// reader, full for its writer) sleeps until half of it is ready (`handOff`), so a block costs
    /// no wake-up of its own: with 8 blocks and a wake-up per block the split made 2 context
    /// switches per block and its threads idled between them.
    package static let queueBlocks = 64
    /// Blocks a waiting thread waits for (to read, or free to write): half a queue.
    static let handOff = queueBlocks / 2

    /// Which of the pipeline's threads give way to the busiest (`ThreadShares`).
    let shares = ThreadShares()
    private let lane: TapLane
    private var prefetchers: [PrefetchingDecoder] = []
    /// The transforms `elements` gave the decoder's thread (the first half of the chain's, at most).
    private var ahead: [any Transform] = []

    package init() {
        let lane = TapLane(capacity: Self.queueBlocks, shares: shares)
        self.lane = lane
        shares.queued = { [weak lane] in lane?.given ?? 0 }
    }

    /// The decoder read ahead on a thread of its own, in blocks of `blockFrames`
    /// (`StageChain.blockFrames`, which every read of the chain asks for), each block already
    /// through the transforms `elements` moved to that thread. Called after `elements`.
    package func decoder(_ decoder: any AudioDecoder, blockFrames: Int) -> any AudioDecoder {
        let p = PrefetchingDecoder(decoder, blockFrames: blockFrames, queueBlocks: Self.queueBlocks, ahead: ahead,
                                   shares: prefetchers.isEmpty ? shares : nil)
        prefetchers.append(p)
        return p
    }

    /// The elements with every tap moved onto the taps' thread (`LaneTap`); transforms unchanged.
    /// Every `OverlappingStage` is told it may put another core to work.
    /// The first half of the chain's transforms (rounded up: 2 of 3) will run on the decoder's
    /// thread (`decoder`), as far as the chain begins with transforms that do not analyse, and at
    /// most `aheadAtMost` of them (a restarting transform in a checkpoint's lead, decision 0100,
    /// runs in the `CheckpointingDecoder`, after those ahead); the worker's thread keeps the rest.
    /// Decoding costs about what a transform or two cost (a 48 kHz FLAC: 36 % of a split 2-hour
    /// pass through two filters and libsoxr, each filter 7 %), so with the decoder alone its thread
    /// would wait on the worker's. Called once, while the chain is being made.
    package func elements(_ elements: [ChainElement], aheadAtMost: Int = .max) -> [ChainElement] {
        let transforms = elements.reduce(0) { if case .transform = $1 { return $0 + 1 }; return $0 }
        var leading: [any Transform] = []
        for case .transform(let t) in elements.prefix(while: { if case .transform = $0 { true } else { false } }) {
            if t is any AnalysingTransform { break }
            leading.append(t)
        }
        if transforms > 1 { ahead = Array(leading.prefix(min((transforms + 1) / 2, aheadAtMost))) }
        for case .transform(let t) in elements {
            if let m = t as? any MeteringTransform { m.measure(on: MeterLane(m, lane: lane)) }
            (t as? any OverlappingStage)?.overlap()
        }
        return elements.map { e in
            guard case .tap(let t) = e else { return e }
            (t as? any OverlappingStage)?.overlap()
            return .tap(LaneTap(t, lane: lane))
        }
    }

    /// Stops and joins the threads (the decoder's read-ahead first). Safe to call twice; after it
    /// the wrapped decoder and taps are touched by the calling thread only.
    package func shutdown() {
        for p in prefetchers { p.stop() }
        lane.shutdown()
    }
}

/// A decoder read ahead on its own thread: blocks of a fixed size, each run through the transforms
/// `ahead` (in order, as `StageChain.push` would), go into a ring of `queueBlocks` slots and
/// `read` swaps the next one out (the caller's buffer goes back to the ring, so no block is
/// allocated after the first round). `read` returns the frames decoded, the block holds what the
/// transforms made of them; `StageChain` pushes it on from the element after `ahead`. A decoder or
/// transform error reaches `read` after the blocks made before it, as it would without the thread.
/// The thread starts on the first `read` and is stopped by `stop` or `close`; once it has ended
/// (the last `read` returned 0 or threw, or `stop` returned) the transforms are the caller's again
/// (their tails: `StageChain` drains them on the worker's thread).
final class PrefetchingDecoder: ExactSeeking, TransformingDecoder, @unchecked Sendable {
    private let inner: any AudioDecoder
    /// The chain's first transforms, run on this decoder's thread (their `start` was called before the first `read`).
    let ahead: [any Transform]
    let info: SourceInfo
    private let blockFrames: Int
    private let condition = NSCondition()
    // Guarded by `condition`:
    private var slots: [AudioBlock]
    private var sizes: [Int]
    private var head = 0
    private var count = 0
    private var ended = false          // the producer met the end or an error
    private var failure: (any Error)?
    private var stopping = false
    private var started = false
    private var exited = false
    private var readerWaits = false    // `read` sleeps until `handOff` blocks are queued (or the end)
    private var producerWaits = false  // the thread sleeps until `handOff` slots are free (or `stop`)
    private let handOff: Int
    /// Told of every block read and made, to weigh this thread against the others (`ThreadShares`).
    private let shares: ThreadShares?

    /// The transforms run on this decoder's thread: its own and those its inner decoder runs.
    var aheadCount: Int { ahead.count + ((inner as? any TransformingDecoder)?.aheadCount ?? 0) }

    init(_ inner: any AudioDecoder, blockFrames: Int, queueBlocks: Int, ahead: [any Transform] = [], shares: ThreadShares? = nil) {
        self.inner = inner
        self.shares = shares
        self.ahead = ahead
        self.info = inner.info
        self.blockFrames = blockFrames
        slots = (0..<queueBlocks).map { _ in AudioBlock(channels: max(1, inner.info.channels), capacity: blockFrames) }
        sizes = Array(repeating: 0, count: queueBlocks)
        handOff = max(1, min(queueBlocks, ChainPipeline.handOff))
    }

    /// Swaps the next decoded block into `block`; 0 at the end. `maxFrames` is the chain's block
    /// size, the same for every call (the thread reads blocks of `blockFrames`).
    func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        shares?.read()
        condition.lock()
        defer { condition.unlock() }
        if !started {
            started = true
            Thread.detachNewThread { [self] in produce() }
        }
        if count == 0 && !ended {
            readerWaits = true
            while count < handOff && !ended { condition.wait() }
            readerWaits = false
        }
        if count == 0 {
            if let failure { throw failure }
            return 0
        }
        swap(&slots[head], &block)
        let n = sizes[head]
        head = (head + 1) % slots.count
        count -= 1
        if producerWaits && count <= slots.count - handOff { condition.broadcast() }
        return n
    }

    /// The read-ahead thread: decodes until the end, an error, or `stop`.
    private func produce() {
        var block = AudioBlock(channels: max(1, info.channels), capacity: blockFrames)
        var scratch = AudioBlock(channels: 1)
        var settled = shares == nil
        while true {
            if !settled { settled = shares!.step(.decoder) }
            let n: Int
            let want = firstRead ?? blockFrames
            firstRead = nil
            do {
                n = try inner.read(into: &block, maxFrames: want)
            } catch {
                finishProducing(error)
                return
            }
            if n == 0 { finishProducing(nil); return }
            let first = frame
            frame += n
            produced += 1
            do {
                if let grid, checkpointEvery > 0, keepingStates.load(ordering: .relaxed) {
                    // Decision 0100: the states at the restart frame of the next checkpoint.
                    let next = (produced + checkpointEvery - 1) / checkpointEvery * checkpointEvery
                    let p = grid.start(before: next * blockFrames)
                    if (first..<frame).contains(p) {
                        let states = try processSaving(ahead, &block, at: p - first, scratch: &scratch)
                        savedAhead.withLock { $0[next] = states }
                    } else {
                        for t in ahead { try t.process(&block) }
                    }
                } else {
                    for t in ahead { try t.process(&block) }
                }
            } catch {
                finishProducing(error)
                return
            }
            if grid == nil && checkpointEvery > 0 && produced % checkpointEvery == 0 && keepingStates.load(ordering: .relaxed) {
                let states = savedStates(ahead)
                savedAhead.withLock { $0[produced] = states }
            }
            shares?.madeBlock()
            condition.lock()
            if count == slots.count && !stopping {
                producerWaits = true
                while count > slots.count - handOff && !stopping { condition.wait() }
                producerWaits = false
            }
            if stopping {
                exited = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let i = (head + count) % slots.count
            swap(&slots[i], &block)
            sizes[i] = n
            count += 1
            if readerWaits && count >= handOff { condition.broadcast() }
            condition.unlock()
        }
    }

    private func finishProducing(_ error: (any Error)?) {
        condition.lock()
        ended = true
        failure = error
        exited = true
        condition.broadcast()
        condition.unlock()
    }

    /// Stops the read-ahead and waits for its thread to end (a read in progress completes first).
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while started && !exited { condition.wait() }
        condition.unlock()
    }

    func close() {
        stop()
        inner.close()
    }

    /// As exact as the decoder it reads ahead (a checkpoint's resumed pass, decision 0095); the
    /// `ahead` transforms' states are the checkpoint's to restore.
    var seeksExactly: Bool { (inner as? any ExactSeeking)?.seeksExactly == true }

    // Checkpoints (decision 0095): every `checkpointEvery` blocks the thread saves the states of
    // its `ahead` transforms, by the number of blocks made so far, for the `CheckpointingDecoder`
    // reading it to put in its record once it has that block. 0: never.
    private var checkpointEvery = 0
    /// Blocks made (the thread's own once started; from a resumed checkpoint's count).
    private var produced = 0
    /// Source frames read (the thread's own once started; from a seek).
    private var frame = 0
    /// After a seek off the block grid, the frames of the first read: up to the grid.
    private var firstRead: Int?
    /// With a restarting transform after the read-ahead (decision 0100): the states are saved at
    /// each checkpoint's restart frame instead of after its block.
    private var grid: RestartGrid?
    private let savedAhead = Mutex<[Int: [[UInt8]]?]>([:])
    /// Cleared by `stopKeepingStates`: the thread then saves no more states.
    private let keepingStates = Atomic<Bool>(true)

    /// Ends the saving of states (checkpoints stopped for this pass: nobody will ask for them) and
    /// drops those saved. Called on the reader's thread.
    func stopKeepingStates() {
        keepingStates.store(false, ordering: .relaxed)
        savedAhead.withLock { $0.removeAll() }
    }

    /// Saves `ahead`'s states for every `every`-th block, counting from `blocks` (a resumed
    /// checkpoint's, or the blocks before its restart frame): after that block, or with a
    /// restarting transform's `grid` at the checkpoint's restart frame (`RestartGrid.start`).
    /// Called once, before the first `read`.
    func keepAheadStates(every: Int, from blocks: Int, grid: RestartGrid?) {
        checkpointEvery = ahead.isEmpty || every <= 0 ? 0 : every
        produced = blocks
        self.grid = grid
    }

    /// The `ahead` transforms' states after block `blocks`, once (nil when not saved there).
    /// Called on the reader's thread once it has read that block.
    func aheadStates(after blocks: Int) -> [[UInt8]]? {
        savedAhead.withLock { saved in
            for k in saved.keys where k < blocks { saved.removeValue(forKey: k) }
            return saved.removeValue(forKey: blocks) ?? nil
        }
    }

    /// Seeks the decoder before the thread starts. Called once, before the first `read`.
    func seek(toFrame frame: Int) throws {
        condition.lock()
        let running = started
        condition.unlock()
        precondition(!running, "seek after the read-ahead started")
        guard let seekable = inner as? any ExactSeeking else { throw AudioError.decodeFailed(path: "", detail: "the source cannot seek") }
        try seekable.seek(toFrame: frame)
        // The first read ends on the block grid, as the unbroken pass's blocks did.
        self.frame = frame
        firstRead = frame % blockFrames == 0 ? nil : blockFrames - frame % blockFrames
    }

    /// Read after the last block (the thread is stopped first, so it reads a settled decoder).
    var notes: [String] { stop(); return inner.notes }
    var salvage: SalvageReport? { stop(); return inner.salvage }
}

/// The taps' thread of a split recording: `LaneTap.observe` copies each block into a ring of
/// reused slots (the copy is needed: the worker's thread goes on rewriting its block) and the lane
/// thread hands it to the tap, in order. A tap that fails there is not called again; its error
/// reaches the worker's thread at that tap's next `observe` or its `finish`, where `StageChain`
/// treats it as it treats any tap's failure. The thread starts with the first block.
final class TapLane: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`:
    private var slots: [AudioBlock]
    private var owners: [Int]
    private var head = 0
    private var count = 0
    private var busy = false
    private var taps: [any Tap] = []
    private var skipped: [Bool] = []
    private var failures: [Int: any Error] = [:]
    private var stopping = false
    private var started = false
    private var exited = false
    private var laneWaits = false      // the lane sleeps until `handOff` blocks are queued (or a drain, or shutdown)
    private var submitterWaits = false // `submit` sleeps until `handOff` slots are free
    private var draining = 0           // `drain` calls waiting for the lane to catch up
    private let handOff: Int
    private let shares: ThreadShares?

    /// Blocks queued so far (`submit`) and taken by the lane's thread.
    private var queuedCount = 0
    private var taken = 0

    init(capacity: Int, shares: ThreadShares? = nil) {
        self.shares = shares
        slots = Array(repeating: AudioBlock(channels: 1, capacity: 0), count: capacity)
        owners = Array(repeating: 0, count: capacity)
        handOff = max(1, min(capacity, ChainPipeline.handOff))
    }

    /// Registers a tap; returns its number on the lane. Called while the chain is being made.
    func add(_ tap: any Tap) -> Int {
        condition.lock()
        defer { condition.unlock() }
        taps.append(tap)
        skipped.append(false)
        return taps.count - 1
    }

    /// Queues a copy of `block` for tap `id`, waiting while the ring is full. Throws the tap's
    /// failure on the lane, if it failed.
    func submit(_ id: Int, _ block: AudioBlock) throws {
        condition.lock()
        defer { condition.unlock() }
        if let e = failures[id] { throw e }
        if !started {
            started = true
            Thread.detachNewThread { [self] in consume() }
        }
        if count == slots.count && !stopping {
            submitterWaits = true
            while count > slots.count - handOff && !stopping { condition.wait() }
            submitterWaits = false
        }
        if stopping { return }
        let i = (head + count) % slots.count
        let n = block.frames * block.channels
        slots[i].reset(channels: block.channels, capacity: block.frames)
        if n > 0 {
            slots[i].samples.withUnsafeMutableBufferPointer { dst in
                block.samples.withUnsafeBufferPointer { src in
                    dst.baseAddress!.update(from: src.baseAddress!, count: n)
                }
            }
        }
        slots[i].frames = block.frames
        owners[i] = id
        count += 1
        queuedCount += 1
        if laneWaits && count >= handOff { condition.broadcast() }
    }

    /// Waits until every block queued so far has been observed; returns tap `id`'s failure on
    /// the lane, if any. After it, the lane does not touch that tap until its next `submit`.
    func drain(_ id: Int) -> (any Error)? {
        condition.lock()
        defer { condition.unlock() }
        draining += 1
        condition.broadcast()  // the lane goes on with fewer than `handOff` blocks queued
        while count > 0 || busy { condition.wait() }
        draining -= 1
        return failures[id]
    }

    /// Drops tap `id`'s queued blocks and waits until the lane no longer touches it (abandon).
    func discard(_ id: Int) {
        condition.lock()
        skipped[id] = true
        condition.unlock()
        _ = drain(id)
    }

    /// Ends the lane's thread (after the blocks already queued) and waits for it. Safe to call twice.
    func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while started && !exited { condition.wait() }
        // A `MeterLane`'s transform holds this lane: letting go of the taps ends that cycle.
        taps.removeAll()
        condition.unlock()
    }

    /// The lane thread: observes queued blocks in order until `shutdown`.
    private func consume() {
        var block = AudioBlock(channels: 1, capacity: 0)
        var settled = shares == nil
        condition.lock()
        while true {
            if !settled { settled = shares!.step(.taps) }
            if count == 0 && !stopping {
                laneWaits = true
                while !stopping && count < handOff && !(count > 0 && draining > 0) { condition.wait() }
                laneWaits = false
            }
            if count == 0 { break }
            swap(&slots[head], &block)
            let id = owners[head]
            head = (head + 1) % slots.count
            count -= 1
            taken += 1
            shares?.consumed(taken)
            let tap = taps[id]
            let run = !skipped[id] && failures[id] == nil
            busy = run
            wakeSubmitter()
            guard run else { continue }
            condition.unlock()
            var failure: (any Error)?
            do { try tap.observe(block) } catch { failure = error }
            condition.lock()
            if let failure { failures[id] = failure }
            busy = false
            wakeSubmitter()
        }
        exited = true
        condition.broadcast()
        condition.unlock()
    }

    /// The blocks queued so far, for `ThreadShares`. Called on the worker's thread.
    var given: Int {
        condition.lock()
        defer { condition.unlock() }
        return queuedCount
    }

    /// Wakes the worker's thread when what it waits for is there: room in the ring for `submit`,
    /// an idle, empty lane for `drain`. Called by the lane with the lock held.
    private func wakeSubmitter() {
        if (submitterWaits && count <= slots.count - handOff) || (draining > 0 && count == 0 && !busy) {
            condition.broadcast()
        }
    }
}

/// A tap whose `observe` runs on the taps' thread (`TapLane`); everything else runs on the
/// worker's thread once the lane has caught up with it, so the tap is never used by two threads.
final class LaneTap: Tap, TimelineUsing, GatheringTap, FindingTap, FindingsUsingTap {
    let inner: any Tap
    private let lane: TapLane
    private let id: Int

    init(_ inner: any Tap, lane: TapLane) {
        self.inner = inner
        self.lane = lane
        self.id = lane.add(inner)
    }

    func start(_ format: AudioFormat) throws { try inner.start(format) }
    func observe(_ block: AudioBlock) throws { try lane.submit(id, block) }

    func finish() throws -> [ProducedFile] {
        if let e = lane.drain(id) { throw e }
        return try inner.finish()
    }

    func abandon() {
        lane.discard(id)
        inner.abandon()
    }

    func sourceSalvaged(_ report: SalvageReport, sampleRate: Int) {
        _ = lane.drain(id)
        inner.sourceSalvaged(report, sampleRate: sampleRate)
    }

    var notes: [String] { _ = lane.drain(id); return inner.notes }

    func useTimeline(_ maps: @escaping () -> [TimeMap]) { (inner as? any TimelineUsing)?.useTimeline(maps) }

    func gather(_ measures: [(stage: String, values: [String: String])]) {
        _ = lane.drain(id)
        (inner as? any GatheringTap)?.gather(measures)
    }

    var finds: Set<Findings.Kind> { (inner as? any FindingTap)?.finds ?? [] }
    var findings: Findings { (inner as? any FindingTap)?.findings ?? Findings() }
    var uses: Set<Findings.Kind> { (inner as? any FindingsUsingTap)?.uses ?? [] }

    func use(_ findings: Findings) {
        _ = lane.drain(id)
        (inner as? any FindingsUsingTap)?.use(findings)
    }
}

/// The taps' thread lent to a `MeteringTransform` (decision 0097): `submit` queues a copy of a
/// block for the transform's `meter` on the lane, after whatever the lane holds already; `drain`
/// waits until it has measured everything queued and throws the meter's failure, if any.
public final class MeterLane {
    private let lane: TapLane
    private let id: Int

    init(_ transform: any MeteringTransform, lane: TapLane) {
        self.lane = lane
        id = lane.add(MeterTap(transform))
    }

    /// Queues a copy of `block` (the caller may reuse its buffer at once); waits while the lane is
    /// full. Called by `analyse` on the worker's thread.
    public func submit(_ block: AudioBlock) throws { try lane.submit(id, block) }

    /// Waits until every block submitted has been measured; throws the meter's failure. Called by
    /// `endAnalysis` before it reads what the meter found.
    public func drain() throws { if let e = lane.drain(id) { throw e } }
}

/// A `MeteringTransform`'s meter as the lane sees it: a tap that observes by metering.
private final class MeterTap: Tap {
    let transform: any MeteringTransform
    init(_ transform: any MeteringTransform) { self.transform = transform }
    func start(_ format: AudioFormat) throws {}
    func observe(_ block: AudioBlock) throws { try transform.meter(block) }
    func finish() throws -> [ProducedFile] { [] }
    func abandon() {}
}
