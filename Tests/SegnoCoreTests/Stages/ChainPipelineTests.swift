import Foundation
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import Synchronization
import Testing

/// The split pass (`ChainPipeline`, decision 0085) against the one-thread pass of the same chain:
/// same samples at every tap, failures on any thread fail the recording the same way, and an
/// interruption stops every thread. Stateful, block-dependent test stages make a reordering or a
/// lost block visible.
@Suite struct ChainPipelineTests {
    /// A one-pole lowpass: its output depends on every sample before (state across blocks).
    final class Smooth: Transform {
        var y: [Float] = []
        func start(_ input: AudioFormat) throws -> AudioFormat { y = Array(repeating: 0, count: input.channels); return input }
        func process(_ block: inout AudioBlock) throws {
            let ch = block.channels
            for f in 0..<block.frames {
                for c in 0..<ch {
                    y[c] += 0.1 * (block.samples[f * ch + c] - y[c])
                    block.samples[f * ch + c] = y[c]
                }
            }
        }
    }

    /// Keeps every third frame (the phase carried across blocks), into its own buffer swapped with
    /// the block's: the frame count and the block's storage change as in resample or pitch.
    final class Decimate: Transform {
        var phase = 0
        var out = AudioBlock(channels: 1, capacity: 0)
        func start(_ input: AudioFormat) throws -> AudioFormat { input }
        func process(_ block: inout AudioBlock) throws {
            let ch = block.channels
            out.reset(channels: ch, capacity: block.frames / 3 + 1)
            var n = 0
            for f in 0..<block.frames {
                if phase == 0 {
                    for c in 0..<ch { out.samples[n * ch + c] = block.samples[f * ch + c] }
                    n += 1
                }
                phase = (phase + 1) % 3
            }
            out.frames = n
            swap(&out, &block)
        }
        func finish(_ block: inout AudioBlock) throws {
            // A tail, as filters have: one frame of the last value.
            block.reset(channels: block.channels, capacity: 1)
            for c in 0..<block.channels { block.samples[c] = 0.25 }
            block.frames = 1
        }
    }

    /// Scales to a peak of 0.5, measured over the whole stream first (an analysing transform).
    final class PeakNormalize: AnalysingTransform {
        var peak: Float = 0
        var gain: Float = 1
        func start(_ input: AudioFormat) throws -> AudioFormat { input }
        func startAnalysis(_ format: AudioFormat) throws { peak = 0 }
        func analyse(_ block: AudioBlock) throws {
            for i in 0..<(block.frames * block.channels) { peak = max(peak, abs(block.samples[i])) }
        }
        func endAnalysis() throws { gain = peak > 0 ? 0.5 / peak : 1 }
        func process(_ block: inout AudioBlock) throws {
            for i in 0..<(block.frames * block.channels) { block.samples[i] *= gain }
        }
    }

    /// `PeakNormalize` with its measuring half on the meter's lane when split (decision 0097):
    /// records the threads `meter` ran on, and fails there at its `failAt`th block when set.
    final class MeteredPeak: MeteringTransform {
        var peak: Float = 0
        var gain: Float = 1
        var lane: MeterLane?
        var failAt: Int?
        var metered = 0
        var threads = Set<String>()
        func start(_ input: AudioFormat) throws -> AudioFormat { input }
        func measure(on lane: MeterLane) { self.lane = lane }
        func startAnalysis(_ format: AudioFormat) throws { peak = 0 }
        func analyse(_ block: AudioBlock) throws {
            if let lane { try lane.submit(block) } else { try meter(block) }
        }
        func meter(_ block: AudioBlock) throws {
            metered += 1
            threads.insert(ChainPipelineTests.thread())
            if let failAt, metered >= failAt { throw AudioError.io(path: "meter", detail: "meter broke (injected)", code: 5) }
            for i in 0..<(block.frames * block.channels) { peak = max(peak, abs(block.samples[i])) }
        }
        func endAnalysis() throws {
            try lane?.drain()
            gain = peak > 0 ? 0.5 / peak : 1
        }
        func process(_ block: inout AudioBlock) throws {
            for i in 0..<(block.frames * block.channels) { block.samples[i] *= gain }
        }
    }

    /// Records every sample it sees, the thread it saw them on, and how it was ended; fails at
    /// its `failAt`th block when set.
    final class Recorder: Tap {
        var samples: [Float] = []
        var blocks = 0
        var failAt: Int?
        var finished = false
        var abandoned = false
        let observed = Mutex(0)
        var threads = Set<String>()
        func start(_ format: AudioFormat) throws {}
        func observe(_ block: AudioBlock) throws {
            blocks += 1
            observed.withLock { $0 += 1 }
            threads.insert(ChainPipelineTests.thread())
            if let failAt, blocks >= failAt { throw AudioError.io(path: "out/rec.flac", detail: "disk full (injected)", code: 28) }
            samples.append(contentsOf: block.samples[0..<(block.frames * block.channels)])
        }
        func finish() throws -> [ProducedFile] { finished = true; return [ProducedFile(stage: "rec", path: "")] }
        func abandon() { abandoned = true }
    }

    /// A name for the calling thread, unique for the test run (a thread's address can be reused
    /// once it has ended, as the decoder's is when it reads a short recording to the end).
    static func thread() -> String {
        let key = "ChainPipelineTests.thread"
        if let name = Thread.current.threadDictionary[key] as? String { return name }
        let name = UUID().uuidString
        Thread.current.threadDictionary[key] = name
        return name
    }

    /// A decoder that never ends; counts its reads (from whichever thread reads it).
    final class Endless: AudioDecoder, @unchecked Sendable {
        let info = SourceInfo(container: "memory", codec: "f32", sampleRate: 8000, channels: 1, frames: 0, sampleKind: .float)
        let reads = Mutex(0)
        func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
            reads.withLock { $0 += 1 }
            block.reset(channels: 1, capacity: maxFrames)
            for i in 0..<maxFrames { block.samples[i] = Float(i % 100) / 100 }
            block.frames = maxFrames
            return maxFrames
        }
        func close() {}
    }

    static func signal(frames: Int, channels: Int) -> [Float] {
        var rng = SplitMix64(seed: 7)
        return (0..<(frames * channels)).map { i in Float(sin(Double(i) * 0.013)) * 0.6 + (Float(rng.next() >> 40) / Float(1 << 24) - 0.5) * 0.2 }
    }

    /// Runs `transforms` with a recorder after each (and one before), split or not; returns the
    /// recorders and the results.
    func pass(split: Bool, frames: Int = 100_003, channels: Int = 2, measuring: Bool = false,
              failAt: [Int: Int] = [:], isolating: Bool = true, decoderFailsAfter: Int? = nil,
              transforms: () -> [any Transform]) throws -> (taps: [Recorder], results: [Result<[ProducedFile], any Error>]) {
        var elements: [ChainElement] = []
        var taps: [Recorder] = []
        func tap() {
            let r = Recorder()
            r.failAt = failAt[taps.count]
            taps.append(r)
            elements.append(.tap(r))
        }
        tap()
        for t in transforms() {
            elements.append(.transform(t))
            tap()
        }
        let decoder = MemoryDecoder(Self.signal(frames: frames, channels: channels), channels: channels, rate: 48000, failAfter: decoderFailsAfter)
        return (taps, try Self.runChain(elements, decoder: decoder, split: split, measuring: measuring, isolating: isolating))
    }

    /// `elements` through `StageChain.runEach` as `ChainRecipe` runs them: split over three threads
    /// or not, with the analysing transforms measured on a spool when `measuring`.
    static func runChain(_ elements: [ChainElement], decoder: MemoryDecoder, split: Bool, measuring: Bool,
                         isolating: Bool) throws -> [Result<[ProducedFile], any Error>] {
        let spool = try TempDir()
        let m = measuring ? StageChain.Measuring(spoolFolder: spool.path, recording: "a.wav", onPass: nil, notes: nil) : nil
        let pipeline = split ? ChainPipeline() : nil
        defer { pipeline?.shutdown() }
        let chain = StageChain(elements: pipeline?.elements(elements) ?? elements)
        let results = try chain.runEach(decoder: pipeline?.decoder(decoder, blockFrames: chain.blockFrames) ?? decoder, isolatingTaps: isolating,
                                        measuring: m, isCancelled: { false }, progress: { _ in })
        pipeline?.shutdown()
        return results
    }

    @Test func theSplitPassGivesEveryTapTheSameSamplesAsOneThread() throws {
        let chain: () -> [any Transform] = { [Smooth(), Decimate(), Smooth()] }
        let one = try pass(split: false, transforms: chain)
        let split = try pass(split: true, transforms: chain)
        #expect(one.taps.count == 4)
        for (a, b) in zip(one.taps, split.taps) {
            #expect(a.samples.count > 0)
            #expect(a.samples.map(\.bitPattern) == b.samples.map(\.bitPattern))
            #expect(a.blocks == b.blocks, "the same blocks, tails included")
            #expect(b.finished && !b.abandoned)
        }
        // The taps really ran off the worker's thread: on one other thread, the same for all.
        let here = Self.thread()
        #expect(split.taps.allSatisfy { $0.threads.count == 1 && !$0.threads.contains(here) })
        #expect(one.taps.allSatisfy { $0.threads == [here] })
    }

    @Test func anAnalysingTransformMeasuresTheSameStreamWhenSplit() throws {
        let chain: () -> [any Transform] = { [Smooth(), Decimate(), PeakNormalize(), Smooth()] }
        let one = try pass(split: false, measuring: true, transforms: chain)
        let split = try pass(split: true, measuring: true, transforms: chain)
        #expect(one.taps.last?.samples.map { abs($0) }.max() ?? 0 > 0.3)
        for (a, b) in zip(one.taps, split.taps) {
            #expect(a.samples.map(\.bitPattern) == b.samples.map(\.bitPattern))
        }
    }

    /// The meter of a `MeteringTransform` runs off the worker's thread when split, on one thread,
    /// and finds what it finds on one thread; the lane lets go of the transform when it ends; a
    /// meter failure on the lane fails the pass with its own message.
    @Test func aMeteringTransformMetersOnTheLaneWithTheSameResult() throws {
        weak var released: MeteredPeak?
        var split: (taps: [Recorder], results: [Result<[ProducedFile], any Error>])!
        var metered: Set<String> = []
        do {
            let m = MeteredPeak()
            released = m
            split = try pass(split: true, measuring: true, transforms: { [Smooth(), m, Smooth()] })
            metered = m.threads
            #expect(m.metered > 10)
        }
        let one = try pass(split: false, measuring: true, transforms: { [Smooth(), MeteredPeak(), Smooth()] })
        #expect(one.taps.last?.samples.map { abs($0) }.max() ?? 0 > 0.3)
        for (a, b) in zip(one.taps, split.taps) {
            #expect(a.samples.map(\.bitPattern) == b.samples.map(\.bitPattern))
        }
        #expect(metered.count == 1 && !metered.contains(Self.thread()))
        #expect(released == nil, "the lane holds the transform no longer once the pass is over")
        let failing = MeteredPeak()
        failing.failAt = 3
        let error = #expect(throws: AudioError.self) { _ = try pass(split: true, measuring: true, transforms: { [failing] }) }
        #expect(error.map { "\($0)".contains("meter broke (injected)") } == true, "\(String(describing: error))")
    }

    @Test func aDecoderFailureOnItsThreadFailsThePassWithItsMessageAndAbandonsEveryTap() throws {
        var message = ""
        do {
            _ = try pass(split: true, decoderFailsAfter: 50_000, transforms: { [Smooth()] })
            Issue.record("the pass should have failed")
        } catch {
            message = "\(error)"
        }
        #expect(message.contains("failure injected after 50000 frames"), "\(message)")
        // The same failure without the split, for the message.
        var single = ""
        do { _ = try pass(split: false, decoderFailsAfter: 50_000, transforms: { [Smooth()] }) } catch { single = "\(error)" }
        #expect(message == single)
    }

    @Test func aTapFailingOnTheTapsThreadFailsAloneAndIsAbandoned() throws {
        // Tap 1 (after the first transform) fails at its 5th block on the lane.
        let split = try pass(split: true, failAt: [1: 5], transforms: { [Smooth(), Smooth()] })
        #expect(split.taps[1].abandoned && !split.taps[1].finished)
        #expect(split.taps[1].blocks == 5, "not called again after it failed")
        if case .failure(let e) = split.results[1] { #expect("\(e)".contains("disk full (injected)")) } else { Issue.record("tap 1 should have failed") }
        let one = try pass(split: false, transforms: { [Smooth(), Smooth()] })
        for i in [0, 2] {
            #expect(split.taps[i].finished && !split.taps[i].abandoned)
            #expect(split.taps[i].samples.map(\.bitPattern) == one.taps[i].samples.map(\.bitPattern))
        }
    }

    @Test func withoutIsolationATapFailureOnItsThreadFailsTheWholePassAndAbandonsAll() throws {
        var message = ""
        var taps: [Recorder] = []
        do {
            let r = try pass(split: true, failAt: [2: 3], isolating: false, transforms: { [Smooth(), Smooth()] })
            taps = r.taps
            Issue.record("the pass should have failed")
        } catch {
            message = "\(error)"
        }
        #expect(message.contains("disk full (injected)"), "\(message)")
        #expect(taps.allSatisfy { !$0.finished })
    }

    @Test func aFailureAtTheLastBlockStillReachesFinish() throws {
        // 4 blocks of 4096 frames: the tap fails on the last one, after which nothing more is observed.
        let split = try pass(split: true, frames: 4 * 4096, failAt: [1: 4], transforms: { [Smooth()] })
        #expect(split.taps[1].abandoned && !split.taps[1].finished)
        if case .failure = split.results[1] {} else { Issue.record("the failure on the last block was lost") }
    }

    @Test func anInterruptionStopsEveryThread() throws {
        let decoder = Endless()
        let rec = Recorder()
        let pipeline = ChainPipeline()
        let elements = pipeline.elements([.transform(Smooth()), .tap(rec)])
        let chain = StageChain(elements: elements)
        let blocks = Mutex(0)
        #expect(throws: Interrupted.self) {
            try chain.runEach(decoder: pipeline.decoder(decoder, blockFrames: chain.blockFrames), isolatingTaps: true, measuring: nil,
                              isCancelled: { blocks.withLock { $0 += 1; return $0 > 40 } }, progress: { _ in })
        }
        pipeline.shutdown()
        #expect(rec.abandoned && !rec.finished)
        let reads = decoder.reads.withLock { $0 }
        let observed = rec.observed.withLock { $0 }
        #expect(reads >= 40 && reads <= 40 + ChainPipeline.queueBlocks + 2, "read ahead at most a queue: \(reads)")
        Thread.sleep(forTimeInterval: 0.3)
        #expect(decoder.reads.withLock { $0 } == reads, "the decoder's thread stopped")
        #expect(rec.observed.withLock { $0 } == observed, "the taps' thread stopped")
    }

    @Test func theRuleSplitsLongRecordingsWhenCoresAreIdle() {
        let rule = SplitRule(mode: .auto, cores: 2)
        #expect(SplitRule.minimumSeconds == 600)
        #expect(rule.decide(seconds: 7200, pending: 1, hasTransform: true)
                == .init(split: true, reason: "2 h 0 min ≥ 10 min, 2 cores for 1 pending recording"))
        #expect(rule.decide(seconds: 7200, pending: 2, hasTransform: true) == .init(split: false, reason: "2 recordings pending for 2 cores"))
        #expect(rule.decide(seconds: 599, pending: 1, hasTransform: true) == .init(split: false, reason: "9 min 59 s < 10 min"))
        #expect(rule.decide(seconds: 7200, pending: 1, hasTransform: false).split == false)
        #expect(rule.decide(seconds: nil, pending: 1, hasTransform: true).split == false)
        #expect(SplitRule(mode: .off, cores: 64).decide(seconds: 7200, pending: 1, hasTransform: true)
                == .init(split: false, reason: "the spec pins split: off"))
    }

    @Test func theSpecPinsSplitOffAndRefusesOtherValues() throws {
        let fixture = SpecFixture(registry: .coreTests, stage: "collect: { path: \"{stem}.flac\" }")
        #expect(try fixture.load(fixture.minimal).split == .auto)
        #expect(try fixture.load("split: off\n" + fixture.minimal).split == .off)
        #expect(try fixture.load("split: auto\n" + fixture.minimal).split == .auto)
        let e = fixture.failure("split: sometimes\n" + fixture.minimal)
        #expect(e?.description.contains("\"sometimes\" is not one of auto, off") == true, "\(String(describing: e))")
    }
}
