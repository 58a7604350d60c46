import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import SegnoTestSupport
import Testing

/// Counts how often its transforms are made and how many frames they process (issue 34 item 4:
/// what stands before an analysing transform runs once per recording).
private final class Counter: @unchecked Sendable {
    var made = 0
    var frames = 0
}

private struct CountingConfig: TransformConfig, @unchecked Sendable {
    let counter: Counter
    var name: String { "count" }
    var version: Int { 1 }
    var options: [(String, String)] { [] }
    func makeTransform() throws -> any Transform { counter.made += 1; return CountingTransform(counter: counter) }
}

private final class CountingTransform: Transform {
    let counter: Counter
    init(counter: Counter) { self.counter = counter }
    func start(_ input: AudioFormat) throws -> AudioFormat { input }
    func process(_ block: inout AudioBlock) throws { counter.frames += block.frames }
}

/// Issue 34 item 4: the stream as it reaches an analysing transform (`normalize`) is made once
/// and spooled; its measuring passes and the real pass read the spool. The outputs must be the
/// bytes of a reference that runs every stage once, one stage at a time, over the whole
/// recording held in memory (`materialised`), block for block as the streaming chain cuts them.
@Suite struct AnalysisSpoolTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    /// 3 s of stereo tone bursts at 48 kHz: −16 LUFS needs the limiter (trials), −30 does not.
    static let bursts = NormalizeStageTests.toneBursts(rate: 48000, seconds: 3)

    func context(_ root: String) -> RecordingContext {
        RecordingContext(sourcePath: "/in/talk.wav", relativePath: "talk.wav", modified: Date(timeIntervalSince1970: 1_700_000_000),
                         outputRoot: root)
    }

    /// The chain of `stages` (spec YAML lines), with each tap writing under `root`; `collect` is a
    /// `CollectTap` (the Float32 samples at its place, returned too: a float WAV's bytes hold the
    /// time it was written, in libsndfile's PEAK chunk).
    func items(_ stages: [String], root: String) throws -> (items: [ChainRecipe.Item], collected: [CollectTap]) {
        var items: [ChainRecipe.Item] = []
        var collected: [CollectTap] = []
        for stage in stages {
            if stage == "collect" {
                let tap = CollectTap()
                collected.append(tap)
                items.append(.tap(CollectConfig(tap: tap), paths: [root + "/collect"]))
                continue
            }
            let yaml = "version: 1\ninput:\n  root: in\noutput:\n  root: out\nstages:\n  - \(stage)\n  - metadata: { path: m.json }\n"
            switch try SpecLoader.parse(yaml, file: "spec.yaml", baseDirectory: dir.path, registry: .forTests).stages[0].config {
            case let t as any TransformConfig: items.append(.transform(t))
            case let t as any TapConfig: items.append(.tap(t, paths: [root + "/" + t.pathTemplate.text]))
            default: continue
            }
        }
        return (items, collected)
    }

    /// The reference: each element once, in order, over every block of the recording in memory.
    /// An analysing transform measures the blocks at its place (again for each limiter trial),
    /// then processes them; a tap observes them. Block boundaries are those of the streaming
    /// chain (the decoder's 4096-frame reads, reshaped by each transform), so any stage gets the
    /// calls it gets in a streaming pass.
    func materialised(_ items: [ChainRecipe.Item], _ x: [Float], channels: Int, rate: Int, root: String) throws -> [[ProducedFile]] {
        let decoder = MemoryDecoder(x, channels: channels, rate: rate)
        var blocks: [AudioBlock] = []
        while true {
            var b = AudioBlock(channels: channels, capacity: 4096)
            if try decoder.read(into: &b, maxFrames: 4096) == 0 { break }
            blocks.append(b)
        }
        var format = decoder.info.format
        var produced: [[ProducedFile]] = []
        for item in items {
            switch item {
            case .transform(let config):
                let t = try config.makeTransform()
                if let a = t as? AnalysingTransform {
                    repeat {
                        try a.startAnalysis(format)
                        for b in blocks where b.frames > 0 { try a.analyse(b) }
                        try a.endAnalysis()
                    } while a.wantsAnotherPass
                }
                format = try t.start(format)
                blocks = try blocks.map { var b = $0; try t.process(&b); return b }
                var tail = AudioBlock(channels: format.channels, capacity: 0)
                try t.finish(&tail)
                if tail.frames > 0 { blocks.append(tail) }
            case .tap(let config, let paths):
                let tap = try config.makeTap(paths: paths, context: context(root))
                try tap.start(format)
                for b in blocks where b.frames > 0 { try tap.observe(b) }
                produced.append(try tap.finish())
            }
        }
        return produced
    }

    /// Runs `stages` through `ChainRecipe` and through the reference; every output file must hold
    /// the same bytes. Returns how often the recipe opened the source.
    @discardableResult
    func expectSameBytes(_ stages: [String], _ x: [Float] = bursts, channels: Int = 2, rate: Int = 48000,
                         sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        let name = stages.joined(separator: " → ")
        let tag = String(UInt64(bitPattern: Int64(name.hashValue)), radix: 36)
        let newRoot = dir["new-" + tag], refRoot = dir["ref-" + tag]
        var opens = 0
        let new = try items(stages, root: newRoot), ref = try items(stages, root: refRoot)
        let made = try ChainRecipe(items: new.items)
            .run(open: { opens += 1; return MemoryDecoder(x, channels: channels, rate: rate) }, context: context(newRoot),
                 isCancelled: { false }, progress: { _ in })
        let reference = try materialised(ref.items, x, channels: channels, rate: rate, root: refRoot)
        #expect(made.count == reference.count, "\(name)", sourceLocation: sourceLocation)
        for (k, (a, b)) in zip(new.collected, ref.collected).enumerated() {
            #expect(!a.samples.isEmpty && a.samples.map(\.bitPattern) == b.samples.map(\.bitPattern) && a.format == b.format,
                    "\(name): collect #\(k) differs (\(a.samples.count) against \(b.samples.count) samples)", sourceLocation: sourceLocation)
        }
        for (a, b) in zip(made.flatMap { $0 }, reference.flatMap { $0 }) where !a.path.hasSuffix("/collect") {
            let bytesA = try Data(contentsOf: URL(fileURLWithPath: a.path)), bytesB = try Data(contentsOf: URL(fileURLWithPath: b.path))
            #expect(!bytesA.isEmpty && bytesA == bytesB,
                    "\(name): \((a.path as NSString).lastPathComponent) differs (\(bytesA.count) against \(bytesB.count) bytes)",
                    sourceLocation: sourceLocation)
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: newRoot).filter { $0.hasPrefix(OutputFile.tempPrefix) }
        #expect(leftovers.isEmpty, "\(name): \(leftovers)", sourceLocation: sourceLocation)
        return opens
    }

    @Test func peakTargetWithTapsBeforeAndAfter() throws {
        try expectSameBytes(["encode: { path: before.wav, bits: 24 }", "collect", "normalize: { peak: -1 }",
                             "encode: { path: after.flac, bits: 24 }", "waveform: { path: after.dat }", "collect"])
    }

    @Test func loudnessWithoutLimiterTrials() throws {
        try expectSameBytes(["highpass: { frequency: 80 }", "normalize: { loudness: -30 }", "encode: { path: a.wav, bits: 24 }", "collect"])
        try expectSameBytes(["normalize: { loudness: -12, limit: false }", "encode: { path: a.wav, bits: 24 }", "collect"])
    }

    @Test func loudnessWithLimiterTrialsAndTapsOnBothSides() throws {
        try expectSameBytes(["highpass: { frequency: 80 }", "encode: { path: raw.flac, bits: 24 }", "waveform: { path: raw.dat }",
                             "normalize: { loudness: -16 }", "lowpass: { frequency: 9000 }",
                             "encode: { path: out.wav, bits: 24 }", "collect", "encode: { path: out.flac, bits: 16 }"])
    }

    @Test func resampleAndPitchUpstream() throws {
        try expectSameBytes(["mix: mono", "resample: { rate: 16000 }", "pitch: { semitones: 2 }", "encode: { path: pre.wav, bits: 24 }", "collect",
                             "normalize: { loudness: -16 }", "encode: { path: out.flac, bits: 16 }", "waveform: { path: out.dat }"])
        try expectSameBytes(["resample: { rate: 44100 }", "normalize: { peak: -3 }", "resample: { rate: 22050 }", "encode: { path: out.wav, bits: 24 }", "collect"])
    }

    @Test func twoNormalizeStages() throws {
        try expectSameBytes(["normalize: { peak: -6 }", "encode: { path: mid.wav, bits: 24 }", "collect", "normalize: { loudness: -16 }",
                             "encode: { path: out.wav, bits: 24 }", "collect"])
        try expectSameBytes(["normalize: { loudness: -20 }", "lowpass: { frequency: 4000 }", "encode: { path: mid.wav, bits: 24 }", "collect",
                             "normalize: { loudness: -14 }", "encode: { path: out.wav, bits: 24 }", "collect"])
        try expectSameBytes(["resample: { rate: 32000 }", "normalize: { loudness: -16 }", "normalize: { peak: -2 }",
                             "waveform: { path: out.dat }", "encode: { path: out.flac, bits: 24 }", "collect"])
    }
}

/// Issue 34 item 4, beyond the bytes: what runs how often, what progress says, and a spool that
/// cannot be written.
@Suite struct EachStageOnceTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    func context(_ root: String) -> RecordingContext {
        RecordingContext(sourcePath: "/in/talk.wav", relativePath: "talk.wav", modified: Date(), outputRoot: root)
    }

    /// The source is opened once and the stages before each `normalize` process each frame once,
    /// limiter trials included (−16 LUFS on tone bursts needs them).
    @Test func upstreamStagesRunOnceThroughTrialsAndTwoNormalizes() throws {
        let x = AnalysisSpoolTests.bursts
        let first = Counter(), between = Counter(), after = Counter()
        let tap = CollectTap()
        var opens = 0
        var passes: [Int] = []
        var recipe = ChainRecipe(items: [
            .transform(CountingConfig(counter: first)),
            .transform(NormalizeConfig(target: .loudness(lufs: -16, truePeak: -1))),
            .transform(CountingConfig(counter: between)),
            .transform(NormalizeConfig(target: .peak(dbfs: -2))),
            .transform(CountingConfig(counter: after)),
            .tap(CollectConfig(tap: tap), paths: [dir["x"]]),
        ])
        recipe.onPass = { pass, count in passes.append(pass); #expect(pass < count) }
        _ = try recipe.run(open: { opens += 1; return MemoryDecoder(x, channels: 2, rate: 48000) }, context: context(dir.path),
                           isCancelled: { false }, progress: { _ in })
        #expect(opens == 1)
        #expect(first.made == 1 && between.made == 1 && after.made == 1)
        #expect(first.frames == x.count / 2 && between.frames == x.count / 2 && after.frames == x.count / 2)
        #expect(tap.frames == x.count / 2)
        // The decoding pass, its trials, the pass over the first spool, the last pass.
        #expect(passes.count >= 4 && passes == Array(0..<passes.count), "\(passes)")
    }

    /// Every pass reports source frames, rising, and ends at the source's length, also when the
    /// spool holds 16 kHz audio made from 48 kHz: the runner takes the duration from this count.
    @Test func progressCountsSourceFramesInEveryPass() throws {
        let x = AnalysisSpoolTests.bursts
        var perPass: [[Int]] = []
        var announced: [(Int, Int)] = []
        var recipe = ChainRecipe(items: [
            .transform(ResampleConfig(rate: 16000)),
            .transform(NormalizeConfig(target: .loudness(lufs: -16, truePeak: -1))),
            .tap(CollectConfig(tap: CollectTap()), paths: [dir["x"]]),
        ])
        recipe.onPass = { pass, count in announced.append((pass, count)); perPass.append([]) }
        _ = try recipe.run(open: { MemoryDecoder(x, channels: 2, rate: 48000) }, context: context(dir.path),
                           isCancelled: { false }, progress: { perPass[perPass.count - 1].append($0) })
        #expect(announced.count >= 3, "a measuring pass, at least one trial, the last pass")
        #expect(announced.last!.1 == announced.count && announced.map(\.0) == Array(0..<announced.count))
        for counts in perPass {
            #expect(counts.last == x.count / 2 && zip(counts, counts.dropFirst()).allSatisfy { $0 < $1 })
            #expect(counts == perPass[0], "a replay reports what the decoding pass reported")
        }
    }

    /// A spool that cannot be made fails the recording with its name; the tap before `normalize`,
    /// which had seen the whole decoding pass, leaves nothing behind.
    @Test func aSpoolThatCannotBeWrittenFailsTheRecordingByName() throws {
        let root = dir["out"]
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dir["blocker"], contents: Data())
        let encode = try EncodeConfig(path: PathTemplate("raw.wav"), format: nil, bits: .float, quality: nil,
                                      searchPath: AudioTools.forTests.searchPath)
        var recipe = ChainRecipe(items: [.tap(encode, paths: [root + "/raw.wav"]),
                                         .transform(NormalizeConfig(target: .peak(dbfs: -1))),
                                         .tap(encode, paths: [root + "/out.wav"])])
        recipe.spoolFolder = dir["blocker"] + "/spool"
        do {
            _ = try recipe.runEach(open: { MemoryDecoder(AnalysisSpoolTests.bursts, channels: 2, rate: 48000) }, context: context(root),
                                   isCancelled: { false }, progress: { _ in })
            Issue.record("the run should fail")
        } catch let e as AudioError {
            #expect(e.path == "talk.wav" && "\(e)".contains("spool") && "\(e)".contains("Not a directory"), "\(e)")
            #expect(e.failureClass == .environment)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: root) == [])
    }

    /// The spool has no name: during the run the output root holds nothing but the taps' temporaries.
    @Test func theSpoolIsNeverVisible() throws {
        let root = dir["out"]
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var seen: Set<String> = []
        var recipe = ChainRecipe(items: [.transform(NormalizeConfig(target: .loudness(lufs: -16, truePeak: -1))),
                                         .tap(CollectConfig(tap: CollectTap()), paths: [root + "/x"])])
        recipe.onPass = { _, _ in seen.formUnion((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []) }
        _ = try recipe.run(open: { MemoryDecoder(AnalysisSpoolTests.bursts, channels: 2, rate: 48000) }, context: context(root),
                           isCancelled: { false }, progress: { _ in })
        #expect(seen.isEmpty, "\(seen)")
    }
}
