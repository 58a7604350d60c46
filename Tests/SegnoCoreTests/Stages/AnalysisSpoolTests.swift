import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP
import SegnoKit
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
