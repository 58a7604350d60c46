import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import Testing

/// A transform whose `start` fails, like a lowpass above the input's Nyquist.
private final class FailingStart: Transform {
    func start(_ input: AudioFormat) throws -> AudioFormat { throw StageStartError(stage: "test", "refused \(input)") }
    func process(_ block: inout AudioBlock) throws {}
}

/// A transform that fails on its n-th block.
private final class FailingProcess: Transform {
    var left: Int
    init(after blocks: Int) { left = blocks }
    func start(_ input: AudioFormat) throws -> AudioFormat { input }
    func process(_ block: inout AudioBlock) throws {
        if left == 0 { throw AudioError.decodeFailed(path: "x", detail: "transform failed") }
        left -= 1
    }
}

@Suite struct StageChainTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    func encodeTap(_ name: String, bits: SampleBits = .float) throws -> any Tap {
        try EncodeConfig(path: PathTemplate(name), format: nil, bits: bits, quality: nil, searchPath: AudioTools.forTests.searchPath)
            .makeTap(paths: [dir[name]], context: RecordingContext(sourcePath: "/in/x.wav", relativePath: "x.wav",
                                                                 modified: Date(), outputRoot: dir.path))
    }

    @Test func tapsAtTheSamePlaceSeeTheSameStream() throws {
        let x = Signal.noise(frames: 10_000, channels: 2)
        let a = CollectTap(name: "a"), b = CollectTap(name: "b")
        let produced = try StageChain(elements: [.tap(a), .tap(b)], blockFrames: 1000)
            .run(decoder: MemoryDecoder(x, channels: 2, rate: 44100))
        #expect(a.samples == x && b.samples == x)
        #expect(a.blocks == 10 && b.blocks == 10)
        #expect(a.format == AudioFormat(sampleRate: 44100, channels: 2))
        #expect(produced.flatMap { $0.map(\.stage) } == ["a", "b"])
        #expect(a.finished && b.finished && !a.abandoned && !b.abandoned)
    }

    @Test func tapsSeeTheStreamWhereTheyStand() throws {
        let x = Signal.noise(frames: 9000, channels: 2, amplitude: 0.25)
        let before = CollectTap(name: "before"), afterMix = CollectTap(name: "mix"), end = CollectTap(name: "end")
        let chain = StageChain(elements: [
            .tap(before),
            .transform(try MixConfig(target: .mono).makeTransform()),
            .tap(afterMix),
            .transform(try GainConfig(db: 6.0205999).makeTransform()),
            .transform(try ResampleConfig(rate: 16000).makeTransform()),
            .tap(end),
        ], blockFrames: 4096)
        let produced = try chain.run(decoder: MemoryDecoder(x, channels: 2, rate: 48000))
        #expect(produced.flatMap { $0.map(\.stage) } == ["before", "mix", "end"])
        #expect(before.samples == x)
        #expect(afterMix.format == AudioFormat(sampleRate: 48000, channels: 1))
        #expect(afterMix.frames == 9000)
        #expect(end.format == AudioFormat(sampleRate: 16000, channels: 1))
        #expect(end.frames == 3000, "the resampler's tail must reach taps after it")
    }

    @Test func gainScalesBy10PowDbOver20() throws {
        let x: [Float] = [0.5, -0.25, 0.1, 0]
        let y = try runChain(x, channels: 1, rate: 8000, [GainConfig(db: -6)]).samples
        let g = Float(pow(10, -6.0 / 20))
        #expect(maxAbsDifference(y, x.map { $0 * g }) < 1e-7)
        #expect(GainConfig(db: -3).canonical == "gain@v1 db=-3")
        #expect(GainConfig(db: 1.5).options.first?.1 == "1.5")
    }

    @Test func progressCountsSourceFrames() throws {
        var seen: [Int] = []
        _ = try StageChain(elements: [.tap(CollectTap())], blockFrames: 400)
            .run(decoder: MemoryDecoder(Signal.noise(frames: 1000), channels: 1, rate: 8000), progress: { seen.append($0) })
        #expect(seen == [400, 800, 1000])
    }

    @Test func decoderErrorAbandonsEveryTapAndLeavesNoFiles() throws {
        let x = Signal.noise(frames: 20_000, channels: 2)
        let collect = CollectTap()
        let chain = StageChain(elements: [
            .tap(try encodeTap("raw.wav")),
            .transform(try MixConfig(target: .mono).makeTransform()),
            .tap(collect),
            .tap(try encodeTap("mono.flac", bits: .b16)),
        ], blockFrames: 1024)
        let e = try #require(throws: AudioError.self) {
            try chain.run(decoder: MemoryDecoder(x, channels: 2, rate: 44100, failAfter: 10_000))
        }
        #expect(e.description.contains("failure injected"))
        #expect(collect.abandoned && !collect.finished)
        #expect(collect.frames > 0, "blocks before the failure reached the tap")
        #expect(dir.contents().isEmpty, "left behind: \(dir.contents())")
    }

    @Test func transformErrorAbandonsEveryTap() throws {
        let a = CollectTap(name: "a"), b = CollectTap(name: "b")
        let chain = StageChain(elements: [.tap(a), .transform(FailingProcess(after: 2)), .tap(try encodeTap("out.wav")), .tap(b)],
                               blockFrames: 100)
        #expect(throws: AudioError.self) { try chain.run(decoder: MemoryDecoder(Signal.noise(frames: 1000), channels: 1, rate: 8000)) }
        #expect(a.abandoned && b.abandoned)
        #expect(a.frames == 300 && b.frames == 200)
        #expect(dir.contents().isEmpty)
    }

    @Test func startFailureAbandonsTapsAlreadyStarted() throws {
        let a = CollectTap(name: "a"), b = CollectTap(name: "b")
        let chain = StageChain(elements: [.tap(a), .tap(try encodeTap("out.wav")), .transform(FailingStart()), .tap(b)])
        #expect(throws: StageStartError.self) { try chain.run(decoder: MemoryDecoder(Signal.noise(frames: 100), channels: 1, rate: 8000)) }
        #expect(a.abandoned && b.abandoned && !a.finished)
        #expect(a.blocks == 0)
        #expect(dir.contents().isEmpty)
    }

    @Test func tapStartFailureAbandonsTheOthers() throws {
        let a = CollectTap(name: "a"), bad = CollectTap(name: "bad")
        bad.failOnStart = true
        let chain = StageChain(elements: [.tap(a), .tap(try encodeTap("out.wav")), .tap(bad)])
        #expect(throws: AudioError.self) { try chain.run(decoder: MemoryDecoder(Signal.noise(frames: 100), channels: 1, rate: 8000)) }
        #expect(a.abandoned)
        #expect(dir.contents().isEmpty)
    }

    @Test func cancellationInterruptsAndAbandons() throws {
        let a = CollectTap()
        var polls = 0
        let chain = StageChain(elements: [.tap(a), .tap(try encodeTap("out.wav"))], blockFrames: 100)
        #expect(throws: Interrupted.self) {
            try chain.run(decoder: MemoryDecoder(Signal.noise(frames: 1000), channels: 1, rate: 8000),
                          isCancelled: { polls += 1; return polls > 3 })
        }
        #expect(a.frames == 300)
        #expect(a.abandoned && !a.finished)
        #expect(dir.contents().isEmpty)
    }

    @Test func encodeTapsWriteWhatTheySee() throws {
        let x = Signal.noise(frames: 5000, channels: 2)
        let produced = try StageChain(elements: [
            .tap(try encodeTap("stereo.wav")),
            .transform(try MixConfig(target: .mono).makeTransform()),
            .tap(try encodeTap("mono.caf")),
        ], blockFrames: 512).run(decoder: MemoryDecoder(x, channels: 2, rate: 22050))
        #expect(produced == [[ProducedFile(stage: "encode", path: dir["stereo.wav"])], [ProducedFile(stage: "encode", path: dir["mono.caf"])]])
        #expect(dir.contents() == ["mono.caf", "stereo.wav"])
        #expect(try Fixtures.decode(dir["stereo.wav"]).samples == x)
        let mono = try Fixtures.decode(dir["mono.caf"])
        #expect(mono.info.channels == 1 && mono.info.frames == 5000 && mono.info.sampleRate == 22050)
    }

    @Test func emptySourceStillFinishesTaps() throws {
        let a = CollectTap()
        let produced = try StageChain(elements: [.transform(try ResampleConfig(rate: 16000).makeTransform()), .tap(a)])
            .run(decoder: MemoryDecoder([], channels: 1, rate: 44100))
        #expect(produced.count == 1 && a.finished && a.frames == 0)
    }
}

/// `runEach`: a tap that fails is abandoned alone; the others finish.
@Suite struct StageChainIsolationTests {
    @Test func aFailingTapFailsAloneAndTheOthersFinish() throws {
        let a = CollectTap(name: "a"), bad = CollectTap(name: "bad"), b = CollectTap(name: "b")
        bad.failOnStart = true
        let chain = StageChain(elements: [.tap(a), .tap(bad), .tap(b)])
        let results = try chain.runEach(decoder: MemoryDecoder(Signal.noise(frames: 1000), channels: 1, rate: 8000), isCancelled: { false })
        #expect(results.count == 3)
        #expect((try? results[0].get()) != nil && (try? results[2].get()) != nil)
        #expect(throws: AudioError.self) { try results[1].get() }
        #expect(a.finished && b.finished && !a.abandoned && !b.abandoned)
        #expect(bad.abandoned && !bad.finished)
        #expect(a.blocks > 0 && b.blocks == a.blocks)
    }

    @Test func whenEveryTapFailsTheSourceIsNotReadToTheEnd() throws {
        let bad = CollectTap(name: "bad")
        bad.failOnStart = true
        let decoder = MemoryDecoder(Signal.noise(frames: 100_000), channels: 1, rate: 8000)
        let results = try StageChain(elements: [.tap(bad)], blockFrames: 1000).runEach(decoder: decoder, isCancelled: { false })
        #expect(results.count == 1)
        #expect(throws: AudioError.self) { try results[0].get() }
        var block = AudioBlock(channels: 1, capacity: 1000)
        #expect(try decoder.read(into: &block, maxFrames: 1000) == 1000, "nothing was read")
    }
}
