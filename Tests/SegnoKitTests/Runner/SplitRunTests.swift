import Foundation
import Logging
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoKit
import SegnoTestSupport
import Testing

/// A recording split over three threads (decision 0085) through the real runner and the stages
/// segno ships: every output file byte for byte the one-thread run's, `split: off` honoured, and
/// `--explain` saying which recordings are split and why. The split is forced on short test
/// recordings by lowering the rule's length (`RunOptions.splitMinimumSeconds`).
@Suite struct SplitRunTests {
    let source = MemorySource()

    /// One run of `stages` into its own output folder and state; returns the summary and the folder.
    func run(_ stages: [String], split: String = "auto", cores: Int = 8, minimum: Double = 0, explain: Bool = false) throws -> (RunSummary, TempDir) {
        let dir = try TempDir()
        let text = "version: 1\ninput: { root: \(dir.path)/in, settle: 0s }\noutput: { root: \(dir.path)/out }\nsplit: \(split)\nstages:\n"
            + stages.map { "  - \($0)\n" }.joined()
        let job = Job(spec: try SpecLoader.parse(text, file: "test.yaml", baseDirectory: dir.path, registry: .forTests))
        var options = RunOptions()
        options.cores = cores
        options.splitMinimumSeconds = minimum
        options.explain = explain
        let summary = try BatchRunner(job: job, options: options, stop: StopFlag(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
                                      tools: .forTests, source: source, state: try MemoryStateLocation()).run()
        return (summary, dir)
    }

    /// The bytes of every output file (segno's own folder left out), by path relative to the output root.
    func outputs(_ dir: TempDir) throws -> [String: Data] {
        let root = dir.path + "/out"
        var out: [String: Data] = [:]
        for rel in FileManager.default.subpaths(atPath: root) ?? [] {
            var isDir: ObjCBool = false
            guard !rel.hasPrefix(".segno"), FileManager.default.fileExists(atPath: root + "/" + rel, isDirectory: &isDir), !isDir.boolValue else { continue }
            out[rel] = try Data(contentsOf: URL(fileURLWithPath: root + "/" + rel))
        }
        return out
    }

    /// Deterministic stages: filters, pitch, resample, normalize (measuring pass and limiter on a
    /// spool), and the encoders and waveform data at several places of the chain.
    static let chain = [
        // Integer WAV: a float WAV's PEAK chunk holds the second it was written (libsndfile), which
        // differs between any two runs, split or not.
        "encode: { path: \"{stem}.src.wav\", bits: 24 }",
        "highpass: { frequency: 80 }",
        "lowpass: { frequency: 3000 }",
        "pitch: { semitones: 2 }",
        "waveform: { path: \"{stem}.mid.json\" }",
        "resample: { rate: 16000 }",
        "normalize: { loudness: -16 }",
        "encode: { path: \"{stem}.flac\" }",
        "encode: { path: \"{stem}.wav\", bits: 16 }",
        "encode: { path: \"{stem}.mp3\", bitrate: 64 }",
        "waveform: { path: \"{stem}.json\" }",
        "waveform: { path: \"{stem}.dat\", bits: 16 }",
    ]

    @Test func splitOutputsAreByteIdenticalToOneThreadsForEveryDeterministicStage() throws {
        source.put("talk.wav", seconds: 9, channels: 2)
        let (split, a) = try run(Self.chain)
        let (single, b) = try run(Self.chain, split: "off")
        #expect(split.done == 1 && single.done == 1, "\(split.results) \(single.results)")
        #expect(split.results.first?.split == true)
        #expect(single.results.first?.split == false)
        let x = try outputs(a), y = try outputs(b)
        #expect(x.keys.sorted() == ["talk.dat", "talk.flac", "talk.json", "talk.mid.json", "talk.mp3", "talk.src.wav", "talk.wav"])
        #expect(x.keys.sorted() == y.keys.sorted())
        for (name, bytes) in x {
            #expect(bytes.count > 100, "\(name)")
            #expect(bytes == y[name], "\(name) differs between the split and the one-thread run")
        }
    }

    @Test func aDecoderFailureInTheMiddleFailsTheSplitRecordingAndLeavesNoFile() throws {
        source.put("damaged.wav", seconds: 9, failAfter: 40_000)
        let (summary, dir) = try run(Self.chain)
        #expect(summary.failed == 1)
        #expect(summary.results.first?.split == true)
        #expect(summary.results.first?.error?.contains("failure injected after 40000 frames") == true, "\(summary.results)")
        let left = try outputs(dir)
        #expect(left.isEmpty, "nothing half-written: \(left.keys.sorted())")
    }

    @Test func aChainOfTapsAloneOrAShortRecordingIsNotSplit() throws {
        source.put("a.wav", seconds: 2)
        let (taps, _) = try run(["encode: { path: \"{stem}.flac\" }", "waveform: { path: \"{stem}.json\" }"])
        #expect(taps.results.first?.split == false)
        let (short, _) = try run(Self.chain, minimum: 600)
        #expect(short.results.first?.split == false)
        let (busy, _) = try run(Self.chain, cores: 1)
        #expect(busy.results.first?.split == false, "one core, one recording pending")
    }

    @Test func explainSaysWhichRecordingsAreSplitAndWhy() throws {
        source.put("a.wav", seconds: 3)
        let (split, _) = try run(Self.chain, minimum: 2, explain: true)
        #expect(split.plan.contains("split a.wav: 3 s ≥ 2 s, 8 cores for 1 pending recording"), "\(split.plan)")
        let (off, _) = try run(Self.chain, split: "off", minimum: 2, explain: true)
        #expect(off.plan.contains("one core a.wav: the spec pins split: off"), "\(off.plan)")
        #expect(off.results.first?.split == false)
        // Too short: no line beyond the run line.
        let (short, _) = try run(Self.chain, minimum: 600, explain: true)
        #expect(short.plan.count == 1 && short.plan.first?.hasPrefix("run a.wav: ") == true, "\(short.plan)")
        // As many recordings as cores: neither is split at the start (lengths unknown: no line).
        source.put("b.wav", seconds: 3)
        let (two, _) = try run(Self.chain, cores: 2, minimum: 2, explain: true)
        #expect(!two.plan.contains { $0.hasPrefix("split ") }, "\(two.plan)")
    }
}
