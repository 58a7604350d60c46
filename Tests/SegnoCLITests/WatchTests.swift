import Foundation
import SegnoCoreTestSupport
import SegnoState
import Testing

/// `segno run --watch` as a service sees it, with the built binary: recordings processed once
/// they settle (once, however they were written), new folders watched, the output tree never
/// watched, idle passes silent and folded in the state, the lock held, SIGTERM a clean exit 0.
/// Every wait polls with a generous limit; nothing asserts how long anything took.
@Suite(.serialized) struct WatchTests {
    /// A spec over `in/` with a one-second settle and one FLAC tap.
    static func spec(output: String = "out", settle: String = "1s", stages: [String] = ["encode: { path: \"{dir}/{stem}.flac\", bits: 16 }"]) -> String {
        var lines = ["version: 1", "name: watchtests", "input:", "  root: in", "  settle: \(settle)",
                     "output:", "  root: \(output)", "parallel: 1", "stages:"]
        lines += stages.map { "  - " + $0 }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Starts `segno run --watch spec.yaml` and waits until it says it is watching.
    static func startWatch(_ ws: RunWorkspace, _ extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> SegnoChild {
        let child = try ws.start(["run", "--watch", "spec.yaml"] + extra)
        let up = Wait.until(timeout: 60) { child.outputSoFar.stderr.contains("segno: watching ") || !child.isRunning }
        #expect(up && child.isRunning, "the watcher did not start: \(child.outputSoFar)", sourceLocation: sourceLocation)
        return child
    }

    /// A WAV's bytes (a tone written by libsndfile outside the input folder).
    static func wavBytes(_ ws: RunWorkspace, seconds: Double = 0.5, frequency: Double = 440) throws -> Data {
        let scratch = ws["scratch-\(UInt32.random(in: 0...UInt32.max)).wav"]
        try RunWorkspace.writeTone(to: scratch, seconds: seconds, frequency: frequency)
        defer { unlink(scratch) }
        return try Data(contentsOf: URL(fileURLWithPath: scratch))
    }

    /// Writes `data` to `path` in `chunks` appends, each its own open–write–close (so each ends
    /// with an IN_CLOSE_WRITE), `pause` seconds apart: a recorder saving as it goes.
    static func writeInChunks(_ data: Data, to path: String, chunks: Int, pause: Double) throws {
        let size = (data.count + chunks - 1) / chunks
        for i in 0..<chunks {
            let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | (i == 0 ? O_TRUNC : 0), 0o644)
            guard fd >= 0 else { throw CLITestError("cannot open \(path): \(String(cString: strerror(errno)))") }
            let part = data[(i * size)..<min(data.count, (i + 1) * size)]
            let n = part.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
            guard n == part.count else { throw CLITestError("short write to \(path)") }
            // A slow writer (a recorder or a copy over the network): the pause is what is tested.
            if i < chunks - 1 { Thread.sleep(forTimeInterval: pause) }
        }
    }

    /// Inodes of the folders a process's inotify instances watch, from /proc/PID/fdinfo.
    static func watchedInodes(pid: Int32) -> Set<UInt64> {
        var inodes = Set<UInt64>()
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        for fd in fds {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                  target.contains("inotify"),
                  let info = try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(fd)", encoding: .utf8) else { continue }
            // "inotify wd:1 ino:1a2b sdev:800021 mask:… ignored_mask:0 fhandle-bytes:…"
            for line in info.split(separator: "\n") where line.hasPrefix("inotify ") {
                guard let field = line.split(separator: " ").first(where: { $0.hasPrefix("ino:") }),
                      let ino = UInt64(field.dropFirst(4), radix: 16) else { continue }
                inodes.insert(ino)
            }
        }
        return inodes
    }

    static func inode(_ path: String) -> UInt64? { RunWorkspace.stamp(path)?.inode }

    /// Lines of the watcher's standard output that report a pass (they start with the date).
    static func passLines(_ stdout: String) -> [String] {
        stdout.split(separator: "\n").map(String.init).filter { $0.first?.isNumber == true }
    }

    @Test(.timeLimit(.minutes(20))) func aRecordingWrittenInChunksIsProcessedOnceItSettles() throws {
        let ws = try RunWorkspace()
        try ws.writeSpec(Self.spec())
        let child = try Self.startWatch(ws)
        defer { child.send(SIGKILL) }

        // Five appends 0.3 s apart: each gap shorter than the 1 s settle, the whole longer.
        let wav = try Self.wavBytes(ws)
        try Self.writeInChunks(wav, to: ws["in/memo.wav"], chunks: 5, pause: 0.3)
        #expect(Wait.until(timeout: 60) { FileManager.default.fileExists(atPath: ws["out/memo.flac"]) }, "\(child.outputSoFar)")

        // While it watches it holds the state: a cron run exits 75 at once; status still reads.
        let cron = try ws.segno(["run", "spec.yaml"])
        #expect(cron.exited(75), "\(cron)")
        #expect(cron.stderr.contains("another segno run holds"), "\(cron.stderr)")
        #expect(try ws.status().int("done") == 1)

        // A folder made while watching, with a recording written into it straight away (before
        // its watch can exist): found by the walk of the new folder.
        try FileManager.default.createDirectory(atPath: ws["in/day 1/deep"], withIntermediateDirectories: true)
        try wav.write(to: URL(fileURLWithPath: ws["in/day 1/deep/late.wav"]))
        #expect(Wait.until(timeout: 60) { FileManager.default.fileExists(atPath: ws["out/day 1/deep/late.flac"]) }, "\(child.outputSoFar)")
        // And a file in that folder later: its own watch now sees it.
        try Self.writeInChunks(wav, to: ws["in/day 1/deep/later.wav"], chunks: 2, pause: 0.2)
        #expect(Wait.until(timeout: 60) { FileManager.default.fileExists(atPath: ws["out/day 1/deep/later.flac"]) }, "\(child.outputSoFar)")

        child.send(SIGTERM)
        let exit = child.wait(timeout: 30)
        #expect(exit.exited(0), "SIGTERM ends a watch with 0: \(exit)")
        #expect(exit.stdout.contains("watch stopped (SIGTERM): 3 done, 0 failed since "), "\(exit.stdout)")
        // One pass line per recording: five closes of memo.wav made one pass, not five.
        let passes = Self.passLines(exit.stdout)
        #expect(passes.filter { $0.contains("memo.wav") }.count == 1, "\(passes)")
        #expect(passes.count == 3, "\(passes)")
        #expect(passes.first?.hasSuffix("1 done, 0 failed, 0 up to date: memo.wav") == true, "\(passes)")

        // The state: each recording done once, as its whole file; the runs add up to three done.
        let state = try RunTests.state(ws)
        #expect(state["memo.wav"]?.status == .done)
        #expect(state["memo.wav"]?.identity.size == Int64(wav.count), "recorded as the finished file, not a part of it")
        #expect(Set(state.keys) == ["memo.wav", "day 1/deep/late.wav", "day 1/deep/later.wav"])
        let runs = try StateStore(path: ws["out/.segno/state.sqlite"]).recentRuns(limit: 50)
        #expect(runs.reduce(0) { $0 + $1.done } == 3, "\(runs)")
        // Four passes in all (no-op ones are folded into a row's repeats): the catch-up pass at
        // the start and one per recording — none for the chunks or the new folders on their own.
        #expect(runs.reduce(0) { $0 + $1.repeats } == 4, "\(runs.map { ($0.done, $0.repeats) })")
        #expect(runs.allSatisfy { $0.status != .running && $0.status != .killed }, "every pass closed its run: \(runs)")
        try RunTests.checkStateMatchesFiles(ws)
        #expect(try RunWorkspace.temporaries(ws["out"]).isEmpty)

        let after = try ws.segno(["run", "spec.yaml"])
        #expect(after.exited(0), "\(after)")
        #expect(after.stdout.contains("nothing to do: 3 recordings up to date"), "\(after.stdout)")
    }

    @Test(.timeLimit(.minutes(20))) func theOutputTreeInsideTheInputIsNeverWatched() throws {
        let ws = try RunWorkspace()
        try ws.writeSpec(Self.spec(output: "in/processed"))
        let wav = try Self.wavBytes(ws)
        try wav.write(to: URL(fileURLWithPath: ws["in/first.wav"]))
        RunWorkspace.setModified(ws["in/first.wav"], seconds: Int(Date().timeIntervalSince1970) - 60)
        let child = try Self.startWatch(ws)
        defer { child.send(SIGKILL) }
        // The catch-up pass processes what was there before the watch.
        #expect(Wait.until(timeout: 60) { FileManager.default.fileExists(atPath: ws["in/processed/first.flac"]) }, "\(child.outputSoFar)")
        try FileManager.default.createDirectory(atPath: ws["in/sub"], withIntermediateDirectories: true)

        // The watch set: the input folders, not the output root nor the state's folder under it.
        var watched = Set<UInt64>()
        #expect(Wait.until(timeout: 30) {
            watched = Self.watchedInodes(pid: child.pid)
            return Self.inode(ws["in/sub"]).map(watched.contains) ?? false
        }, "\(watched)")
        #expect(watched.contains(Self.inode(ws["in"]) ?? 0))
        #expect(!watched.contains(Self.inode(ws["in/processed"]) ?? 0), "output root watched")
        #expect(!watched.contains(Self.inode(ws["in/processed/.segno"]) ?? 0), "state folder watched")

        // A recording dropped into the output tree (and a folder made there) is no work; the
        // next real recording is processed alone.
        try FileManager.default.createDirectory(atPath: ws["in/processed/stray"], withIntermediateDirectories: true)
        try wav.write(to: URL(fileURLWithPath: ws["in/processed/stray/junk.wav"]))
        try wav.write(to: URL(fileURLWithPath: ws["in/sub/second.wav"]))
        #expect(Wait.until(timeout: 60) { FileManager.default.fileExists(atPath: ws["in/processed/sub/second.flac"]) }, "\(child.outputSoFar)")
        #expect(!Self.watchedInodes(pid: child.pid).contains(Self.inode(ws["in/processed/stray"]) ?? 0))

        child.send(SIGTERM)
        let exit = child.wait(timeout: 30)
        #expect(exit.exited(0), "\(exit)")
        #expect(!exit.stdout.contains("junk"), "\(exit.stdout)")
        #expect(Self.passLines(exit.stdout).count == 2, "\(exit.stdout)")
        let state = try RunTests.state(ws, output: "in/processed")
        #expect(Set(state.keys) == ["first.wav", "sub/second.wav"])
        #expect(!FileManager.default.fileExists(atPath: ws["in/processed/processed"]), "no output of an output")
    }

    @Test(.timeLimit(.minutes(20))) func idlePassesAreSilentAndFoldedIntoOneRun() throws {
        let ws = try RunWorkspace()
        try ws.writeSpec(Self.spec())
        let child = try Self.startWatch(ws, ["--rescan", "1s"])
        defer { child.send(SIGKILL) }
        // A full pass every second with nothing to do: one run row that counts them.
        var runs: [[String: Any]] = []
        #expect(Wait.until(timeout: 60) {
            runs = (try? RunTests.statusRuns(ws)) ?? []
            return (runs.first?.int("repeats") ?? 0) >= 3
        }, "\(runs)")
        child.send(SIGINT)
        let exit = child.wait(timeout: 30)
        #expect(exit.exited(0), "SIGINT ends a watch with 0 too: \(exit)")
        #expect(Self.passLines(exit.stdout).isEmpty, "idle passes print nothing: \(exit.stdout)")
        #expect(exit.stdout.contains("watch stopped (SIGINT): 0 done, 0 failed"), "\(exit.stdout)")
        let all = try StateStore(path: ws["out/.segno/state.sqlite"]).recentRuns(limit: 50)
        #expect(all.count == 1, "\(all)")
    }

    @Test(.timeLimit(.minutes(20))) func sigtermAbandonsTheRecordingInFlightCleanly() throws {
        let ws = try RunWorkspace()
        // Pitch-shifting half a minute of audio keeps a worker busy long enough to be stopped.
        try ws.writeSpec(Self.spec(stages: ["pitch: 3", "encode: { path: \"{dir}/{stem}.flac\", bits: 16 }"]))
        let child = try Self.startWatch(ws)
        defer { child.send(SIGKILL) }
        try Self.wavBytes(ws, seconds: 30).write(to: URL(fileURLWithPath: ws["in/long.wav"]))
        let started = Wait.until(timeout: 60) { !((try? RunWorkspace.temporaries(ws["out"])) ?? []).isEmpty }
        #expect(started, "never saw the recording in flight: \(child.outputSoFar)")
        child.send(SIGTERM)
        let exit = child.wait(timeout: 60)
        #expect(exit.exited(0), "\(exit)")
        #expect(exit.stdout.contains("; 1 left for the next run"), "\(exit.stdout)")
        #expect(try RunWorkspace.temporaries(ws["out"]).isEmpty, "abandoned work leaves no temporaries")
        #expect(try RunTests.state(ws)["long.wav"]?.status != .done)
        let next = try ws.segno(["run", "spec.yaml", "--dry-run"])
        #expect(next.exited(0), "\(next)")
        #expect(next.stdout.contains("dry run: 1 to run, 0 up to date"), "\(next.stdout)")
    }

    @Test(.timeLimit(.minutes(20))) func aDeletedRecordingIsPrunedByTheNextPass() throws {
        let ws = try RunWorkspace()
        try ws.writeSpec(Self.spec(stages: ["encode: { path: \"{dir}/{stem}.flac\", bits: 16 }",
                                            "upload: { to: \"file://\(ws["archive"])/{dir}\", prune: true, prune_limit: 1 }"]))
        let wav = try Self.wavBytes(ws)
        for name in ["keep.wav", "sub/gone.wav"] {
            try FileManager.default.createDirectory(atPath: (ws["in/" + name] as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try wav.write(to: URL(fileURLWithPath: ws["in/" + name]))
            RunWorkspace.setModified(ws["in/" + name], seconds: Int(Date().timeIntervalSince1970) - 60)
        }
        let child = try Self.startWatch(ws)
        defer { child.send(SIGKILL) }
        #expect(Wait.until(timeout: 60) { (try? RunWorkspace.outputs(ws["archive"]).count) == 2 }, "\(child.outputSoFar)")
        // The whole folder goes (its watch with it): the pass after it prunes the recording.
        try FileManager.default.removeItem(atPath: ws["in/sub"])
        #expect(Wait.until(timeout: 60) {
            (try? RunWorkspace.outputs(ws["archive"]).keys.sorted()) == ["keep.flac"] && (try? RunWorkspace.outputs(ws["out"]).keys.sorted()) == ["keep.flac"]
        }, "\(child.outputSoFar)")
        child.send(SIGTERM)
        let exit = child.wait(timeout: 30)
        #expect(exit.exited(0), "\(exit)")
        #expect(Self.passLines(exit.stdout).last?.hasSuffix("0 done, 0 failed, 1 up to date, 1 pruned: sub/gone.wav") == true, "\(exit.stdout)")
        #expect(exit.stdout.contains("watch stopped (SIGTERM): 2 done, 0 failed since "), "\(exit.stdout)")
        #expect(exit.stdout.contains(", 1 pruned"), "\(exit.stdout)")
    }

    @Test(.timeLimit(.minutes(20))) func maxTimeEndsAWatchWithZero() throws {
        let ws = try RunWorkspace()
        try ws.writeSpec(Self.spec())
        let r = try ws.segno(["run", "--watch", "spec.yaml", "--max-time", "1s"], timeout: 60)
        #expect(r.exited(0), "\(r)")
        #expect(r.stdout.contains("watch stopped (--max-time): 0 done, 0 failed since "), "\(r.stdout)")
    }

    @Test func inputsThatCannotBeWatchedAreRefused() throws {
        let ws = try RunWorkspace()
        try ws.writeSpec("""
            version: 1
            name: s3
            input: { root: "s3://bucket/memos/" }
            output: { root: out }
            stages: [ { encode: { path: "{stem}.flac" } } ]
            """)
        let s3 = try ws.segno(["run", "--watch", "spec.yaml"])
        #expect(s3.exited(2), "\(s3)")
        #expect(s3.stderr.contains("--watch needs a folder as input.root"), "\(s3.stderr)")

        try ws.writeSpec("""
            version: 1
            name: radio
            input:
              streams: [ { name: news, url: "http://127.0.0.1:9/live.mp3" } ]
              record: { duration: 10s, capture: captures }
            output: { root: out }
            stages: [ { encode: { path: "{stem}.flac" } } ]
            """)
        let streams = try ws.segno(["run", "--watch", "spec.yaml"])
        #expect(streams.exited(2), "\(streams)")
        #expect(streams.stderr.contains("input.streams records for its window"), "\(streams.stderr)")

        try ws.writeSpec(Self.spec())
        for bad in [["--dry-run"], ["--report", "r.json"], ["--rescan", "0s"]] {
            let r = try ws.segno(["run", "--watch", "spec.yaml"] + bad)
            #expect(r.exited(2), "\(bad): \(r)")
        }
        // A missing input root is said at once, before any pass.
        try FileManager.default.removeItem(atPath: ws["in"])
        let missing = try ws.segno(["run", "--watch", "spec.yaml"])
        #expect(missing.exited(1), "\(missing)")
        #expect(missing.stderr.contains("/in cannot be watched: No such file or directory"), "\(missing.stderr)")
        let noWatch = try ws.segno(["run", "spec.yaml", "--rescan", "1m"])
        #expect(noWatch.exited(2) && noWatch.stderr.contains("--rescan goes with --watch"), "\(noWatch)")
    }
}

extension RunTests {
    /// The last runs as `segno status --json` lists them (read-only, fine while a run holds the state).
    static func statusRuns(_ ws: RunWorkspace) throws -> [[String: Any]] {
        (try ws.status()["runs"] as? [[String: Any]]) ?? []
    }
}
