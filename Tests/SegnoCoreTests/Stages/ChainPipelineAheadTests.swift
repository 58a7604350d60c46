import Foundation
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import Synchronization
import Testing

/// A split pass whose chain begins with transforms (decision 0085, amended): the first half of
/// them (as far as no tap or analysing transform comes between) run on the decoder's thread, the
/// others on the worker's, the taps on their own; every tap
/// still sees the samples and blocks of the one-thread pass, tails and measuring passes included,
/// and a failure of that transform fails the recording as on one thread.
@Suite struct ChainPipelineAheadTests {
    /// A one-pole lowpass (state across blocks) that notes the threads it processed on; fails at
    /// its `failAt`th block when set.
    final class Smooth: Transform {
        var y: [Float] = []
        var blocks = 0
        var failAt: Int?
        var threads = Set<String>()
        var tailThread: String?
        func start(_ input: AudioFormat) throws -> AudioFormat { y = Array(repeating: 0, count: input.channels); return input }
        func process(_ block: inout AudioBlock) throws {
            blocks += 1
            threads.insert(ChainPipelineAheadTests.thread())
            if let failAt, blocks >= failAt { throw AudioError.decodeFailed(path: "a.wav", detail: "filter failure injected") }
            let ch = block.channels
            for f in 0..<block.frames {
                for c in 0..<ch {
                    y[c] += 0.1 * (block.samples[f * ch + c] - y[c])
                    block.samples[f * ch + c] = y[c]
                }
            }
        }
        func finish(_ block: inout AudioBlock) throws {
            tailThread = ChainPipelineAheadTests.thread()
            // A tail of two frames carrying the state, as a filter's ringing would.
            block.reset(channels: y.count, capacity: 2)
            for f in 0..<2 { for c in 0..<y.count { block.samples[f * y.count + c] = y[c] * 0.5 } }
            block.frames = 2
        }
    }

    /// The frame-count-changing and the analysing transforms of `ChainPipelineTests`.
    typealias Decimate = ChainPipelineTests.Decimate
    typealias PeakNormalize = ChainPipelineTests.PeakNormalize

    typealias Recorder = ChainPipelineTests.Recorder
    static func thread() -> String { ChainPipelineTests.thread() }

    /// `elements` of the chain (a tap after each transform unless `tapsAfter` says otherwise), split
    /// or not, through `StageChain.runEach` as `ChainRecipe` runs it.
    func pass(split: Bool, measuring: Bool = false, frames: Int = 100_003, channels: Int = 2, isolating: Bool = true,
              failAt: [Int: Int] = [:], _ make: () -> [any Transform]) throws
        -> (taps: [Recorder], transforms: [any Transform], results: [Result<[ProducedFile], any Error>]) {
        var elements: [ChainElement] = []
        var taps: [Recorder] = []
        let transforms = make()
        for t in transforms {
            elements.append(.transform(t))
            let r = Recorder()
            r.failAt = failAt[taps.count]
            taps.append(r)
            elements.append(.tap(r))
        }
        let decoder = MemoryDecoder(ChainPipelineTests.signal(frames: frames, channels: channels), channels: channels, rate: 48000)
        return (taps, transforms, try ChainPipelineTests.runChain(elements, decoder: decoder, split: split, measuring: measuring, isolating: isolating))
    }

    func expectSame(_ one: [Recorder], _ split: [Recorder]) {
        #expect(one.count == split.count)
        for (a, b) in zip(one, split) {
            #expect(a.samples.count > 0)
            #expect(a.samples.map(\.bitPattern) == b.samples.map(\.bitPattern))
            #expect(a.blocks == b.blocks, "the same blocks, tails included")
            #expect(b.finished && !b.abandoned)
        }
    }

    @Test func theFirstTransformRunsOnTheDecodersThreadAndEveryTapSeesTheOneThreadSamples() throws {
        let one = try pass(split: false) { [Smooth(), Decimate(), Smooth()] }
        let split = try pass(split: true) { [Smooth(), Decimate(), Smooth()] }
        expectSame(one.taps, split.taps)
        let here = Self.thread()
        let first = split.transforms[0] as! Smooth, last = split.transforms[2] as! Smooth
        #expect(first.threads.count == 1 && !first.threads.contains(here), "the first transform ran on another thread: \(first.threads)")
        #expect(first.tailThread == here, "its tail is drained on the worker's thread")
        #expect(last.threads == [here], "the transforms after it stay on the worker's thread")
        #expect(first.threads.isDisjoint(with: split.taps[0].threads), "not on the taps' thread")
        #expect((one.transforms[0] as! Smooth).threads == [here])
    }

    /// Three transforms then a tap, split (with at most `aheadAtMost` of them on the decoder's
    /// thread) or not: the tap and the transforms.
    func leadingRun(split: Bool, aheadAtMost: Int = .max) throws -> (tap: Recorder, transforms: [Smooth]) {
        let transforms = [Smooth(), Smooth(), Smooth()]
        let tap = Recorder()
        let elements: [ChainElement] = transforms.map { .transform($0) } + [.tap(tap)]
        let decoder = MemoryDecoder(ChainPipelineTests.signal(frames: 100_003, channels: 2), channels: 2, rate: 48000)
        let pipeline = split ? ChainPipeline() : nil
        defer { pipeline?.shutdown() }
        let chain = StageChain(elements: pipeline?.elements(elements, aheadAtMost: aheadAtMost) ?? elements)
        _ = try chain.runEach(decoder: pipeline?.decoder(decoder, blockFrames: chain.blockFrames) ?? decoder, isolatingTaps: true,
                              measuring: nil, isCancelled: { false }, progress: { _ in })
        return (tap, transforms)
    }

    @Test func theFirstHalfOfALeadingRunOfTransformsRunsOnTheDecodersThread() throws {
        let one = try leadingRun(split: false)
        let split = try leadingRun(split: true)
        expectSame([one.tap], [split.tap])
        let here = Self.thread()
        let t = split.transforms
        #expect(t[0].threads.count == 1 && !t[0].threads.contains(here), "\(t[0].threads)")
        // 2 of 3 ride with the decoder; the first one's tail reaches the second on the worker's thread.
        #expect(t[1].threads == t[0].threads.union([here]), "\(t[1].threads)")
        #expect(t[0].tailThread == here && t[1].tailThread == here, "their tails are drained on the worker's thread")
        #expect(t[2].threads == [here], "the last stays on the worker's thread")
        // A checkpoint's restarting transform second in the lead (decision 0100): only the first rides.
        let limited = try leadingRun(split: true, aheadAtMost: 1)
        expectSame([one.tap], [limited.tap])
        #expect(!limited.transforms[0].threads.contains(here), "\(limited.transforms[0].threads)")
        #expect(limited.transforms[1].threads == [here] && limited.transforms[2].threads == [here])
    }

    @Test func aFirstTransformWithATailThatChangesTheFrameCountGivesTheSameBlocks() throws {
        for channels in [1, 2] {
            let one = try pass(split: false, channels: channels) { [Decimate(), Smooth()] }
            let split = try pass(split: true, channels: channels) { [Decimate(), Smooth()] }
            expectSame(one.taps, split.taps)
        }
    }

    @Test func theStreamAnAnalysingTransformMeasuresIsTheSame() throws {
        // The first transform ahead of the measuring pass, and the analysing transform itself first (stays on the worker).
        let chains: [() -> [any Transform]] = [{ [Smooth(), Decimate(), PeakNormalize(), Smooth()] }, { [PeakNormalize(), Smooth()] }]
        for make in chains {
            let one = try pass(split: false, measuring: true, make)
            let split = try pass(split: true, measuring: true, make)
            expectSame(one.taps, split.taps)
            #expect(one.taps.last?.samples.map { abs($0) }.max() ?? 0 > 0.3)
        }
        let split = try pass(split: true, measuring: true) { [PeakNormalize(), Smooth()] }
        #expect((split.transforms[1] as! Smooth).threads == [Self.thread()], "an analysing first transform keeps the others on the worker")
    }

    @Test func aLoneTransformStaysOnTheWorkersThread() throws {
        let split = try pass(split: true) { [Smooth()] }
        #expect((split.transforms[0] as! Smooth).threads == [Self.thread()])
        let one = try pass(split: false) { [Smooth()] }
        expectSame(one.taps, split.taps)
    }

    @Test func aFailureOfTheFirstTransformOnTheDecodersThreadFailsThePassAsOnOneThread() throws {
        func run(_ split: Bool) -> String {
            do {
                _ = try pass(split: split) {
                    let s = Smooth()
                    s.failAt = 7
                    return [s, Smooth()]
                }
                Issue.record("the pass should have failed")
                return ""
            } catch {
                return "\(error)"
            }
        }
        let split = run(true), one = run(false)
        #expect(split.contains("filter failure injected"), "\(split)")
        #expect(split == one)
    }

    @Test func theTapsSeeTheBlocksBeforeTheFailureAndAreAbandoned() throws {
        let decoder = MemoryDecoder(ChainPipelineTests.signal(frames: 100_003, channels: 1), channels: 1, rate: 48000)
        let first = Smooth()
        first.failAt = 7
        let rec = Recorder(), after = Recorder()
        let pipeline = ChainPipeline()
        let chain = StageChain(elements: pipeline.elements([.transform(first), .tap(rec), .transform(Smooth()), .tap(after)]))
        #expect(throws: AudioError.self) {
            try chain.runEach(decoder: pipeline.decoder(decoder, blockFrames: chain.blockFrames), isolatingTaps: true, measuring: nil,
                              isCancelled: { false }, progress: { _ in })
        }
        pipeline.shutdown()
        #expect(rec.abandoned && after.abandoned && !rec.finished && !after.finished)
        // At most the six blocks made before the failure (the lane drops what it had not observed yet).
        #expect(rec.blocks <= 6 && after.blocks <= 6, "\(rec.blocks), \(after.blocks)")
        #expect(first.blocks == 7, "the failing block was the last it was given: \(first.blocks)")
    }

    @Test func whenEveryTapFailsThePassEndsWithTheirFailuresAndTheDecodersThreadStops() throws {
        let blocks = 4 * ChainPipeline.queueBlocks
        let split = try pass(split: true, frames: blocks * 4096, channels: 1, failAt: [0: 3, 1: 4]) { [Smooth(), Smooth()] }
        #expect(split.taps.allSatisfy { $0.abandoned && !$0.finished })
        for r in split.results {
            if case .failure(let e) = r { #expect("\(e)".contains("disk full (injected)")) } else { Issue.record("every tap failed") }
        }
        let first = split.transforms[0] as! Smooth
        let processed = first.blocks
        Thread.sleep(forTimeInterval: 0.2)
        #expect(first.blocks == processed && processed <= 4 + 2 * ChainPipeline.queueBlocks + 2, "the read-ahead stopped early: \(processed) blocks")
    }
}
