import Foundation
import SegnoAudio
import SegnoCore
import SegnoCoreTestSupport
import SegnoState
import Testing

/// `segno run` / `retry` / `status` / `validate` as a cron job sees them, by running the built
/// binary as a child process: crash safety under SIGKILL, resume rules (only what changed runs),
/// the run lock, hostile input names, signals, `--max-time`, reports and exit codes.
/// Serialized: each test starts its own `segno` processes and the machine may have two cores.
@Suite(.serialized) struct RunTests {
    // MARK: specs

    /// The test chain: mix → WAV tap → resample → FLAC tap, so one tap stands before the
    /// resample and one after it.
    static func stages(resample: Int = 16000, flacBits: Int = 16, gain: Double? = nil) -> [String] {
        (gain.map { ["gain: \($0)"] } ?? []) + [
            "mix: mono",
            "encode: { path: \"wav/{dir}/{stem}.wav\", bits: 16 }",
            "resample: \(resample)",
            "encode: { path: \"flac/{dir}/{stem}.flac\", bits: \(flacBits) }",
        ]
    }

    static func spec(output: String = "out", input: [String] = [], stages: [String] = RunTests.stages(),
                     parallel: Int = 2, retries: Int = 0) -> String {
        // Test files are written just before the run: no settling time unless a test asks.
        let settle = input.contains { $0.hasPrefix("settle:") } ? [] : ["settle: 0s"]
        var lines = ["version: 1", "name: runtests", "input:", "  root: in"] + (input + settle).map { "  " + $0 }
        lines += ["output:", "  root: \(output)", "parallel: \(parallel)", "retries: \(retries)", "stages:"]
        lines += stages.map { "  - " + $0 }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The two outputs of the test chain for an input path relative to `in/`.
    static func outputs(of input: String) -> (wav: String, flac: String) {
        let dir = (input as NSString).deletingLastPathComponent
        let stem = ((input as NSString).lastPathComponent as NSString).deletingPathExtension
        let base = dir.isEmpty ? stem : dir + "/" + stem
        return ("wav/" + base + ".wav", "flac/" + base + ".flac")
    }

    /// The state store of a workspace's `out/`, loaded and closed again.
    static func state(_ ws: RunWorkspace, output: String = "out") throws -> StateIndex {
        try StateStore(path: ws[output + "/.segno/state.sqlite"]).loadAll()
    }

    /// Every finished step's files exist and hash to what the state says.
    static func checkStateMatchesFiles(_ ws: RunWorkspace, output: String = "out", sourceLocation: SourceLocation = #_sourceLocation) throws {
        for (path, r) in try state(ws, output: output) where r.status == .done {
            for step in r.steps.values {
                var digests: [Data] = []
                for o in step.outputs {
                    guard let h = try? FileHash.sha256(path: ws[output + "/" + o]) else {
                        Issue.record("\(path): \(step.stage) recorded done but \(o) is missing", sourceLocation: sourceLocation)
                        continue
                    }
                    digests.append(h.digest)
                }
                #expect(FileHash.combine(digests) == step.outputHash, "\(path): \(step.stage) output differs from its recorded hash",
                        sourceLocation: sourceLocation)
            }
        }
    }

    /// Finished (non-temporary) files under `dir`, leaving out `.segno/`.
    static func finishedFiles(_ dir: String) -> Int {
        ((try? RunWorkspace.stamps(dir)) ?? [:]).keys.filter { !($0 as NSString).lastPathComponent.hasPrefix(OutputFile.tempPrefix) }.count
    }

    // MARK: crash safety

    /// The issue's crash test: ≥ 50 recordings, ≥ 10 SIGKILLs at random moments (each followed by
    /// a new run), then a run to completion; every output byte-identical to an uninterrupted run,
    /// the state all done, no temporaries. `SEGNO_KILL_SEED` replays a schedule.
    @Test(.timeLimit(.minutes(20)))
    func killedRunsEndWithTheBytesOfAnUninterruptedRun() throws {
        let ws = try RunWorkspace()
        let inputs = try ws.makeRecordings(count: 52)
        try ws.writeSpec(Self.spec(output: "A"), name: "A.yaml")
        try ws.writeSpec(Self.spec(output: "B"), name: "B.yaml")
        let started = Date()

        // (1) The reference: one uninterrupted run.
        let reference = try ws.segno(["run", "A.yaml", "--quiet"])
        let referenceSeconds = Date().timeIntervalSince(started)
        #expect(reference.exited(0), "\(reference.stderr)")
        let expected = try RunWorkspace.outputs(ws["A"])
        #expect(expected.count == inputs.count * 2)

        // (2) Killed again and again. Kill moments are drawn from a window that shrinks with the
        // work left, so the kills land while there is still work; once everything is done,
        // forced runs (rewriting every output) are killed instead.
        let seed = ProcessInfo.processInfo.environment["SEGNO_KILL_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        var rng = SplitMix64(seed: seed)
        let wanted = 12
        var kills = 0, runs = 0, completed = 0, forcedKills = 0, midWrite = 0
        while kills < wanted && runs < 80 {
            runs += 1
            let done = Self.finishedFiles(ws["B"])
            let left = max(0, expected.count - done)
            let force = left == 0
            let fractionLeft = force ? 1 : Double(left) / Double(expected.count)
            let window = max(0.02, referenceSeconds * fractionLeft / Double(wanted - kills + 1))
            let delay = Double.random(in: 0...window, using: &rng)
            let child = try ws.start(["run", "B.yaml", "--quiet"] + (force ? ["--force"] : []))
            // The kill's moment is the thing under test (a seeded schedule), not a wait for an event.
            usleep(useconds_t(delay * 1_000_000))
            child.send(SIGKILL)
            let exit = child.wait()
            if !(try RunWorkspace.temporaries(ws["B"]).isEmpty) { midWrite += 1 }
            if exit.signalled {
                #expect(exit.status == SIGKILL)
                kills += 1
                if force { forcedKills += 1 }
            } else {
                #expect(exit.exited(0), "run \(runs) (seed \(seed)): \(exit.stderr)")
                completed += 1
            }
        }
        #expect(kills >= 10, "only \(kills) of \(runs) runs were killed (seed \(seed))")
        let finishedBefore = Self.finishedFiles(ws["B"])
        // Once everything has been done, kill a few forced reruns too: they overwrite finished
        // outputs, and a kill must never leave a half-written file under a final name.
        if forcedKills < 3 {
            let finishing = try ws.segno(["run", "B.yaml", "--quiet"])
            #expect(finishing.exited(0), "seed \(seed): \(finishing.stderr)")
            for _ in forcedKills..<3 {
                let child = try ws.start(["run", "B.yaml", "--quiet", "--force"])
                // A kill at a seeded moment of the rerun: the schedule under test.
                usleep(useconds_t(Double.random(in: 0.02...max(0.05, referenceSeconds / 2), using: &rng) * 1_000_000))
                child.send(SIGKILL)
                if child.wait().signalled { forcedKills += 1; kills += 1 }
                runs += 1
            }
        }

        // (3) A run to completion.
        let finalStart = Date()
        let final = try ws.segno(["run", "B.yaml"])
        let finalSeconds = Date().timeIntervalSince(finalStart)
        #expect(final.exited(0), "seed \(seed): \(final.stderr)")

        let got = try RunWorkspace.outputs(ws["B"])
        #expect(Set(got.keys) == Set(expected.keys), "seed \(seed)")
        for (path, bytes) in expected.sorted(by: { $0.key < $1.key }) where got[path] != bytes {
            Issue.record("\(path) differs from the uninterrupted run (seed \(seed))")
        }
        #expect(try RunWorkspace.temporaries(ws["B"]).isEmpty)

        let status = try ws.status("B.yaml")
        #expect(status.int("recordings") == inputs.count)
        #expect(status.int("done") == inputs.count)
        #expect(status.int("failed") == 0)
        let all = try Self.state(ws, output: "B")
        #expect(all.count == inputs.count)
        #expect(all.values.allSatisfy { $0.status == .done && $0.steps.count == 2 })
        try Self.checkStateMatchesFiles(ws, output: "B")
        let runsRecorded = try StateStore(path: ws["B/.segno/state.sqlite"]).recentRuns(limit: 1000)
        #expect(runsRecorded.allSatisfy { $0.status != .running }, "every killed run is closed by the next one")
        #expect(runsRecorded.first?.status == .done)

        let again = try ws.segno(["run", "B.yaml"])
        #expect(again.exited(0))
        #expect(again.stdout.contains("nothing to do: \(inputs.count) recordings up to date"))
        print("crash test (seed \(seed)): reference run \(String(format: "%.2f", referenceSeconds)) s for \(inputs.count) recordings; "
              + "\(kills) SIGKILLs (\(forcedKills) during forced reruns, \(midWrite) leaving temporaries) in \(runs) runs, \(completed) ran to the end; "
              + "\(finishedBefore) of \(expected.count) outputs in place after them; "
              + "final run \(String(format: "%.2f", finalSeconds)) s; whole test \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
    }

    // MARK: resume rules

    @Test func changingOneTapsOptionsRerunsOnlyThatTap() throws {
        // Given a finished run
        let ws = try RunWorkspace()
        let inputs = try ws.makeRecordings(count: 6, maxSeconds: 1)
        try ws.writeSpec(Self.spec())
        #expect(try ws.segno(["run", "spec.yaml", "--quiet"]).exited(0))
        let before = try RunWorkspace.stamps(ws["out"])
        let stateBefore = try Self.state(ws)
        #expect(before.count == 12)

        // When only the FLAC tap's options change
        try ws.writeSpec(Self.spec(stages: Self.stages(flacBits: 24)))
        let plan = try ws.segno(["run", "spec.yaml", "--dry-run", "--explain"])
        #expect(plan.exited(0))
        let runLines = plan.stdoutLines.filter { $0.hasPrefix("run ") }
        #expect(runLines.count == inputs.count)
        for line in runLines { #expect(line.hasSuffix(": encode:flac/{dir}/{stem}.flac: options changed: encode bits 16 → 24"), "\(line)") }
        #expect(plan.stdout.contains("dry run: 6 to run, 0 up to date"))
        #expect(try RunWorkspace.stamps(ws["out"]) == before, "a dry run writes nothing")

        let run = try ws.segno(["run", "spec.yaml", "--report", "r1.json"])
        #expect(run.exited(0))
        #expect(run.stdout.contains("6 done, 0 failed, 0 up to date"))

        // Then the WAVs are untouched and every FLAC is new
        let after = try RunWorkspace.stamps(ws["out"])
        for (path, stamp) in before {
            if path.hasPrefix("wav/") { #expect(after[path] == stamp, "\(path) was rewritten") }
            else { #expect(after[path] != nil && after[path]?.inode != stamp.inode, "\(path) was not rewritten") }
        }
        let stateAfter = try Self.state(ws)
        for (path, r) in stateAfter {
            let old = try #require(stateBefore[path])
            #expect(r.steps["encode:wav/{dir}/{stem}.wav"] == old.steps["encode:wav/{dir}/{stem}.wav"], "\(path)")
            #expect(r.steps["encode:flac/{dir}/{stem}.flac"]?.fingerprint != old.steps["encode:flac/{dir}/{stem}.flac"]?.fingerprint)
        }
        let report = try ws.report("r1.json")
        for rec in report["recordings"] as? [[String: Any]] ?? [] {
            let outs = rec["outputs"] as? [String] ?? []
            #expect(outs.count == 1 && outs[0].hasSuffix(".flac"), "\(rec)")
        }
        try Self.checkStateMatchesFiles(ws)

        // When a transform between the taps changes, only the tap after it reruns
        try ws.writeSpec(Self.spec(stages: Self.stages(resample: 22050, flacBits: 24)))
        let explain = try ws.segno(["run", "spec.yaml", "--explain"])
        #expect(explain.exited(0))
        let reasons = explain.stdoutLines.filter { $0.hasPrefix("run ") }
        #expect(reasons.count == inputs.count)
        for line in reasons { #expect(line.hasSuffix(": encode:flac/{dir}/{stem}.flac: options changed: resample rate 16000 → 22050"), "\(line)") }
        let afterResample = try RunWorkspace.stamps(ws["out"])
        for (path, stamp) in after {
            if path.hasPrefix("wav/") { #expect(afterResample[path] == stamp, "\(path) was rewritten") }
            else { #expect(afterResample[path]?.inode != stamp.inode, "\(path) was not rewritten") }
        }

        // When a transform before both taps is added, both rerun
        try ws.writeSpec(Self.spec(stages: Self.stages(resample: 22050, flacBits: 24, gain: -3)))
        let both = try ws.segno(["run", "spec.yaml", "--report", "r2.json"])
        #expect(both.exited(0))
        let afterGain = try RunWorkspace.stamps(ws["out"])
        for (path, stamp) in afterResample { #expect(afterGain[path]?.inode != stamp.inode, "\(path) was not rewritten") }
        let r2 = try ws.report("r2.json")
        for rec in r2["recordings"] as? [[String: Any]] ?? [] { #expect((rec["outputs"] as? [String])?.count == 2) }

        // And going back to earlier options is a change like any other, explained from the stored recipes
        try ws.writeSpec(Self.spec(stages: Self.stages(resample: 22050, flacBits: 24)))
        let back = try ws.segno(["run", "spec.yaml", "--dry-run", "--explain"])
        #expect(back.stdout.contains("stage removed") || back.stdout.contains("gain"), "\(back.stdout)")
    }

    @Test func touchingOneSourceRerunsOnlyIt() throws {
        let ws = try RunWorkspace()
        let inputs = try ws.makeRecordings(count: 6, maxSeconds: 1)
        try ws.writeSpec(Self.spec())
        #expect(try ws.segno(["run", "spec.yaml", "--quiet"]).exited(0))
        let before = try RunWorkspace.stamps(ws["out"])
        let bytesBefore = try RunWorkspace.outputs(ws["out"])

        let victim = inputs[4]
        let stamp = try #require(RunWorkspace.stamp(ws["in/" + victim]))
        RunWorkspace.setModified(ws["in/" + victim], seconds: Int(stamp.mtimeNs / 1_000_000_000) - 3600, nanoseconds: 5)
        let run = try ws.segno(["run", "spec.yaml", "--report", "r.json"])
        #expect(run.exited(0))
        #expect(run.stdout.contains("1 done, 0 failed, 5 up to date"), "\(run.stdout)")
        let report = try ws.report("r.json")
        #expect(report.int("counts", "planned") == 1)
        let recs = report["recordings"] as? [[String: Any]] ?? []
        #expect(recs.map { $0["path"] as? String } == [victim])
        #expect((recs.first?["reasons"] as? [String]) == ["encode:wav/{dir}/{stem}.wav: source changed", "encode:flac/{dir}/{stem}.flac: source changed"])

        let after = try RunWorkspace.stamps(ws["out"])
        let mine = Self.outputs(of: victim)
        for (path, s) in before {
            if path == mine.wav || path == mine.flac { #expect(after[path]?.inode != s.inode, "\(path) was not rerun") }
            else { #expect(after[path] == s, "\(path) was rewritten") }
        }
        #expect(try RunWorkspace.outputs(ws["out"]) == bytesBefore, "same source bytes, same outputs")
        let state = try #require(try Self.state(ws)[victim])
        #expect(state.identity.mtimeNs == (stamp.mtimeNs / 1_000_000_000 - 3600) * 1_000_000_000 + 5)
    }

    @Test func aDeletedOutputIsRebuiltAlone() throws {
        let ws = try RunWorkspace()
        let inputs = try ws.makeRecordings(count: 6, maxSeconds: 1)
        try ws.writeSpec(Self.spec())
        #expect(try ws.segno(["run", "spec.yaml", "--quiet"]).exited(0))
        let before = try RunWorkspace.stamps(ws["out"])
        let victim = Self.outputs(of: inputs[1])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: ws["out/" + victim.flac]))
        #expect(unlink(ws["out/" + victim.flac]) == 0)

        let run = try ws.segno(["run", "spec.yaml", "--explain", "--report", "r.json"])
        #expect(run.exited(0))
        #expect(run.stdoutLines.contains("run \(inputs[1]): encode:flac/{dir}/{stem}.flac: output missing: \(victim.flac)"), "\(run.stdout)")
        #expect(run.stdout.contains("1 done, 0 failed, 5 up to date"))
        let after = try RunWorkspace.stamps(ws["out"])
        for (path, s) in before where path != victim.flac { #expect(after[path] == s, "\(path) was rewritten") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: ws["out/" + victim.flac])) == bytes)
        let recs = try ws.report("r.json")["recordings"] as? [[String: Any]] ?? []
        #expect(recs.count == 1)
        #expect((recs.first?["outputs"] as? [String]) == [ws["out/" + victim.flac]])
    }

    @Test func aSecondRunHasNothingToDoAndOpensNoSource() throws {
        let ws = try RunWorkspace()
        let inputs = try ws.makeRecordings(count: 6, maxSeconds: 1)
        try ws.writeSpec(Self.spec())
        let first = try ws.segno(["run", "spec.yaml"])
        #expect(first.exited(0))
        #expect(first.stdout.contains("6 done, 0 failed, 0 up to date"))
        let before = try RunWorkspace.stamps(ws["out"])

        // Every source is overwritten with zeros in place, keeping size, mtime and inode: a run
        // that decoded anything would fail.
        for rel in inputs { try RunWorkspace.spoilInPlace(ws["in/" + rel]) }
        let second = try ws.segno(["run", "spec.yaml", "--report", "r.json"])
        #expect(second.exited(0), "\(second.stderr)")
        #expect(second.stdout == "nothing to do: 6 recordings up to date\n")
        #expect(second.stderr.isEmpty, "\(second.stderr)")
        let report = try ws.report("r.json")
        #expect(report.int("counts", "planned") == 0)
        #expect(report.int("counts", "skipped") == 6)
        #expect(try RunWorkspace.stamps(ws["out"]) == before)
        let dry = try ws.segno(["run", "spec.yaml", "--dry-run"])
        #expect(dry.stdout.contains("dry run: 0 to run, 6 up to date"))
    }

    @Test func forceRerunsEveryTapOrOneStageKind() throws {
        let ws = try RunWorkspace()
        try ws.makeRecordings(count: 3, maxSeconds: 0.8)
        try ws.writeSpec(Self.spec())
        #expect(try ws.segno(["run", "spec.yaml", "--quiet"]).exited(0))
        let before = try RunWorkspace.stamps(ws["out"])
        let all = try ws.segno(["run", "spec.yaml", "--force", "--explain"])
        #expect(all.exited(0))
        #expect(all.stdout.contains("3 done, 0 failed, 0 up to date"))
        #expect(all.stdoutLines.filter { $0.hasSuffix(": encode:wav/{dir}/{stem}.wav: forced; encode:flac/{dir}/{stem}.flac: forced") }.count == 3, "\(all.stdout)")
        let after = try RunWorkspace.stamps(ws["out"])
        for (path, s) in before { #expect(after[path]?.inode != s.inode, "\(path) was not rewritten") }
        let kind = try ws.segno(["run", "spec.yaml", "--force=encode"])
        #expect(kind.stdout.contains("3 done"))
        let other = try ws.segno(["run", "spec.yaml", "--force=waveform"])
        #expect(other.stdout.contains("nothing to do: 3 recordings up to date"), "no waveform taps, nothing forced")
        // A kind that is not a tap (or is no stage at all) is refused with the list.
        for bogus in ["bogus", "mix"] {
            let refused = try ws.segno(["run", "spec.yaml", "--force=\(bogus)"])
            #expect(refused.exited(2))
            // Every tap kind the registry declares, with upload and prune.
            let kinds = StageRegistry.forTests.tapKinds.union(["upload", "prune"]).sorted().joined(separator: ", ")
            #expect(Set(["cuts", "encode", "fingerprint", "metadata", "prune", "upload"]).isSubset(of: kinds.components(separatedBy: ", ")), "\(kinds)")
            #expect(refused.stderr.contains("use one of \(kinds), or --force alone"), "\(refused.stderr)")
        }
    }

    @Test func verifyContentSkipsATouchedSourceWithTheSameBytes() throws {
        let ws = try RunWorkspace()
        let inputs = try ws.makeRecordings(count: 3, maxSeconds: 0.8)
        try ws.writeSpec(Self.spec(input: ["verify: content"]))
        #expect(try ws.segno(["run", "spec.yaml", "--quiet"]).exited(0))
        let before = try RunWorkspace.stamps(ws["out"])
        // Touched, and copied over itself (new inode), with the same bytes: nothing reruns.
        RunWorkspace.setModified(ws["in/" + inputs[0]], seconds: 1_600_000_000)
        let copy = ws["in/" + inputs[1]]
        let bytes = try Data(contentsOf: URL(fileURLWithPath: copy))
        #expect(unlink(copy) == 0)
        try bytes.write(to: URL(fileURLWithPath: copy))
        let r = try ws.segno(["run", "spec.yaml"])
        #expect(r.exited(0))
        #expect(try RunWorkspace.stamps(ws["out"]) == before, "\(r.stdout)")
        let state = try Self.state(ws)
        let touched: Int64 = 1_600_000_000 * 1_000_000_000
        #expect(state[inputs[0]]?.identity.mtimeNs == touched, "the new identity is remembered")
        #expect(try ws.segno(["run", "spec.yaml"]).stdout.contains("nothing to do: 3 recordings up to date"))
        // Different bytes do rerun.
        try RunWorkspace.writeTone(to: ws["in/" + inputs[2]], rate: 8000, seconds: 0.4, frequency: 999)
        let changed = try ws.segno(["run", "spec.yaml"])
        #expect(changed.stdout.contains("1 done, 0 failed, 2 up to date"), "\(changed.stdout)")
    }

    @Test func settlingFilesWaitForTheNextRun() throws {
        let ws = try RunWorkspace()
        let inputs = try ws.makeRecordings(count: 3, maxSeconds: 0.8)
        try ws.writeSpec(Self.spec(input: ["settle: 1h"]))
        RunWorkspace.setModified(ws["in/" + inputs[0]], seconds: Int(Date().timeIntervalSince1970) - 7200)
        let r = try ws.segno(["run", "spec.yaml"])
        #expect(r.exited(0))
        #expect(r.stdout.contains("1 done, 0 failed, 0 up to date, 2 still settling (modified in the last 1 h; input.settle sets how long)"), "\(r.stdout)")
        #expect(Self.finishedFiles(ws["out"]) == 2)
    }

    @Test func outputsInsideTheInputFolderAreNotTakenAsInput() throws {
        let ws = try RunWorkspace()
        try ws.makeRecordings(count: 3, maxSeconds: 0.8)
        try ws.writeSpec(Self.spec(output: "in/processed", stages: ["encode: { path: \"{dir}/{stem}.wav\" }"]))
        let first = try ws.segno(["run", "spec.yaml", "--report", "r.json"])
        #expect(first.exited(0))
        #expect(try ws.report("r.json").int("counts", "scanned") == 3)
        let second = try ws.segno(["run", "spec.yaml", "--report", "r.json"])
        #expect(second.stdout.contains("nothing to do: 3 recordings up to date"), "\(second.stdout)")
        #expect(try ws.report("r.json").int("counts", "scanned") == 3)
    }

    @Test func outputFoldersThatAreLinksAreRefusedAndCleanupNeverFollowsLinks() throws {
        let ws = try RunWorkspace()
        try ws.makeRecordings(count: 2, maxSeconds: 0.6)
        try FileManager.default.createDirectory(atPath: ws["elsewhere"], withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: ws["out"], withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: ws["elsewhere/" + OutputFile.tempPrefix + "not-ours"], contents: Data("keep".utf8)))
        #expect(symlink("../elsewhere", ws["out/flac"]) == 0)
        try ws.writeSpec(Self.spec())
        let r = try ws.segno(["run", "spec.yaml"])
        #expect(r.exited(1))
        #expect(r.stderrLines.count == 2 && r.stderrLines.allSatisfy { $0.contains("symbolic link") }, "\(r.stderr)")
        #expect(try RunWorkspace.walk(ws["elsewhere"]).map(\.path) == [OutputFile.tempPrefix + "not-ours"])
        // The WAV tap is not behind the link: it finishes, so both recordings are partly done.
        #expect(try ws.status().int("partial") == 2)
    }

    // MARK: the lock

    @Test func aRunWhileTheLockIsHeldExits75AndTouchesNothing() throws {
        let ws = try RunWorkspace()
        try ws.makeRecordings(count: 2, maxSeconds: 0.6)
        try ws.writeSpec(Self.spec())
        do {
            let held = try #require(try RunLock(statePath: ws["out/.segno/state.sqlite"]))
            let r = try ws.segno(["run", "spec.yaml"])
            #expect(r.exited(75), "\(r)")
            #expect(r.stdout.isEmpty)
            #expect(r.stderrLines.count == 1, "\(r.stderr)")
            #expect(r.stderr.contains("another segno run holds"))
            #expect(r.stderr.contains("pid \(getpid())"))
            #expect(try RunWorkspace.walk(ws["out"]).map(\.path) == [".segno", ".segno/state.sqlite.lock"], "nothing written")
            #expect(try ws.segno(["retry", "spec.yaml"]).exited(75))
            // Reading is fine while a run holds the state.
            let dry = try ws.segno(["run", "spec.yaml", "--dry-run"])
            #expect(dry.exited(0))
            #expect(dry.stdout.contains("dry run: 2 to run"))
            #expect(try ws.segno(["status", "spec.yaml"]).exited(0))
            _ = held
        }
        let r = try ws.segno(["run", "spec.yaml"])
        #expect(r.exited(0), "the lock is free again once its holder lets go")
        #expect(r.stdout.contains("2 done"))
    }

    @Test(.timeLimit(.minutes(20)))
    func twoConcurrentRunsOneRunsOneExits75() throws {
        let ws = try RunWorkspace()
        try ws.makeRecordings(count: 24, minSeconds: 2, maxSeconds: 3)
        try ws.writeSpec(Self.spec(parallel: 1))
        let first = try ws.start(["run", "spec.yaml", "--quiet"])
        // The database appears only after the lock is taken.
        #expect(Wait.until(timeout: 60) { FileManager.default.fileExists(atPath: ws["out/.segno/state.sqlite"]) || !first.isRunning })
        let second = try ws.segno(["run", "spec.yaml"])
        let firstWasRunning = first.isRunning
        #expect(second.exited(75), "\(second)")
        #expect(second.stderrLines.count == 1)
        #expect(second.stderr.contains("pid \(first.pid)"), "\(second.stderr)")
        let end = first.wait()
        #expect(end.exited(0), "\(end.stderr)")
        #expect(firstWasRunning, "the first run ended before the second started; the test proved nothing")
        let status = try ws.status()
        #expect(status.int("done") == 24)
    }

    // MARK: hostile input

    @Test(.timeLimit(.minutes(20)))
    func hostileNamesAreProcessedOrReportedAndNothingLeavesTheOutputRoot() throws {
        let ws = try RunWorkspace()
        let fm = FileManager.default
        let good = [
            "with spaces.wav", "한국어 녹음 파일.wav", "-leading-dash.wav", "--force.wav", "new\nline.wav", "tab\there.wav",
            String(repeating: "n", count: 196) + ".wav", String(repeating: "녹", count: 80) + ".wav",
            "quote'\"`$(touch pwned).wav", "back\\slash;rm -rf x.wav", "x.wav/inner.wav", "loop/ok.wav", "outside.wav",
        ]
        for (i, rel) in good.enumerated() where rel != "outside.wav" {
            try RunWorkspace.writeTone(to: ws["in/" + rel], rate: 8000, seconds: 0.3, frequency: 200 + Double(i) * 50)
        }
        try RunWorkspace.writeTone(to: ws["elsewhere/source.wav"], rate: 8000, seconds: 0.3)
        #expect(symlink(ws["elsewhere/source.wav"], ws["in/outside.wav"]) == 0)
        #expect(symlink("..", ws["in/loop/again"]) == 0)                      // a folder loop (followed: follow_links)
        #expect(symlink("self.wav", ws["in/self.wav"]) == 0)                  // a link to itself
        #expect(symlink("/nonexistent/segno/x.wav", ws["in/dangling.wav"]) == 0)
        #expect(mkfifo(ws["in/fifo.wav"], 0o644) == 0)                       // would block a reader forever
        try fm.createDirectory(atPath: ws["in/empty folder.wav"], withIntermediateDirectories: true)
        try Data("just text\n".utf8).write(to: URL(fileURLWithPath: ws["in/notes.wav"]))
        try Data("hidden text\n".utf8).write(to: URL(fileURLWithPath: ws["in/.wav"]))
        #expect(fm.createFile(atPath: ws["in/empty.wav"], contents: Data()))
        let tooLong = String(repeating: "a", count: 251) + ".wav"             // its .flac would be 256 bytes
        try RunWorkspace.writeTone(to: ws["in/" + tooLong], rate: 8000, seconds: 0.3)
        let notUTF8 = Array(ws["in/bad-"].utf8) + [0xFF] + Array(".wav".utf8) + [0]
        let fd = notUTF8.withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o644) }
        }
        #expect(fd >= 0)
        close(fd)

        try ws.writeSpec(Self.spec(input: ["follow_links: true"], stages: ["mix: mono", "encode: { path: \"{dir}/{stem}.flac\" }"]))
        let outside = try RunWorkspace.walk(ws.root).filter { !$0.path.hasPrefix("out") && !$0.path.hasPrefix(".logs") }

        let run = try ws.segno(["run", "spec.yaml", "--report", "r.json"])
        #expect(run.exited(1), "\(run)")

        // Every good recording is done, at the path its name gives.
        var expected: Set<String> = []
        for rel in good {
            let flac = (rel as NSString).deletingPathExtension + ".flac"
            expected.insert(flac)
            let info = try? SndFileDecoder(path: ws["out/" + flac]).info
            #expect(info?.frames == 2400, "\(rel)")
        }
        #expect(Set(try RunWorkspace.stamps(ws["out"]).keys) == expected)

        // The bad ones are per-file failures, each with a message naming it.
        let status = try ws.status(failed: true)
        #expect(status.int("done") == good.count)
        let failures = (status["failures"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
        #expect(Set(failures) == ["notes.wav", "empty.wav", tooLong, "bad-\\xff.wav"], "\(failures)")
        for f in status["failures"] as? [[String: Any]] ?? [] {
            let stem = ((f["path"] as? String ?? "?") as NSString).deletingPathExtension
            #expect((f["error"] as? String)?.contains(stem) == true, "\(f)")
        }
        // What the scanner cannot take is reported, one line each.
        // A name that is not UTF-8 is a recording like any other: this one is an empty file.
        for (name, words) in [("fifo.wav", "not a regular file"), ("dangling.wav", "broken symbolic link"), ("self.wav", "symbolic link loop"),
                              ("bad-\\xff.wav", "empty file")] {
            #expect(run.stderrLines.contains { $0.contains(name) && $0.contains(words) }, "\(name): \(run.stderr)")
        }
        for line in run.stderrLines { #expect(line.hasPrefix("segno: "), "one message, one line: \(line)") }
        let report = try ws.report("r.json")
        #expect(report.int("counts", "done") == good.count)
        #expect(report.int("counts", "failed") == 4)
        #expect((report["problems"] as? [String])?.count ?? 0 >= 3)

        // Nothing outside the output root changed, and no name was run as a command.
        let outsideAfter = try RunWorkspace.walk(ws.root).filter { !$0.path.hasPrefix("out") && !$0.path.hasPrefix(".logs") && $0.path != "r.json" }
        #expect(outsideAfter.map(\.path) == outside.map(\.path))
        #expect(outsideAfter.map(\.stamp) == outside.map(\.stamp))
        #expect(!fm.fileExists(atPath: ws["pwned"]))
        #expect(try RunWorkspace.walk(ws.root).allSatisfy { !$0.path.hasSuffix("pwned") })

        // The next cron run counts the known failures and does nothing.
        let again = try ws.segno(["run", "spec.yaml"])
        #expect(again.exited(0))
        #expect(again.stdout.contains("nothing to do: \(good.count) recordings up to date, 4 known failures"), "\(again.stdout)")
    }

    // MARK: signals and time

    @Test(.timeLimit(.minutes(20)), arguments: zip([SIGTERM, SIGINT], [Int32(143), Int32(130)]))
    func aSignalStopsTheRunWithConsistentState(signal: Int32, code: Int32) throws {
        let ws = try RunWorkspace()
        let inputs = try ws.makeRecordings(count: 24, minSeconds: 1.5, maxSeconds: 3)
        try ws.writeSpec(Self.spec(parallel: 1))
        let child = try ws.start(["run", "spec.yaml"])
        #expect(Wait.until(timeout: 60) { Self.finishedFiles(ws["out/flac"]) > 0 || !child.isRunning })
        child.send(signal)
        let exit = child.wait()
        #expect(exit.exited(code), "\(exit)")
        #expect(exit.stdout.contains("; interrupted, "), "\(exit.stdout)")
        #expect(try RunWorkspace.temporaries(ws["out"]).isEmpty, "abandoned work leaves no temporaries")
        let state = try Self.state(ws)
        let done = state.values.filter { $0.status == .done }.count
        #expect(done > 0 && done < inputs.count, "\(done) done")
        #expect(state.values.allSatisfy { $0.status == .done }, "an interrupted recording is not a failure")
        try Self.checkStateMatchesFiles(ws)
        #expect(try StateStore(path: ws["out/.segno/state.sqlite"]).recentRuns().first?.status == .interrupted)
        // Issue 22: "N left for the next run" is what the next plain run plans and does.
        let left = exit.stdout.components(separatedBy: "; interrupted, ").last?.split(separator: " ").first.flatMap { Int($0) }
        let dry = try ws.segno(["run", "spec.yaml", "--dry-run"])
        #expect(left != nil && dry.stdout.contains("dry run: \(left ?? -1) to run, \(done) up to date"), "\(exit.stdout) then \(dry.stdout)")

        let next = try ws.segno(["run", "spec.yaml"])
        #expect(next.exited(0), "\(next.stderr)")
        #expect(next.stdout.contains("\(inputs.count - done) done, 0 failed, \(done) up to date"), "\(next.stdout)")
        #expect(left == inputs.count - done, "\(exit.stdout)")
        #expect(try ws.status().int("done") == inputs.count)
    }

    @Test func maxTimeStopsTakingWorkAndExitsZero() throws {
        let ws = try RunWorkspace()
        try ws.makeRecordings(count: 6, maxSeconds: 1)
        try ws.writeSpec(Self.spec())
        let r = try ws.segno(["run", "spec.yaml", "--max-time", "0s", "--report", "r.json"])
        #expect(r.exited(0), "\(r)")
        #expect(r.stdout.contains("--max-time reached, 6 left for the next run"), "\(r.stdout)")
        #expect(Self.finishedFiles(ws["out"]) == 0)
        let report = try ws.report("r.json")
        #expect(report["stopped_by"] as? String == "max-time")
        #expect(report.int("counts", "not_started") == 6)
        #expect(try StateStore(path: ws["out/.segno/state.sqlite"]).recentRuns().first?.status == .timeUp)

        let bad = try ws.segno(["run", "spec.yaml", "--max-time", "soon"])
        #expect(bad.exited(2))
        let rest = try ws.segno(["run", "spec.yaml", "--max-time", "1h"])
        #expect(rest.exited(0))
        #expect(rest.stdout.contains("6 done"))
    }

    // MARK: report, retry, validate

    @Test func theReportIsJSONWithCountsAndEachRecording() throws {
        let ws = try RunWorkspace()
        let inputs = try ws.makeRecordings(count: 4, maxSeconds: 1)
        try Data("RIFF but not really".utf8).write(to: URL(fileURLWithPath: ws["in/broken.wav"]))
        try ws.writeSpec(Self.spec())
        // --report writes into a folder that exists (segno creates none for it: issue 31 item 11).
        try FileManager.default.createDirectory(atPath: ws["reports"], withIntermediateDirectories: true)
        let r = try ws.segno(["run", "spec.yaml", "--report", "reports/r.json"])
        #expect(r.exited(1))
        #expect(r.stderrLines.count == 1 && r.stderr.contains("broken.wav"), "\(r.stderr)")
        let report = try ws.report("reports/r.json")
        #expect(report["exit_code"] as? Int == 1)
        #expect(report["stopped_by"] as? String == "none")
        #expect(report["name"] as? String == "runtests")
        #expect((report["started"] as? String).flatMap { ISO8601DateFormatter().date(from: $0) } != nil)
        #expect(report.int("counts", "scanned") == 5)
        #expect(report.int("counts", "planned") == 5)
        #expect(report.int("counts", "done") == 4)
        #expect(report.int("counts", "failed") == 1)
        #expect(report.int("counts", "skipped") == 0)
        let recs = try #require(report["recordings"] as? [[String: Any]])
        #expect(recs.compactMap { $0["path"] as? String } == (["broken.wav"] + inputs).sorted())
        for rec in recs {
            if rec["path"] as? String == "broken.wav" {
                #expect(rec["status"] as? String == "failed")
                #expect((rec["error"] as? String)?.contains("broken.wav") == true)
                #expect(rec["attempts"] as? Int == 1)
            } else {
                #expect(rec["status"] as? String == "done")
                #expect(((rec["duration"] as? Double) ?? 0) >= 0.5)
                let outs = rec["outputs"] as? [String] ?? []
                #expect(outs.count == 2 && outs.allSatisfy { $0.hasPrefix(ws["out/"]) && FileManager.default.fileExists(atPath: $0) })
                #expect(rec["reasons"] as? [String] == ["encode:wav/{dir}/{stem}.wav: new", "encode:flac/{dir}/{stem}.flac: new"])
            }
        }
        let again = try ws.segno(["run", "spec.yaml", "--report", "reports/r.json"])
        #expect(again.exited(0), "a known failure is not news")
        let second = try ws.report("reports/r.json")
        #expect(second.int("counts", "planned") == 0)
        #expect(second.int("counts", "known_failures") == 1)
        #expect((second["recordings"] as? [Any])?.isEmpty == true)
        #expect(try RunWorkspace.temporaries(ws["reports"]).isEmpty)
    }

    @Test func retryRerunsOnlyTheFailedRecordings() throws {
        let ws = try RunWorkspace()
        let inputs = try ws.makeRecordings(count: 4, maxSeconds: 0.8)
        try RunWorkspace.writeTone(to: ws["in/held/up.wav"], rate: 8000, seconds: 0.4)
        try Data("not audio\n".utf8).write(to: URL(fileURLWithPath: ws["in/bad.wav"]))
        try ws.writeSpec(Self.spec(stages: ["encode: { path: \"{dir}/{stem}.flac\" }"]))
        // A file where held/up.flac's folder should be: an I/O failure that goes away.
        try FileManager.default.createDirectory(atPath: ws["out"], withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: ws["out/held"]))

        let first = try ws.segno(["run", "spec.yaml"])
        #expect(first.exited(1))
        let failed = try ws.status(failed: true)
        #expect(((failed["failures"] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String } == ["bad.wav", "held/up.wav"])

        // A plain run leaves the known failure (bad content) alone, and tries the blocked folder
        // again: the environment's failures are never parked.
        let plain = try ws.segno(["run", "spec.yaml"])
        #expect(plain.exited(1))
        #expect(plain.stdout.contains("0 done, 1 failed") && plain.stdout.contains("1 known failures"), "\(plain.stdout)")

        // After the folder is freed, retry reruns the failed recordings and nothing else.
        #expect(unlink(ws["out/held"]) == 0)
        let goodOutput = ((inputs[0] as NSString).deletingPathExtension) + ".flac"
        #expect(unlink(ws["out/" + goodOutput]) == 0)
        let retry = try ws.segno(["retry", "spec.yaml", "--report", "r.json"])
        #expect(retry.exited(1), "bad.wav still fails")
        let report = try ws.report("r.json")
        #expect(report.int("counts", "planned") == 2)
        #expect(report.int("counts", "done") == 1)
        #expect(report.int("counts", "failed") == 1)
        #expect(FileManager.default.fileExists(atPath: ws["out/held/up.flac"]))
        #expect(!FileManager.default.fileExists(atPath: ws["out/" + goodOutput]), "retry only reruns failures")
        let attempts = try ws.status(failed: true)["failures"] as? [[String: Any]] ?? []
        #expect(attempts.first?["attempts"] as? Int == 2, "\(attempts)")

        // Once the bad file is fixed, retry finishes it.
        try FileManager.default.removeItem(atPath: ws["in/bad.wav"])
        try RunWorkspace.writeTone(to: ws["in/bad.wav"], rate: 8000, seconds: 0.4)
        let fixed = try ws.segno(["retry", "spec.yaml"])
        #expect(fixed.exited(0), "\(fixed)")
        #expect(fixed.stdout.contains("1 done, 0 failed"), "\(fixed.stdout)")
        let status = try ws.status(failed: true)
        #expect(status.int("failed") == 0)
        #expect((status["failures"] as? [Any])?.isEmpty == true)

        // And the next plain run rebuilds what retry left alone.
        let rest = try ws.segno(["run", "spec.yaml", "--explain"])
        #expect(rest.stdoutLines.contains("run \(inputs[0]): encode: output missing: \(goodOutput)"), "\(rest.stdout)")
    }

    @Test func validateAndRunRefuseABadSpecWithItsLocation() throws {
        let ws = try RunWorkspace()
        try ws.makeRecordings(count: 1, maxSeconds: 0.6)
        try ws.writeSpec(Self.spec(stages: ["mix: mono", "resample: 500", "encode: { path: \"{stem}.flac\" }"]), name: "bad.yaml")
        for command in ["validate", "run", "retry", "status"] {
            let r = try ws.segno([command, "bad.yaml"])
            #expect(r.exited(2), "\(command): \(r)")
            #expect(r.stderrLines == ["segno: bad.yaml:12:15: stages[1].resample: 500 Hz is out of range 1000…384000 Hz"], "\(command): \(r.stderr)")
            #expect(r.stdout.isEmpty)
        }
        #expect(!FileManager.default.fileExists(atPath: ws["out"]), "a bad spec writes nothing")
        let yaml = try ws.segno(["validate", "missing.yaml"])
        #expect(yaml.exited(2))
        #expect(yaml.stderr.contains("missing.yaml"))

        try ws.writeSpec(Self.spec())
        let good = try ws.segno(["validate", "spec.yaml"])
        #expect(good.exited(0))
        #expect(good.stdout.contains("stages:"))
        for stage in ["mix", "encode", "resample"] { #expect(good.stdout.contains(stage)) }
        #expect(good.stdout.contains("rate=16000"))
        #expect(!FileManager.default.fileExists(atPath: ws["out"]), "validate writes nothing")
    }
}
