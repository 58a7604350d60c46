import Foundation
import Logging
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoKit
import SegnoTestSupport
import Testing

/// Checkpoints inside a long recording (decision 0095) through the real runner and the stages
/// segno ships: a run stopped in the middle of a recording leaves its checkpoint, the next run
/// decodes only from there, and every output is byte for byte the uninterrupted run's. The rule's
/// length and interval are lowered for short test recordings (`RunOptions.checkpoint…`).
@Suite struct CheckpointRunTests {
    let source = MemorySource()

    final class Notes: RunObserver, @unchecked Sendable {
        let lock = NSLock()
        var lines: [String] = []
        func workStarted(_ progress: RunProgress) {}
        func workEnded(_ progress: RunProgress) {}
        func failure(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
        func warning(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
    }

    /// One run of `stages` into `dir` (its own output folder and state, kept between runs).
    func run(_ stages: [String], in dir: TempDir, state: MemoryStateLocation, stop: StopFlag = StopFlag(),
             extra: String = "", split: Bool = false, explain: Bool = false, notes: Notes = Notes(), interval: Double = 2) throws -> RunSummary {
        let text = "version: 1\ninput: { root: \(dir.path)/in, settle: 0s }\noutput: { root: \(dir.path)/out }\n\(extra)stages:\n"
            + stages.map { "  - \($0)\n" }.joined()
        let job = Job(spec: try SpecLoader.parse(text, file: "test.yaml", baseDirectory: dir.path, registry: .forTests))
        var options = RunOptions()
        options.cores = split ? 8 : 1
        options.splitMinimumSeconds = split ? 0 : 1e9
        options.checkpointMinimumSeconds = 10
        options.checkpointIntervalSeconds = interval
        options.observer = notes
        options.explain = explain
        options.dryRun = explain
        return try BatchRunner(job: job, options: options, stop: stop, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
                               tools: .forTests, source: source, state: state).run()
    }

    /// Every output file's bytes, segno's own folder left out.
    func outputs(_ dir: TempDir) throws -> [String: Data] {
        let root = dir.path + "/out"
        var out: [String: Data] = [:]
        for rel in FileManager.default.subpaths(atPath: root) ?? [] where !rel.hasPrefix(".segno") {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + "/" + rel, isDirectory: &isDir), !isDir.boolValue else { continue }
            out[rel] = try Data(contentsOf: URL(fileURLWithPath: root + "/" + rel))
        }
        return out
    }

    func checkpointFolders(_ dir: TempDir) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: dir.path + "/out/.segno/" + CheckpointRule.folderName)) ?? []
    }

    /// Filters and the polyphase resampler lead (they keep checkpoints); encoders and waveform
    /// data replay the kept stream.
    static let chain = [
        "highpass: { frequency: 80 }",
        "lowpass: { frequency: 3000 }",
        "resample: { rate: 16000, quality: polyphase }",
        "encode: { path: \"{stem}.flac\" }",
        "encode: { path: \"{stem}.wav\", bits: 24 }",
        "waveform: { path: \"{stem}.json\" }",
    ]

    /// Runs `stages` uninterrupted in one folder, and stopped at `stopAt` source frames then run
    /// again in another; returns both outputs, the second run's summary, notes and decoded frames.
    func interruptedAndResumed(_ stages: [String], seconds: Double = 30, stopAt: Int = 150_000, split: Bool = false,
                               rate: Int = 8000, channels: Int = 1, noise: Bool = false, interval: Double = 2)
        throws -> (whole: [String: Data], resumed: [String: Data], second: RunSummary, notes: [String], decodedAgain: Int, folders: [String]) {
        let clean = try TempDir()
        source.put("long.wav", seconds: seconds, channels: channels, rate: rate, noise: noise)
        let whole = try run(stages, in: clean, state: try MemoryStateLocation(), split: split, interval: interval)
        #expect(whole.done == 1, "\(whole.results)")

        let dir = try TempDir()
        let state = try MemoryStateLocation()
        let stop = StopFlag()
        source.put("long.wav", seconds: seconds, channels: channels, rate: rate, noise: noise, interruptAt: (stopAt, stop))
        let first = try run(stages, in: dir, state: state, stop: stop, split: split, interval: interval)
        #expect(first.results.first?.status == .interrupted, "\(first.results)")
        #expect(checkpointFolders(dir).count == 1, "the stopped run keeps its checkpoint")
        #expect(try outputs(dir).isEmpty, "nothing half-written is visible")
        source.put("long.wav", seconds: seconds, channels: channels, rate: rate, noise: noise)
        let before = source.framesDecoded
        let notes = Notes()
        let second = try run(stages, in: dir, state: state, split: split, notes: notes, interval: interval)
        #expect(second.done == 1, "\(second.results)")
        #expect(second.results.first?.duration == whole.results.first?.duration, "the resumed run counts every frame")
        return (try outputs(clean), try outputs(dir), second, notes.lines, source.framesDecoded - before, checkpointFolders(dir))
    }

    @Test(arguments: [false, true])
    func aStoppedRunResumesFromItsCheckpointWithByteIdenticalOutputs(split: Bool) throws {
        // Split, the decoder reads up to 64 blocks (262 144 frames) ahead of the worker, which
        // keeps the checkpoints: a longer recording, stopped once 200 blocks were read.
        let r = split ? try interruptedAndResumed(Self.chain, seconds: 120, stopAt: 819_200, split: true)
                      : try interruptedAndResumed(Self.chain)
        #expect(r.second.results.first?.split == split)
        #expect(r.whole.keys.sorted() == ["long.flac", "long.json", "long.wav"])
        for (name, bytes) in r.whole {
            #expect(bytes.count > 100, "\(name)")
            #expect(r.resumed[name] == bytes, "\(name) differs between the resumed and the uninterrupted run")
        }
        // 30 s at 8 kHz, stopped at 150 000 frames (18.75 s): checkpoints every 2 s (4 blocks of
        // 4096 frames, 16 384 frames), so the last before the stop is at 147 456 frames. Split, the
        // worker was at most 64 blocks behind the decoder's 200: at 134 blocks or later (a block in each thread's hands), its last checkpoint at 132.
        if split {
            #expect(r.notes.contains { $0.contains("long.wav") && $0.contains("from its checkpoint: the first 3 stages start there") }, "\(r.notes)")
            let resumedAt = 960_000 - r.decodedAgain
            #expect(resumedAt >= 132 * 4096 && resumedAt <= 200 * 4096 && resumedAt % 16_384 == 0, "resumed at \(resumedAt)")
        } else {
            #expect(r.notes.contains { $0.contains("long.wav") && $0.contains("resumed at 18 s from its checkpoint: the first 3 stages start there") }, "\(r.notes)")
            #expect(r.decodedAgain == 240_000 - 147_456, "only what follows the checkpoint is decoded again")
        }
        #expect(r.folders.isEmpty, "the checkpoint is removed once the recording is done")
    }

    @Test func normalizeAfterTheCheckpointedStagesMeasuresTheWholeStreamAgain() throws {
        let stages = ["highpass: { frequency: 80 }", "normalize: { loudness: -20 }", "encode: { path: \"{stem}.flac\" }"]
        let r = try interruptedAndResumed(stages)
        #expect(r.whole["long.flac"] != nil)
        #expect(r.resumed["long.flac"] == r.whole["long.flac"])
        #expect(r.notes.contains { $0.contains("the first stage starts there") }, "\(r.notes)")
        #expect(r.decodedAgain < 240_000)
    }

    /// The default resampler (libsoxr) restarts on its grid (decision 0100): the chain of filters,
    /// the default `resample`, encoders and waveform data resumes a warm-up before its checkpoint,
    /// split or not, mono and stereo, 48 and 44.1 kHz (a grid period of 11 s), and with
    /// `normalize` after it; every output is byte-identical.
    @Test(arguments: [(false, 48000, 1), (true, 48000, 1), (false, 44100, 2)])
    func theDefaultResamplerResumesFromItsCheckpoint(split: Bool, rate: Int, channels: Int) throws {
        let chain = ["highpass: { frequency: 80 }", "lowpass: { frequency: 3000 }", "resample: 16000",
                     "encode: { path: \"{stem}.flac\" }", "encode: { path: \"{stem}.wav\", bits: 24 }", "waveform: { path: \"{stem}.json\" }"]
        // 44.1 kHz: libsoxr's grid is 11.1 s, so checkpoints 24 s apart (two grid periods and warm-ups fit).
        let interval: Double = rate == 44100 ? 24 : 2
        let seconds: Double = rate == 44100 ? 75 : 30
        let stopAt = rate == 44100 ? 2_800_000 : (split ? 1_100_000 : 700_000)
        let r = try interruptedAndResumed(chain, seconds: seconds, stopAt: stopAt, split: split, rate: rate, channels: channels,
                                          noise: true, interval: interval)
        #expect(r.whole.keys.sorted() == ["long.flac", "long.json", "long.wav"])
        for (name, bytes) in r.whole {
            #expect(r.resumed[name] == bytes, "\(name) differs between the resumed and the uninterrupted run")
        }
        let total = Int(seconds * Double(rate))
        let resumedAt = total - r.decodedAgain
        #expect(resumedAt > 0 && resumedAt < stopAt, "resumed at \(resumedAt)")
        #expect(r.notes.contains { $0.contains("from its checkpoint: the first 3 stages start there (resample") && $0.contains("earlier)") }, "\(r.notes)")
        #expect(r.folders.isEmpty)
    }

    /// The converter first in the chain (split, it then stays on the worker's thread), and at the
    /// source's own rate (libsoxr not used: it restarts one frame before the checkpoint).
    @Test(arguments: [(false, 16000), (true, 16000), (false, 8000)])
    func theDefaultResamplerFirstOrAtTheSourcesRateResumes(split: Bool, rate: Int) throws {
        let stages = ["resample: \(rate)", "lowpass: { frequency: 3000 }", "encode: { path: \"{stem}.flac\" }", "waveform: { path: \"{stem}.json\" }"]
        // 8 → 16 kHz needs a warm-up of over 1 s: checkpoints 4 s apart.
        let r = try interruptedAndResumed(stages, seconds: 60, stopAt: split ? 400_000 : 200_000, split: split, noise: true, interval: 4)
        #expect(r.whole.keys.sorted() == ["long.flac", "long.json"])
        for (name, bytes) in r.whole { #expect(r.resumed[name] == bytes, "\(name)") }
        #expect(r.notes.contains { $0.contains("from its checkpoint: the first 2 stages start there") }, "\(r.notes)")
        #expect(r.notes.contains { $0.contains("(resample") } == (rate != 8000), "\(r.notes)")
        #expect(480_000 - r.decodedAgain > 100_000, "resumed at \(480_000 - r.decodedAgain)")
    }

    @Test func theDefaultResamplerBeforeNormalizeResumes() throws {
        let stages = ["highpass: { frequency: 80 }", "resample: 16000", "normalize: { loudness: -20 }", "encode: { path: \"{stem}.flac\" }"]
        let r = try interruptedAndResumed(stages, stopAt: 700_000, rate: 48000, noise: true)
        #expect(r.whole["long.flac"] != nil)
        #expect(r.resumed["long.flac"] == r.whole["long.flac"])
        #expect(r.notes.contains { $0.contains("the first 2 stages start there (resample") }, "\(r.notes)")
        #expect(r.decodedAgain < 30 * 48000 - 600_000)
    }

    /// The pitch shifter saves its vocoder, resampler and queues: shifted up (resampled, then
    /// stretched), down (stretched, then resampled), a tempo alone (stretched), an octave at
    /// double speed (resampled alone), stereo, split (the shifter then leads on the decoder's
    /// thread, which saves its state); every output byte-identical to the uninterrupted run's.
    @Test(arguments: [("pitch: { semitones: 3 }", 1, false), ("pitch: { semitones: -5, tempo: 1.25 }", 2, false),
                      ("pitch: { tempo: 0.8 }", 1, true), ("pitch: { semitones: 12, tempo: 2 }", 1, false),
                      ("pitch: { cents: 250 }", 1, true)])
    func thePitchShifterResumesFromItsCheckpoint(pitch: String, channels: Int, split: Bool) throws {
        let first = pitch.contains("cents") ? [pitch, "highpass: { frequency: 80 }"] : ["highpass: { frequency: 80 }", pitch]
        let stages = first + ["resample: { rate: 6000, quality: polyphase }", "encode: { path: \"{stem}.flac\" }", "waveform: { path: \"{stem}.json\" }"]
        let r = try interruptedAndResumed(stages, seconds: split ? 120 : 30, stopAt: split ? 819_200 : 150_000, split: split,
                                          channels: channels, noise: true)
        #expect(r.whole.keys.sorted() == ["long.flac", "long.json"])
        for (name, bytes) in r.whole { #expect(r.resumed[name] == bytes, "\(pitch): \(name) differs between the resumed and the uninterrupted run") }
        #expect(r.notes.contains { $0.contains("from its checkpoint: the first 3 stages start there") }, "\(r.notes)")
        let total = (split ? 120 : 30) * 8000
        #expect(total - r.decodedAgain >= 100_000, "resumed at \(total - r.decodedAgain)")
        #expect(r.folders.isEmpty)
    }

    /// A transform that can neither save its state nor restart, first or after the filters
    /// (libsamplerate's converter), libsoxr after the pitch shifter (which holds frames back, so
    /// the converter's restart could not arrive), or `checkpoints: off`: no checkpoint is kept.
    @Test func aChainWithAStageWithoutCheckpointsOrCheckpointsOffStartsAgainFromTheBeginning() throws {
        let sinc = ["highpass: { frequency: 80 }", "resample: { rate: 16000, quality: best }", "encode: { path: \"{stem}.flac\" }"]
        let pitchFirst = ["pitch: 2", "resample: 16000", "encode: { path: \"{stem}.flac\" }"]
        for (stages, extra) in [(["resample: { rate: 16000, quality: fast }"] + Self.chain, ""), (sinc, ""), (pitchFirst, ""), (Self.chain, "checkpoints: off\n")] {
            let dir = try TempDir()
            let state = try MemoryStateLocation()
            let stop = StopFlag()
            source.put("long.wav", seconds: 30, interruptAt: (150_000, stop))
            // 8 → 16 kHz needs a warm-up of over 1 s: checkpoints 4 s apart, so a grid is found.
            let interval: Double = stages == pitchFirst ? 4 : 2
            let first = try run(stages, in: dir, state: state, stop: stop, extra: extra, interval: interval)
            #expect(first.results.first?.status == .interrupted)
            #expect(checkpointFolders(dir).isEmpty, "\(stages.first!) \(extra)")
            source.put("long.wav", seconds: 30)
            let before = source.framesDecoded
            let notes = Notes()
            #expect(try run(stages, in: dir, state: state, extra: extra, notes: notes, interval: interval).done == 1)
            #expect(source.framesDecoded - before == 240_000)
            if stages == pitchFirst {
                #expect(notes.lines.contains { $0.contains("no checkpoints: resample does not see the source's frames one for one") }, "\(notes.lines)")
            }
        }
    }

    @Test func aRecordingShorterThanTheRuleKeepsNoCheckpoint() throws {
        let dir = try TempDir()
        let stop = StopFlag()
        source.put("short.wav", seconds: 8, interruptAt: (40_000, stop))
        let first = try run(Self.chain, in: dir, state: try MemoryStateLocation(), stop: stop)
        #expect(first.results.first?.status == .interrupted)
        #expect(checkpointFolders(dir).isEmpty)
    }

    @Test func aChangedSourceAShortenedStreamOrADamagedRecordIsNotResumed() throws {
        let clean = try TempDir()
        source.put("long.wav", seconds: 30, version: 2)
        #expect(try run(Self.chain, in: clean, state: try MemoryStateLocation()).done == 1)

        for damage in ["changed source", "shortened stream", "damaged record"] {
            let dir = try TempDir()
            let state = try MemoryStateLocation()
            let stop = StopFlag()
            source.put("long.wav", seconds: 30, interruptAt: (150_000, stop))
            _ = try run(Self.chain, in: dir, state: state, stop: stop)
            let folder = dir.path + "/out/.segno/" + CheckpointRule.folderName + "/" + checkpointFolders(dir)[0]
            if damage == "shortened stream" {
                #expect(truncate(folder + "/stream", 1000) == 0)
            }
            if damage == "damaged record" {
                // One bit flipped in the last state saved (a disk's damage): its digest no longer fits.
                var record = try #require(FileManager.default.contents(atPath: folder + "/checkpoint"))
                record[record.count - 100] ^= 0x10
                try record.write(to: URL(fileURLWithPath: folder + "/checkpoint"))
            }
            source.put("long.wav", seconds: 30, version: damage == "changed source" ? 2 : 1)
            let notes = Notes()
            let before = source.framesDecoded
            #expect(try run(Self.chain, in: dir, state: state, notes: notes).done == 1)
            #expect(!notes.lines.contains { $0.contains("resumed at") }, "\(damage): \(notes.lines)")
            #expect(source.framesDecoded - before == 240_000, "\(damage)")
            if damage == "shortened stream" {
                #expect(notes.lines.contains { $0.contains("checkpoint not used: ") && $0.contains("shorter than its checkpoint") }, "\(notes.lines)")
            }
            #expect(try outputs(dir) == outputs(clean), "\(damage)")
            #expect(checkpointFolders(dir).isEmpty)
        }
    }
}

extension CheckpointRunTests {
    @Test func aCheckpointWhoseRecordingIsGoneIsRemovedByTheNextCompleteRun() throws {
        let dir = try TempDir()
        let state = try MemoryStateLocation()
        let stop = StopFlag()
        source.put("gone.wav", seconds: 30, interruptAt: (150_000, stop))
        _ = try run(Self.chain, in: dir, state: state, stop: stop)
        #expect(checkpointFolders(dir).count == 1)
        // A file segno did not write, put in the folder by hand, is left alone.
        let folder = dir.path + "/out/.segno/" + CheckpointRule.folderName + "/" + checkpointFolders(dir)[0]
        try Data("mine".utf8).write(to: URL(fileURLWithPath: folder + "/notes.txt"))
        source.remove("gone.wav")
        source.put("other.wav", seconds: 2)
        Thread.sleep(forTimeInterval: 1.1)  // file times have whole seconds here
        #expect(try run(Self.chain, in: dir, state: state).done == 1)
        #expect(FileManager.default.contents(atPath: folder + "/notes.txt") == Data("mine".utf8))
        #expect(!FileManager.default.fileExists(atPath: folder + "/stream") && !FileManager.default.fileExists(atPath: folder + "/checkpoint"))
    }
}

extension CheckpointRunTests {
    @Test func explainSaysWhichRecordingsKeepCheckpointsAndWhyNot() throws {
        source.put("long.wav", seconds: 30)
        source.put("short.wav", seconds: 2)
        let soxr = ["highpass: { frequency: 80 }", "resample: 16000", "encode: { path: \"{stem}.flac\" }"]
        let sinc = ["highpass: { frequency: 80 }", "resample: { rate: 16000, quality: best }", "encode: { path: \"{stem}.flac\" }"]
        let afterTap = ["highpass: { frequency: 80 }", "encode: { path: \"{stem}.wav\" }", "lowpass: 3000", "encode: { path: \"{stem}.flac\" }"]
        for (stages, extra, want) in [
            (Self.chain, "", "checkpoints long.wav: every 2 s of source, 30 s ≥ 10 s; the first 3 stages keep their state"),
            (["highpass: { frequency: 80 }", "normalize: { loudness: -20 }", "encode: { path: \"{stem}.flac\" }"], "",
             "checkpoints long.wav: every 2 s of source, 30 s ≥ 10 s; the first stage keeps its state"),
            (soxr, "", "checkpoints long.wav: every 2 s of source, 30 s ≥ 10 s; the first 2 stages keep their state"),
            (sinc, "", "no checkpoints long.wav: resample cannot save its state"),
            (["highpass: { frequency: 80 }", "resample: 16000", "resample: 8000", "encode: { path: \"{stem}.flac\" }"], "",
             "no checkpoints long.wav: a second resample restarts on a grid too"),
            (afterTap, "", "no checkpoints long.wav: lowpass follows a tap"),
            (["pitch: 2", "resample: 16000", "encode: { path: \"{stem}.flac\" }"], "",
             "no checkpoints long.wav: resample restarts on a grid and follows pitch, which holds frames back"),
            (["pitch: 2", "resample: { rate: 16000, quality: polyphase }", "encode: { path: \"{stem}.flac\" }"], "",
             "checkpoints long.wav: every 2 s of source, 30 s ≥ 10 s; the first 2 stages keep their state"),
            (Self.chain, "checkpoints: off\n", "no checkpoints long.wav: the spec pins checkpoints: off"),
        ] {
            let summary = try run(stages, in: try TempDir(), state: try MemoryStateLocation(), extra: extra, split: true, explain: true)
            #expect(summary.plan.contains(want), "\(summary.plan)")
            #expect(!summary.plan.contains { $0.contains("checkpoints short.wav") }, "too short: no line")
        }
        // At the rule's length (10 s here) and one block of 8 kHz frames under it.
        source.remove("long.wav")
        source.put("edge.wav", seconds: 10)
        source.put("under.wav", seconds: 10 - 4096.0 / 8000)
        let edge = try run(Self.chain, in: try TempDir(), state: try MemoryStateLocation(), split: true, explain: true)
        #expect(edge.plan.contains("checkpoints edge.wav: every 2 s of source, 10 s ≥ 10 s; the first 3 stages keep their state"), "\(edge.plan)")
        #expect(!edge.plan.contains { $0.contains("checkpoints under.wav") }, "\(edge.plan)")
    }

    /// What `--explain` says of a stage (`savesState`) is what its transforms do.
    @Test func aStageSaysItSavesStateExactlyWhenItsTransformsDo() throws {
        let stages = ["highpass: 80", "lowpass: 3000", "bandpass: 1000", "bandstop: 50", "eq: { bands: [{ type: parametric, frequency: 1000, bandwidth: 1, gain: -6 }] }",
                      "gain: -3", "mix: mono", "resample: { rate: 16000, quality: polyphase }", "resample: 16000", "resample: { rate: 16000, quality: best }",
                      "resample: { rate: 16000, quality: soxr-hq }", "pitch: { semitones: 2 }", "normalize: { loudness: -16 }", "encode: { path: \"{stem}.wav\" }"]
        let dir = try TempDir()
        let text = "version: 1\ninput: { root: \(dir.path)/in }\noutput: { root: \(dir.path)/out }\nstages:\n" + stages.map { "  - \($0)\n" }.joined()
        let spec = try SpecLoader.parse(text, file: "test.yaml", baseDirectory: dir.path, registry: .forTests)
        var saving = 0
        for case let t as any TransformConfig in spec.stages.map(\.config) {
            let made = try t.makeTransform()
            #expect(t.savesState == (made is any CheckpointingTransform || made is any RestartingTransform), "\(t.canonical)")
            if t.savesState { saving += 1 }
        }
        #expect(saving == 11)
    }
}

extension CheckpointRunTests {
    /// The kept stream or the record cannot be written (its name taken by a folder, which stops
    /// root too; a full disk fails the same write). The record is written on the syncer's thread
    /// (decision 0095 amended), whose failure stops checkpoints at the next one. Either way
    /// checkpoints stop with a note naming the cause, the pass goes on, the outputs are the
    /// uninterrupted run's, no record is left, and the folder segno did not write stays.
    @Test(arguments: [("stream", "cannot open the checkpoint stream"), ("checkpoint.new", "cannot write a checkpoint")])
    func aStreamOrRecordThatCannotBeWrittenStopsCheckpointsNotThePass(taken: String, cause: String) throws {
        let clean = try TempDir()
        source.put("long.wav", seconds: 30)
        #expect(try run(Self.chain, in: clean, state: try MemoryStateLocation()).done == 1)
        let dir = try TempDir()
        let folder = CheckpointPlan.folder(outputRoot: dir.path + "/out", relativePath: "long.wav")
        try FileManager.default.createDirectory(atPath: folder + "/" + taken, withIntermediateDirectories: true)
        let notes = Notes()
        #expect(try run(Self.chain, in: dir, state: try MemoryStateLocation(), notes: notes).done == 1)
        #expect(notes.lines.contains { $0.contains("long.wav") && $0.contains("checkpoints stopped, the pass goes on without them")
                                       && $0.contains(cause) }, "\(notes.lines)")
        #expect(try outputs(dir) == outputs(clean))
        #expect(!FileManager.default.fileExists(atPath: folder + "/checkpoint"), "no record is left")
        var isDir: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: folder + "/" + taken, isDirectory: &isDir) && isDir.boolValue, "a folder segno did not write is left alone")
    }
}
