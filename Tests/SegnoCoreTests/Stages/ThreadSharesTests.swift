import Foundation
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import Synchronization
import Testing

/// Which of a split pass's own threads give way (`ThreadShares`, decision 0085 amended
/// 2026-11-29): the rule on CPU figures, then real passes where one thread is made to burn CPU on
/// each block (by its own CPU clock, so the machine's load does not change the figures).
@Suite struct ThreadSharesTests {
    @Test func aThreadWellUnderTheBusiestGivesWayAndTheWorkersNever() {
        typealias S = ThreadShares
        // The 2-hour plain chain's shares as perf measured them: decoder's 45 %, worker's 27 %, taps' 28 %.
        #expect(S.givingWay(worker: 2.4, others: [.decoder: 3.5, .taps: 2.3]) == [.taps])
        // Within `below` of the busiest: nobody gives way.
        #expect(S.givingWay(worker: 1.0, others: [.decoder: 0.9, .taps: 0.85]) == [])
        // The worker's thread the busiest: both of the pipeline's threads give way.
        #expect(S.givingWay(worker: 3.0, others: [.decoder: 1.0, .taps: 1.0]) == [.decoder, .taps])
        // The taps the busiest (several encoders): the decoder's gives way, the worker's cannot.
        #expect(S.givingWay(worker: 0.5, others: [.decoder: 1.0, .taps: 4.0]) == [.decoder])
        // Without the taps' thread (no taps yet when the stretch began).
        #expect(S.givingWay(worker: 1.0, others: [.decoder: 3.0]) == [])
        #expect(S.givingWay(worker: 3.0, others: [.decoder: 1.0]) == [.decoder])
        #expect(S.givingWay(worker: 0, others: [:]) == [])
        // At the limit (exactly `below` of the busiest) a thread keeps its priority; just under, it gives way.
        #expect(S.givingWay(worker: 1.0, others: [.decoder: 2.0, .taps: 2.0 * S.below]) == [])
        #expect(S.givingWay(worker: 1.0, others: [.decoder: 2.0, .taps: 2.0 * S.below - 0.001]) == [.taps])
    }

    /// The calling thread's CPU time in seconds.
    static func cpu() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// Burns `seconds` of the calling thread's CPU.
    static func burn(_ seconds: Double) {
        let end = cpu() + seconds
        while cpu() < end {}
    }

    /// A decoder of `frames` frames of silence (its blocks are not even written: it costs nothing
    /// but the test's burns) that burns `cost` seconds of CPU before each block.
    final class Heavy: AudioDecoder {
        let info: SourceInfo
        let cost: Double
        var left: Int
        init(frames: Int, cost: Double) {
            info = SourceInfo(container: "memory", codec: "f32", sampleRate: 48000, channels: 1, frames: frames, sampleKind: .float)
            left = frames
            self.cost = cost
        }
        func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
            ThreadSharesTests.burn(cost)
            let n = min(maxFrames, left)
            if block.capacity < n { block.reset(channels: 1, capacity: n) }
            block.frames = n
            left -= n
            return n
        }
        func close() {}
    }

    /// A transform that leaves the block as it is (its thread's work is the test's burns alone).
    final class Through: Transform {
        func start(_ input: AudioFormat) throws -> AudioFormat { input }
        func process(_ block: inout AudioBlock) throws {}
    }

    /// A tap that burns CPU on each block and notes its thread's nice value at the end.
    final class Counted: Tap {
        let cost: Double
        var blocks = 0
        var nice: Int32 = 0
        init(cost: Double) { self.cost = cost }
        func start(_ format: AudioFormat) throws {}
        func observe(_ block: AudioBlock) throws {
            blocks += 1
            ThreadSharesTests.burn(cost)
            nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        }
        func finish() throws -> [ProducedFile] { [] }
        func abandon() {}
    }

    /// One split pass of two transforms that do nothing and a tap, enough blocks for the clocks to be compared; returns
    /// the pipeline (its `shares`), the tap, and the nice value the pass started at.
    /// `blocks` by default: past the stretch by more than the two queues, so that the decoder's
    /// thread still runs when the taps' thread, two queues behind it, ends the stretch.
    func pass(decoderCost: Double, tapCost: Double,
              blocks: Int = ThreadShares.fromBlock + ThreadShares.overBlocks + 3 * ChainPipeline.queueBlocks) throws -> (ChainPipeline, Counted, Int32) {
        let decoder = Heavy(frames: blocks * StageChain.standardBlockFrames, cost: decoderCost)
        let tap = Counted(cost: tapCost)
        let pipeline = ChainPipeline()
        defer { pipeline.shutdown() }
        let elements: [ChainElement] = [.transform(Through()), .transform(Through()), .tap(tap)]
        let chain = StageChain(elements: pipeline.elements(elements))
        let started = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let results = try chain.runEach(decoder: pipeline.decoder(decoder, blockFrames: chain.blockFrames), isolatingTaps: true,
                                        measuring: nil, isCancelled: { false }, progress: { _ in })
        pipeline.shutdown()
        #expect(results.count == 1 && tap.blocks >= blocks)
        return (pipeline, tap, started)
    }

    @Test func theTapsThreadGivesWayToADearDecoder() throws {
        let (pipeline, tap, started) = try pass(decoderCost: 0.0008, tapCost: 0)
        let measured = try #require(pipeline.shares.measured)
        #expect(measured[.decoder] ?? 0 > 10 * (measured[.taps] ?? 1), "\(measured)")
        let reached = pipeline.shares.reached.withLock { $0 }
        #expect(reached[.decoder] == nil, "the busiest thread keeps its priority: \(reached)")
        #expect(reached[.taps] == min(19, started + ThreadShares.niceness), "\(reached), started at \(started)")
        #expect(tap.nice == reached[.taps], "the taps' thread itself runs at that priority")
    }

    @Test func aRecordingTooShortToEndTheStretchChangesNoPriority() throws {
        // The stream ends one block before the stretch does: the clocks are never compared.
        let (pipeline, tap, started) = try pass(decoderCost: 0.0008, tapCost: 0, blocks: ThreadShares.fromBlock + ThreadShares.overBlocks - 1)
        #expect(pipeline.shares.measured == nil)
        #expect(pipeline.shares.reached.withLock { $0 }.isEmpty && tap.nice == started)
    }

    @Test func theDecodersThreadGivesWayToDearTaps() throws {
        let (pipeline, tap, started) = try pass(decoderCost: 0, tapCost: 0.0008)
        let reached = pipeline.shares.reached.withLock { $0 }
        #expect(reached[.taps] == nil && tap.nice == started, "\(reached)")
        #expect(reached[.decoder] == min(19, started + ThreadShares.niceness), "\(reached), started at \(started)")
    }

    @Test func threadsOfEqualWorkKeepTheirPriority() throws {
        // The decoder's and the taps' threads burn the same per block: neither is under `below` of
        // the other, and the worker's thread (light here) never gives way.
        let (pipeline, tap, started) = try pass(decoderCost: 0.0005, tapCost: 0.0005)
        #expect(pipeline.shares.reached.withLock { $0 }.isEmpty, "\(pipeline.shares.measured ?? [:])")
        #expect(tap.nice == started)
    }
}
