import Foundation
import Logging
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
@testable import SegnoKit
@testable import SegnoSources
import SegnoTestSupport
import Synchronization
import Testing

/// The planner and the runner against an in-memory source and an in-memory state store: fast,
/// exact, no process or folder of recordings involved (outputs go to a temporary folder).
@Suite struct RunnerTests {
    let dir: TempDir
    let source = MemorySource()
    let state: MemoryStateLocation

    init() throws {
        dir = try TempDir()
        state = try MemoryStateLocation()
    }

    func job(_ stages: [String], extra: String = "") throws -> Job {
        let text = "version: 1\ninput: { root: \(dir.path)/in, settle: 0s }\noutput: { root: \(dir.path)/out }\nretries: 1\n\(extra)stages:\n"
            + stages.map { "  - \($0)\n" }.joined()
        return Job(spec: try SpecLoader.parse(text, file: "test.yaml", baseDirectory: dir.path, registry: .forTests))
    }

    func run(_ job: Job, _ configure: (inout RunOptions) -> Void = { _ in }) throws -> RunSummary {
        var options = RunOptions()
        configure(&options)
        return try BatchRunner(job: job, options: options, stop: StopFlag(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), tools: .forTests,
                               source: source, state: state).run()
    }

    static let chain = ["lowpass: { frequency: 3000 }", "encode: { path: \"{stem}.wav\" }", "waveform: { path: \"{stem}.json\" }"]

    @Test func aFreshRecordingRunsAndASecondRunDoesNothing() throws {
        source.put("a.wav")
        source.put("b.wav")
        let job = try job(Self.chain)
        let first = try run(job)
        #expect(first.done == 2 && first.failed == 0)
        #expect(first.results.allSatisfy { $0.reasons == ["encode: new", "waveform: new"] })
        let opens = source.opens
        let second = try run(job)
        #expect(second.planned == 0 && second.skipped == 2)
        #expect(source.opens == opens, "a fresh recording is not opened")
    }

    @Test func changingOneTapsOptionsRerunsOnlyThatTapAndExplainsIt() throws {
        source.put("a.wav")
        _ = try run(try job(Self.chain))
        let changed = try job(["lowpass: { frequency: 3000 }", "encode: { path: \"{stem}.wav\" }", "waveform: { path: \"{stem}.json\", bits: 16 }"])
        let summary = try run(changed) { $0.explain = true }
        #expect(summary.results.map(\.reasons) == [["waveform: options changed: waveform bits 8 → 16"]])
        #expect(summary.plan == ["run a.wav: waveform: options changed: waveform bits 8 → 16"])
        // An upstream transform changes every tap after it.
        let filter = try run(try job(["lowpass: { frequency: 2000 }", "encode: { path: \"{stem}.wav\" }", "waveform: { path: \"{stem}.json\", bits: 16 }"])) { $0.explain = true }
        #expect(filter.results.first?.reasons.count == 2)
        #expect(filter.results.first?.reasons.allSatisfy { $0.contains("lowpass frequency 3000 → 2000") } == true, "\(filter.results)")
    }

    @Test func aChangedSourceReruns() throws {
        source.put("a.wav")
        let job = try job(Self.chain)
        _ = try run(job)
        source.put("a.wav", seconds: 0.5, version: 2)
        let summary = try run(job)
        #expect(summary.results.first?.reasons == ["encode: source changed", "waveform: source changed"])
    }

    @Test func inputFailuresAreParkedEnvironmentFailuresAreNot() throws {
        source.put("bad.wav", openError: .decodeFailed(path: "bad.wav", detail: "garbage"))
        source.put("needs-ffmpeg.m4a", openError: .missingDecoder(path: "needs-ffmpeg.m4a", detail: "AAC needs ffmpeg on PATH"))
        let job = try job(Self.chain)
        let first = try run(job)
        #expect(first.failed == 2)
        #expect(Set(first.results.compactMap(\.failureClass)) == [.input, .environment])
        #expect(first.results.allSatisfy { $0.attempts == 1 }, "neither class is retried within the run")
        let second = try run(job)
        #expect(second.knownFailures == 1)
        #expect(second.results.map(\.path) == ["needs-ffmpeg.m4a"], "the environment's failure is tried again")
        // Fixed: the next plain run completes it; the bad file stays parked until it changes.
        source.put("needs-ffmpeg.m4a")
        let third = try run(job)
        #expect(third.done == 1 && third.knownFailures == 1)
        source.put("bad.wav", version: 2)
        #expect(try run(job).done == 1)
    }

    /// The library prints nothing: the observer is told when work starts and ends, with the
    /// plan's counters, and gets each failure as a line naming the recording.
    @Test func theObserverIsToldWhatHappens() throws {
        final class Recorder: RunObserver, @unchecked Sendable {
            let lock = NSLock()
            var events: [String] = []
            func add(_ e: String) { lock.lock(); events.append(e); lock.unlock() }
            func workStarted(_ progress: RunProgress) { add("start \(progress.counters.planned)") }
            func workEnded(_ progress: RunProgress) { add("end \(progress.counters.done) \(progress.counters.failed)") }
            func failure(_ line: String) { add("failure " + line) }
            func warning(_ line: String) { add("warning " + line) }
        }
        source.put("good.wav")
        source.put("bad.wav", openError: .decodeFailed(path: "bad.wav", detail: "garbage"))
        let recorder = Recorder()
        let summary = try run(try job(Self.chain)) { $0.observer = recorder }
        #expect(summary.done == 1 && summary.failed == 1)
        #expect(recorder.events.first == "start 2" && recorder.events.last == "end 1 1")
        #expect(recorder.events.filter { $0.hasPrefix("failure segno: ") && $0.contains("bad.wav") && $0.contains("garbage") }.count == 1)
    }

    @Test func transientFailuresAreRetriedWithinTheRun() throws {
        source.put("flaky.wav", openError: .io(path: "flaky.wav", detail: "interrupted", code: EINTR))
        let summary = try run(try job(Self.chain))
        #expect(summary.results.first?.attempts == 2, "retries: 1 in the spec")
        #expect(summary.results.first?.failureClass == .transient)
    }

    @Test func aSpecFailureIsRetriedOnceTheSpecChanges() throws {
        source.put("eight.wav", channels: 8)
        let mp3 = try job(["encode: { path: \"{stem}.wav\" }", "encode: { path: \"{stem}.mp3\" }"])
        let first = try run(mp3)
        #expect(first.results.first?.status == .partial)
        #expect(first.results.first?.failureClass == .spec)
        #expect(try run(mp3).knownFailures == 1)
        let stored = try state.store.loadAll()["eight.wav"]
        #expect(stored?.status == .partial && stored?.steps.count == 1)
        let fixed = try job(["encode: { path: \"{stem}.wav\" }", "mix: stereo", "encode: { path: \"{stem}.mp3\" }"])
        let second = try run(fixed)
        #expect(second.done == 1)
        #expect(second.results.first?.reasons == ["encode:{stem}.mp3: failed before"], "only the MP3 runs: \(second.results)")
    }

    @Test func recordingsThatWouldWriteOneOutputFailWithAHint() throws {
        source.put("a.wav")
        source.put("a.flac")
        let summary = try run(try job(["encode: { path: \"{stem}.wav\" }"]))
        #expect(summary.done == 1 && summary.failed == 1)
        let failed = try #require(summary.results.first { $0.status == .failed })
        #expect(failed.path == "a.wav", "the first in path order keeps the name")
        #expect(failed.error?.contains("add {ext} or {dir}") == true)
        #expect(failed.failureClass == .spec)
    }

    @Test func aDryRunPlansLikeTheRunAndChangesNothing() throws {
        source.put("a.wav")
        source.put("b.wav")
        let job = try job(Self.chain)
        _ = try run(job)
        source.put("b.wav", version: 2)
        source.put("c.wav")
        let runsBefore = try state.store.recentRuns(limit: 10).count
        let dry = try run(job) { $0.dryRun = true }
        #expect(dry.plan == ["run b.wav", "run c.wav"])
        #expect(dry.planned == 2 && dry.skipped == 1)
        #expect(try state.store.recentRuns(limit: 10).count == runsBefore, "no run recorded")
        let real = try run(job)
        #expect(real.results.map(\.path) == ["b.wav", "c.wav"])
    }

    @Test func pruneStaysWithinItsLimit() throws {
        for i in 0..<10 { source.put("m\(i).wav") }
        let job = try job(["encode: { path: \"{stem}.wav\" }", "upload: { to: \"file://\(dir.path)/archive/\", prune: true }"])
        #expect(try run(job).done == 10)
        source.remove("m0.wav")
        let one = try run(job)
        #expect(one.pruned == ["m0.wav"], "one recording is within 10 % (at least 1)")
        source.remove("m1.wav")
        source.remove("m2.wav")
        let two = try run(job)
        #expect(two.pruned.isEmpty)
        #expect(two.pruneHeld?.contains("more than prune_limit") == true)
        let forced = try run(job) { $0.force = .stage("prune") }
        #expect(forced.pruned == ["m1.wav", "m2.wav"])
        #expect(access(dir.path + "/archive/m1.wav", F_OK) != 0 && access(dir.path + "/out/m1.wav", F_OK) != 0)
        #expect(try state.store.recentlyPruned(limit: 10).count == 3)
    }

    @Test func shardsSplitTheRecordingsDisjointlyAndCompletely() throws {
        for i in 0..<20 { source.put("memo \(i).wav") }
        let job = try job(["encode: { path: \"{stem}.wav\" }"])
        var seen: [String] = []
        for k in 0..<3 {
            let summary = try run(job) { $0.shard = Shard("\(k)/3") }
            #expect(summary.done > 0, "every shard gets some of 20")
            seen += summary.results.map(\.path)
        }
        #expect(seen.count == 20 && Set(seen).count == 20)
        #expect(Shard("3/3") == nil && Shard("0/0") == nil && Shard("1/2")?.statePath("/a/state.sqlite") == "/a/state.shard-1-of-2.sqlite")
    }

    /// Issue 22: a memo under normalize is measured first; the progress a RunObserver reads must
    /// move during that measuring pass (it stayed at 0:00/20:00). The decoder looks at the
    /// counters when it reaches the end of the source, at the end of the measuring pass (issue 34:
    /// the source is opened once; the real pass reads the spool).
    @Test func progressMovesDuringTheMeasuringPass() throws {
        final class Watcher: RunObserver, @unchecked Sendable {
            let lock = NSLock()
            var progress: RunProgress?
            func workStarted(_ progress: RunProgress) { lock.lock(); self.progress = progress; lock.unlock() }
            func workEnded(_ progress: RunProgress) {}
            func failure(_ line: String) {}
            func warning(_ line: String) {}
        }
        /// Calls `atEnd` when the source has no more frames.
        final class Peeking: AudioDecoder {
            let inner: any AudioDecoder
            let atEnd: () -> Void
            init(_ inner: any AudioDecoder, atEnd: @escaping () -> Void) { self.inner = inner; self.atEnd = atEnd }
            var info: SourceInfo { inner.info }
            func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
                let n = try inner.read(into: &block, maxFrames: maxFrames)
                if n == 0 { atEnd() }
                return n
            }
            func close() { inner.close() }
        }
        final class Looking: RecordingSource, @unchecked Sendable {
            let inner = MemorySource()
            let watcher: Watcher
            var seen: [RunCounters.InFlight] = []
            init(_ watcher: Watcher) { self.watcher = watcher }
            func scan() throws(RunError) -> ScanResult { try inner.scan() }
            func open(_ file: ScannedFile) throws -> any AudioDecoder {
                if let c = watcher.progress?.counters.inFlight[file.relativePath] { seen.append(c) }
                return Peeking(try inner.open(file)) { [self] in
                    if let c = watcher.progress?.counters.inFlight[file.relativePath] { seen.append(c) }
                }
            }
            func contentHash(_ file: ScannedFile) throws -> Data { Data() }
            func currentIdentity(_ file: ScannedFile) -> FileIdentity? { inner.currentIdentity(file) }
        }
        let watcher = Watcher()
        let looking = Looking(watcher)
        looking.inner.put("memo.wav", seconds: 20)
        var options = RunOptions()
        options.observer = watcher
        let summary = try BatchRunner(job: try job(["normalize: { loudness: -16 }", "encode: { path: \"{stem}.wav\" }"]), options: options,
                                      stop: StopFlag(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
                                      tools: .forTests, source: looking, state: state).run()
        #expect(summary.done == 1, "\(summary.results)")
        // The open is before any pass; the end of the source ends the measuring pass.
        #expect(looking.seen.count == 2, "\(looking.seen)")
        let after = try #require(looking.seen.last)
        #expect(after.passes == 2 && after.total == 20, "\(after)")
        #expect(after.progress >= 8 && after.progress <= 10, "half of the work is the measuring pass: \(after)")
        #expect(after.decoded >= 16 && after.decoded <= 20, "\(after)")
    }

    @Test func aSourceThatChangesDuringItsPassIsNotReadyNotFailed() throws {
        // Opening fails because the file is half written, and by then its identity has moved on.
        final class Growing: RecordingSource, @unchecked Sendable {
            let inner = MemorySource()
            func scan() throws(RunError) -> ScanResult { try inner.scan() }
            func open(_ file: ScannedFile) throws -> any AudioDecoder {
                inner.put(file.relativePath, version: 99)
                throw AudioError.truncated(path: file.relativePath, detail: "header declares more")
            }
            func contentHash(_ file: ScannedFile) throws -> Data { Data() }
            func currentIdentity(_ file: ScannedFile) -> FileIdentity? { inner.currentIdentity(file) }
        }
        let growing = Growing()
        growing.inner.put("memo.wav")
        let options = RunOptions()
        let summary = try BatchRunner(job: try job(Self.chain), options: options, stop: StopFlag(),
                                      logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), tools: .forTests,
                                      source: growing, state: state).run()
        #expect(summary.failed == 0 && summary.settling == 1)
        #expect(try state.store.loadAll().isEmpty, "nothing recorded")
    }
}

/// The one known-failure rule and the failure classes.
@Suite struct FailureClassTests {
    @Test func everyErrorHasTheClassThatDecidesTheNextRun() {
        #expect(FailureClass.of(AudioError.truncated(path: "a", detail: "x")) == .input)
        #expect(FailureClass.of(AudioError.unrecognised(path: "a", looksLike: "text", detail: "x")) == .input)
        #expect(FailureClass.of(AudioError.unsupportedOutput(path: "a", detail: "x")) == .spec)
        #expect(FailureClass.of(AudioError.refused(path: "a", detail: "x")) == .spec)
        #expect(FailureClass.of(AudioError.missingDecoder(path: "a", detail: "x")) == .environment)
        #expect(FailureClass.of(AudioError.system("a", "write failed", errno: ENOSPC)) == .environment)
        #expect(FailureClass.of(AudioError.system("a", "write failed", errno: EROFS)) == .environment)
        #expect(FailureClass.of(AudioError.system("a", "rename failed", errno: ENAMETOOLONG)) == .spec)
        #expect(FailureClass.of(AudioError.system("a", "read", errno: EINTR)) == .transient)
        #expect(FailureClass.of(UploadError.failed("x", .transient)) == .transient)
        #expect(FailureClass.of(StageStartError(stage: "normalize", "too short")) == .spec)
        #expect(AudioError.system("out/a.wav", "write failed", errno: ENOSPC).description == "out/a.wav: write failed: No space left on device")
    }
}
