import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Data safety and the failure model (issue "Never lose a recording"): segno never writes over
/// an input or a file it did not write, never takes its own outputs as input, and a failure the
/// environment caused is retried by the next plain run, never parked.
@Suite struct SafetyTests {
    static func spec(input: String = "root: in, settle: 0s", output: String = "out", state: String? = nil,
                     stages: [String], retries: Int = 0) -> String {
        "version: 1\ninput: { \(input) }\noutput: { root: \(output) }\n" + (state.map { "state: \($0)\n" } ?? "")
            + "parallel: 2\nretries: \(retries)\nstages:\n" + stages.map { "  - \($0)\n" }.joined()
    }

    static func failures(_ ws: RunWorkspace, spec: String = "spec.yaml") throws -> [[String: Any]] {
        try ws.status(spec, failed: true)["failures"] as? [[String: Any]] ?? []
    }

    // MARK: segno waveform

    @Test func waveformNeverWritesOverItsInputOrUnderAnAudioName() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["victim.wav"], seconds: 0.5)
        let before = try Data(contentsOf: URL(fileURLWithPath: ws["victim.wav"]))
        for (out, message) in [("victim.wav", "audio extension"), ("./victim.wav", "audio extension"),
                               ("x.wav", "audio extension"), ("x.txt", "cannot tell the format")] {
            let r = try ws.segno(["waveform", "victim.wav", "-o", out])
            #expect(r.exited(2), "\(out): \(r.status) \(r.stderr)")
            #expect(r.stderr.contains(message), "\(out): \(r.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: ws["victim.wav"])) == before)
        #expect(access(ws["x.wav"], F_OK) != 0 && access(ws["x.txt"], F_OK) != 0)
        // A name with no waveform extension is fine once the format is said.
        let named = try ws.segno(["waveform", "victim.wav", "-o", "x.txt", "--format", "json"])
        #expect(named.exited(0), "\(named.stderr)")
        #expect(try WaveformProbe.isWaveformJSON(ws["x.txt"]))
        // The same file under another spelling, through a link: refused at run time.
        symlink(ws["victim.wav"], ws["alias.json"])
        let alias = try ws.segno(["waveform", "victim.wav", "-o", "alias.json"])
        #expect(alias.exited(1), "\(alias.stderr)")
        #expect(alias.stderr.contains("is the input file"), "\(alias.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: ws["victim.wav"])) == before)
    }

    @Test func waveformOnAFolderKeepsSidecarsItDidNotWrite() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], seconds: 0.5)
        try RunWorkspace.writeTone(to: ws["in/b.wav"], seconds: 0.5, frequency: 660)
        let sidecar = Data(#"{"title":"my notes","duration":0.5}"#.utf8)
        try sidecar.write(to: URL(fileURLWithPath: ws["in/a.json"]))
        let first = try ws.segno(["waveform", "in"])
        #expect(first.exited(1), "\(first.stderr)")
        #expect(first.stderr.contains("a.json") && first.stderr.contains("not json waveform data"), "\(first.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: ws["in/a.json"])) == sidecar, "the sidecar is untouched")
        #expect(try WaveformProbe.isWaveformJSON(ws["in/b.json"]))
        // Waveform data of the same kind is replaced without asking; the sidecar only with --overwrite.
        let again = try ws.segno(["waveform", "in", "--pixels-per-second", "10"])
        #expect(again.exited(1))
        #expect(try WaveformProbe.isWaveformJSON(ws["in/b.json"]))
        let forced = try ws.segno(["waveform", "in", "--overwrite"])
        #expect(forced.exited(0), "\(forced.stderr)")
        #expect(try WaveformProbe.isWaveformJSON(ws["in/a.json"]))
        #expect(try RunWorkspace.temporaries(ws.root).isEmpty)
    }

    // MARK: layouts

    @Test func outputsInsideTheScannedTreeAreRefusedAtValidation() throws {
        let ws = try RunWorkspace()
        // output.root = input.root and the MP3s would match include.
        try ws.writeSpec(Self.spec(input: "root: in, include: [\"**/*.{wav,mp3}\"]", output: "in",
                                   stages: ["encode: { path: \"{dir}/{stem}.mp3\" }"]))
        let same = try ws.segno(["validate", "spec.yaml"])
        #expect(same.exited(2))
        #expect(same.stderr.contains("stages[0]") && same.stderr.contains("inside input.root"), "\(same.stderr)")
        // Input inside output, an encode writing into the input folder.
        try ws.writeSpec(Self.spec(input: "root: data/in", output: "data", stages: ["encode: { path: \"in/{stem}.flac\" }"]))
        let above = try ws.segno(["validate", "spec.yaml"])
        #expect(above.exited(2), "\(above.stderr)")
        // The same folder but outputs include does not take: fine.
        try ws.writeSpec(Self.spec(input: "root: in, include: [\"**/*.wav\"]", output: "in", stages: ["encode: { path: \"{dir}/{stem}.flac\" }"]))
        #expect(try ws.segno(["validate", "spec.yaml"]).exited(0))
        // An output root inside the input root is skipped by the scan: fine.
        try ws.writeSpec(Self.spec(output: "in/processed", stages: ["encode: { path: \"{dir}/{stem}.wav\" }"]))
        #expect(try ws.segno(["validate", "spec.yaml"]).exited(0))
        // A file:// upload copying WAVs into the input folder: refused at the upload.
        try ws.writeSpec(Self.spec(stages: ["encode: { path: \"{stem}.wav\" }", "upload: { to: \"file://\(ws["in"])/copies\" }"]))
        let copies = try ws.segno(["validate", "spec.yaml"])
        #expect(copies.exited(2), "\(copies.stderr)")
        #expect(copies.stderr.contains("stages[1].upload.to") && copies.stderr.contains("copies \"copies/memo.wav\" into input.root"), "\(copies.stderr)")
    }

    @Test func aRecordedOutputReachedThroughALinkIsNeverTakenAsInput() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/memo.wav"], seconds: 0.5)
        try FileManager.default.createDirectory(atPath: ws["out"], withIntermediateDirectories: true)
        symlink("../out", ws["in/link"])
        try ws.writeSpec(Self.spec(input: "root: in, settle: 0s, follow_links: true", stages: ["encode: { path: \"{dir}/{stem}.wav\" }"]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        let second = try ws.segno(["run", "spec.yaml"])
        #expect(second.exited(0), "\(second.stderr)")
        #expect(second.stdout.contains("nothing to do: 1 recordings up to date"), "\(second.stdout)")
        #expect(access(ws["out/link/memo.wav"], F_OK) != 0, "the output was not processed as a recording")
    }

    // MARK: the failure model

    @Test func aTapThatCannotHandleARecordingFailsAloneAndIsParked() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/eight.wav"], channels: 8, seconds: 0.5)
        try RunWorkspace.writeTone(to: ws["in/mono.wav"], seconds: 0.5)
        try ws.writeSpec(Self.spec(stages: ["encode: { path: \"{stem}.flac\" }", "encode: { path: \"{stem}.mp3\" }",
                                            "waveform: { path: \"{stem}.json\" }"]))
        let first = try ws.segno(["run", "spec.yaml"])
        #expect(first.exited(1), "\(first.stderr)")
        #expect(first.stderr.contains("at most 2 channels"), "\(first.stderr)")
        for f in ["eight.flac", "eight.json", "mono.flac", "mono.mp3", "mono.json"] { #expect(access(ws["out/" + f], F_OK) == 0, "\(f)") }
        #expect(access(ws["out/eight.mp3"], F_OK) != 0)
        let failures = try Self.failures(ws)
        #expect(failures.count == 1)
        #expect(failures.first?["status"] as? String == "partial")
        #expect(failures.first?["class"] as? String == "spec")
        let flac = RunWorkspace.stamp(ws["out/eight.flac"])
        // A spec failure is known until the spec changes: the next run leaves it (exit 0).
        let second = try ws.segno(["run", "spec.yaml"])
        #expect(second.exited(0), "\(second.stdout) \(second.stderr)")
        #expect(second.stdout.contains("1 known failures"), "\(second.stdout)")
        #expect(RunWorkspace.stamp(ws["out/eight.flac"]) == flac, "finished taps are not redone")
        let partly = try ws.segno(["status", "spec.yaml", "--failed"])
        #expect(partly.stdout.contains("partly done") && partly.stdout.contains("[spec;"), "\(partly.stdout)")
    }

    @Test func aMissingProgramIsRetriedByTheNextRunNotParked() throws {
        guard let ffmpeg = CLI.find("ffmpeg") else { Issue.record("ffmpeg is not installed"); return }
        let ws = try RunWorkspace()
        try FileManager.default.createDirectory(atPath: ws["in"], withIntermediateDirectories: true)
        let made = try CLI.run(ffmpeg, ["-loglevel", "error", "-f", "lavfi", "-i", "sine=f=440:d=1", "-c:a", "aac", ws["in/memo.m4a"]])
        #expect(made.status == 0, "\(made.stderr)")
        try RunWorkspace.writeTone(to: ws["in/plain.wav"], seconds: 0.5)
        try ws.writeSpec(Self.spec(stages: ["encode: { path: \"{stem}.flac\" }"]))
        // A PATH without ffmpeg or ffprobe.
        let bare = ws["bin"]
        try FileManager.default.createDirectory(atPath: bare, withIntermediateDirectories: true)
        let noFFmpeg = ["PATH": bare]
        let first = try ws.segno(["run", "spec.yaml"], environment: noFFmpeg)
        #expect(first.exited(1), "\(first.stderr)")
        #expect(first.stderr.contains("needs ffmpeg"), "\(first.stderr)")
        #expect(try Self.failures(ws).first?["class"] as? String == "environment")
        // Still missing: tried again (not a known failure), and fails again.
        let second = try ws.segno(["run", "spec.yaml"], environment: noFFmpeg)
        #expect(second.exited(1), "\(second.stdout) \(second.stderr)")
        #expect(!second.stdout.contains("known failures"), "\(second.stdout)")
        // Back on PATH: the plain run completes.
        let third = try ws.segno(["run", "spec.yaml"])
        #expect(third.exited(0), "\(third.stderr)")
        #expect(access(ws["out/memo.flac"], F_OK) == 0)
        #expect(try Self.failures(ws).isEmpty)
    }

    @Test func aFailedUploadKeepsTheTapsAndTheNextRunUploadsWithoutDecoding() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/memo.wav"], seconds: 0.5)
        // The target's folder cannot be created: a file stands where it should be.
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: ws["archive"]))
        try ws.writeSpec(Self.spec(stages: ["encode: { path: \"{stem}.flac\" }", "upload: { to: \"file://\(ws["archive"])/{dir}\" }"]))
        let first = try ws.segno(["run", "spec.yaml"])
        #expect(first.exited(1), "\(first.stderr)")
        #expect(first.stderr.contains("cannot create folder"), "\(first.stderr)")
        #expect(!first.stderr.contains("NSCocoaErrorDomain"), "\(first.stderr)")
        let failures = try Self.failures(ws)
        #expect(failures.first?["class"] as? String == "environment")
        #expect(failures.first?["status"] as? String == "partial")
        let flac = RunWorkspace.stamp(ws["out/memo.flac"])
        // Still broken: retried by the next plain run (never a known failure).
        let second = try ws.segno(["run", "spec.yaml", "--explain"])
        #expect(second.exited(1))
        #expect(second.stdout.contains("upload: new") && !second.stdout.contains("encode:"), "\(second.stdout)")
        // Fixed: the upload goes, the FLAC is not made again.
        try FileManager.default.removeItem(atPath: ws["archive"])
        let third = try ws.segno(["run", "spec.yaml", "--report", "r.json"])
        #expect(third.exited(0), "\(third.stderr)")
        #expect(access(ws["archive/memo.flac"], F_OK) == 0)
        #expect(RunWorkspace.stamp(ws["out/memo.flac"]) == flac)
        let reasons = (try ws.report("r.json")["recordings"] as? [[String: Any]])?.first?["reasons"] as? [String]
        #expect(reasons == ["upload: new"], "\(String(describing: reasons))")
    }

    @Test func anUnreachableObjectStoreIsRetriedByTheNextRunWithoutDecoding() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/memo.wav"], seconds: 0.5)
        // Nothing listens on port 9 of 127.0.0.1: every request is refused, as when the store is down.
        try ws.writeSpec(Self.spec(stages: ["encode: { path: \"{stem}.flac\" }",
                                            "upload: { to: \"s3://segno-outage/\", endpoint: \"${OUTAGE_ENDPOINT:-http://127.0.0.1:9}\" }"], retries: 1))
        let env = ["OUTAGE_ENDPOINT": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
                   "AWS_MAX_ATTEMPTS": "1"]
        let first = try ws.segno(["run", "spec.yaml"], environment: env)
        #expect(first.exited(1), "\(first.stderr)")
        let failures = try Self.failures(ws)
        #expect(["transient", "environment"].contains(failures.first?["class"] as? String ?? ""), "\(failures)")
        let second = try ws.segno(["run", "spec.yaml", "--explain"], environment: env)
        #expect(second.exited(1))
        #expect(second.stdout.contains("upload: new") && !second.stdout.contains("encode:"), "\(second.stdout)")
        #expect(!second.stdout.contains("known failures"), "\(second.stdout)")
    }

    @Test func anOutputNameTooLongIsASpecFailureSaidOnce() throws {
        let ws = try RunWorkspace()
        let stem = String(repeating: "n", count: 240)
        try RunWorkspace.writeTone(to: ws["in/\(stem).wav"], seconds: 0.5)
        try ws.writeSpec(Self.spec(stages: ["encode: { path: \"{stem}-processed-version.flac\" }"], retries: 2))
        let r = try ws.segno(["run", "spec.yaml", "--report", "r.json"])
        #expect(r.exited(1))
        #expect(r.stderr.contains("output name too long (263 bytes, limit 255)"), "\(r.stderr)")
        let rec = (try ws.report("r.json")["recordings"] as? [[String: Any]])?.first
        #expect(rec?["attempts"] as? Int == 1, "not retried: \(String(describing: rec))")
        #expect(try Self.failures(ws).first?["class"] as? String == "spec")
    }

    /// A Latin-1 name from an old Windows share (`caf\xe9.wav`: byte 0xE9, not UTF-8) is processed
    /// like any other: scanned, kept in the state, its outputs named with the same bytes (listed
    /// with readdir, read by SoX); `info`, `convert` and `waveform` take it on the command line
    /// (through sh and printf, as raw bytes); messages write the byte as `\xe9`.
    @Test func aNameThatIsNotUTF8IsProcessedAndKeepsItsBytes() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/ok.wav"], seconds: 0.5)
        try RunWorkspace.writeTone(to: ws["latin.wav"], seconds: 0.5)
        let caf: [UInt8] = Array("caf".utf8) + [0xE9]
        let name: [UInt8] = Array(ws["in/"].utf8) + caf + Array(".wav".utf8) + [0]
        let renamed = name.withUnsafeBufferPointer { rename(ws["latin.wav"], UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self)) }
        #expect(renamed == 0)
        try ws.writeSpec(Self.spec(stages: ["encode: { path: \"{stem}.flac\" }", "waveform: { path: \"{stem}.json\" }"]))
        let first = try ws.segno(["run", "spec.yaml"])
        #expect(first.exited(0), "\(first.stderr)")
        #expect(first.stderr.isEmpty, "TagLib and every reader get the name's bytes: \(first.stderr)")
        #expect(Set(Self.names(ws["out"])).isSuperset(of: [caf + Array(".flac".utf8), caf + Array(".json".utf8), Array("ok.flac".utf8)]),
                "\(Self.names(ws["out"]).map { String(decoding: $0, as: UTF8.self) })")
        // SoX, given the same bytes, reads 0.5 s at 16 kHz.
        #expect(try Self.sh(#"sox --i -s "$(printf 'out/caf\351.flac')""#, in: ws).stdout.hasPrefix("8000"))
        let second = try ws.segno(["run", "spec.yaml"])
        #expect(second.exited(0) && second.stdout.contains("2 recordings up to date"), "\(second.stdout)")
        let status = try ws.segno(["status", "spec.yaml"])
        #expect(status.stdout.contains("recordings 2: 2 done"), "\(status.stdout)")
        // What segno writes for people and programs escapes the byte, and stays valid JSON.
        #expect(try ws.segno(["run", "spec.yaml", "--force=waveform", "--report", "run.json"]).exited(0))
        let outputs = try ws.segno(["outputs", "spec.yaml", "--json"])
        let report = try ws.segno(["report", "spec.yaml", "--json"])
        _ = try ws.segno(["report", "spec.yaml", "-o", "report.html"])
        let page = try String(contentsOfFile: ws["report.html"], encoding: .utf8)
        let written = try String(contentsOfFile: ws["run.json"], encoding: .utf8)
        for (what, text) in [("run --report", written), ("outputs --json", outputs.stdout), ("report --json", report.stdout), ("report page", page)] {
            #expect(text.contains(#"caf\\xe9"#), "\(what) escapes the byte: \(text.prefix(400))")
            #expect(!text.unicodeScalars.contains { $0.value >= 0x10FF80 && $0.value <= 0x10FFFF }, "\(what) holds no mapped byte")
        }
        for json in [written, outputs.stdout, report.stdout] {
            #expect((try? JSONSerialization.jsonObject(with: Data(json.utf8))) != nil, "valid JSON: \(json.prefix(200))")
        }
        // The page links the output by its own bytes (%E9), not by the mapped character.
        #expect(page.contains("caf%E9.flac"), "\(page.prefix(400))")

        let info = try Self.sh(#"segno info "$(printf 'in/caf\351.wav')""#, in: ws)
        #expect(info.status == 0 && info.stdout.hasPrefix("in/caf\\xe9.wav: WAV PCM_16, 16000 Hz, 1 ch, 8000 frames"), "\(info.stdout) \(info.stderr)")
        let made = try Self.sh(#"segno convert "$(printf 'in/caf\351.wav')" "$(printf 'caf\351.mp3')" && segno waveform -i "$(printf 'in/caf\351.wav')" -o "$(printf 'caf\351.dat')""#, in: ws)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(Set(Self.names(ws.root)).isSuperset(of: [caf + Array(".mp3".utf8), caf + Array(".dat".utf8)]))
        let missing = try Self.sh(#"segno info "$(printf 'gone\351.wav')""#, in: ws)
        #expect(missing.status == 1 && missing.stderr.contains("gone\\xe9.wav: no such file"), "\(missing.stderr)")
    }

    /// The names in `dir`, as readdir gives their bytes.
    static func names(_ dir: String) -> [[UInt8]] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var out: [[UInt8]] = []
        while let e = readdir(d) {
            out.append(withUnsafeBytes(of: e.pointee.d_name) { Array($0.prefix { $0 != 0 }) })
        }
        return out
    }

    /// Runs a shell command in the workspace with `segno` on PATH.
    static func sh(_ script: String, in ws: RunWorkspace) throws -> ProcessResult {
        let bin = (try CLI.segnoPath() as NSString).deletingLastPathComponent
        return try CLI.run("/bin/sh", ["-c", "cd \"$0\" && PATH=\"$1:$PATH\" && " + script, ws.root, bin])
    }

    // MARK: prune

    @Test func pruneNeverTakesMoreThanItsLimitWithoutForce() throws {
        let ws = try RunWorkspace()
        let files = try ws.makeRecordings(count: 10, maxSeconds: 0.6)
        try ws.writeSpec(Self.spec(stages: ["encode: { path: \"{dir}/{stem}.flac\" }", "upload: { to: \"file://\(ws["archive"])/{dir}\", prune: true }"]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        for f in files.prefix(6) { try FileManager.default.removeItem(atPath: ws["in/" + f]) }
        let dry = try ws.segno(["run", "spec.yaml", "--dry-run"])
        #expect(!dry.stdout.contains("prune "), "dry run lists what the real run does: \(dry.stdout)")
        #expect(dry.stderr.contains("more than prune_limit"), "\(dry.stderr)")
        let held = try ws.segno(["run", "spec.yaml"])
        #expect(held.exited(0), "\(held.stderr)")
        #expect(held.stderr.contains("--force=prune"), "\(held.stderr)")
        #expect(try RunWorkspace.outputs(ws["archive"]).count == 10, "nothing deleted")
        let forced = try ws.segno(["run", "spec.yaml", "--force=prune", "--report", "r.json"])
        #expect(forced.exited(0), "\(forced.stderr)")
        #expect((try ws.report("r.json")["pruned"] as? [String])?.count == 6)
        #expect(try RunWorkspace.outputs(ws["archive"]).count == 4)
        #expect((try ws.status()["pruned"] as? [[String: Any]])?.count == 6)
        // Within the limit (one of four, with prune_limit 25%): pruned without asking.
        try ws.writeSpec(Self.spec(stages: ["encode: { path: \"{dir}/{stem}.flac\" }",
                                            "upload: { to: \"file://\(ws["archive"])/{dir}\", prune: true, prune_limit: 25% }"]))
        try FileManager.default.removeItem(atPath: ws["in/" + files[9]])
        let small = try ws.segno(["run", "spec.yaml"])
        #expect(small.exited(0))
        #expect(small.stdout.contains("1 pruned"), "\(small.stdout)")
    }

    // MARK: the state database

    @Test func aDamagedDatabaseStopsTheRunAndRebuildAdoptsTheOutputs() throws {
        let ws = try RunWorkspace()
        try ws.makeRecordings(count: 4, maxSeconds: 0.6)
        try ws.writeSpec(Self.spec(stages: ["encode: { path: \"{dir}/{stem}.flac\" }", "waveform: { path: \"{dir}/{stem}.json\" }",
                                            "upload: { to: \"file://\(ws["archive"])/{dir}\", overwrite: false }"]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        let before = try RunWorkspace.stamps(ws["out"]).filter { !$0.key.hasPrefix(".segno") }
        // The file holds garbage (a bad disk block, a half-copied backup); no WAL to fall back on.
        let db = ws["out/.segno/state.sqlite"]
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: db))
        for suffix in ["-wal", "-shm"] { unlink(db + suffix) }
        let damaged = try ws.segno(["run", "spec.yaml"])
        #expect(damaged.exited(65), "\(damaged.status) \(damaged.stderr)")
        #expect(damaged.stderr.split(separator: "\n").count == 1, "one line: \(damaged.stderr)")
        #expect(damaged.stderr.contains("is damaged") && damaged.stderr.contains("segno state rebuild"), "\(damaged.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: ws["out/.segno"]).contains { $0.hasPrefix("state.sqlite.damaged-") })
        // Moved aside: the next run does not start from nothing either.
        let missing = try ws.segno(["run", "spec.yaml"])
        #expect(missing.exited(65), "\(missing.stderr)")
        #expect(missing.stderr.contains("is missing"), "\(missing.stderr)")
        let rebuild = try ws.segno(["state", "rebuild", "spec.yaml"])
        #expect(rebuild.exited(0), "\(rebuild.stderr)")
        #expect(rebuild.stdout.contains("4 of 4 recordings adopted (8 outputs, 4 uploads)"), "\(rebuild.stdout)")
        let after = try ws.segno(["run", "spec.yaml"])
        #expect(after.exited(0), "\(after.stderr)")
        #expect(after.stdout.contains("nothing to do: 4 recordings up to date"), "\(after.stdout)")
        #expect(try RunWorkspace.stamps(ws["out"]).filter { !$0.key.hasPrefix(".segno") } == before, "nothing rewritten")
    }

    // MARK: the file system

    /// A small tmpfs holds the outputs: a full disk and a read-only remount fail the recordings
    /// they touch with one clear line; once space is back (or the volume writable), the next plain
    /// run completes everything and nothing is parked.
    @Test func aFullDiskAndAReadOnlyVolumeAreRetriedByTheNextRun() throws {
        let ws = try RunWorkspace()
        let mountPoint = ws["out"]
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let mounted = try CLI.run("/bin/mount", ["-t", "tmpfs", "-o", "size=3m", "tmpfs", mountPoint])
        guard mounted.status == 0 else {
            Issue.record("cannot mount a tmpfs here (needs root): \(mounted.stderr)")
            return
        }
        defer { _ = try? CLI.run("/bin/umount", ["-l", mountPoint]) }
        for i in 0..<8 { try RunWorkspace.writeTone(to: ws["in/memo \(i).wav"], rate: 48000, channels: 2, seconds: 4, frequency: 200 + Double(i) * 50) }
        // The state lives off the small volume: this test is about the outputs.
        try ws.writeSpec(Self.spec(state: "state/state.sqlite", stages: ["encode: { path: \"{stem}.wav\" }"], retries: 2))
        let full = try ws.segno(["run", "spec.yaml", "--report", "r1.json"])
        #expect(full.exited(1), "\(full.stderr)")
        #expect(full.stderr.contains("No space left on device"), "\(full.stderr)")
        let report = try ws.report("r1.json")
        let failed = (report["recordings"] as? [[String: Any]] ?? []).filter { $0["status"] as? String == "failed" }
        #expect(!failed.isEmpty && failed.allSatisfy { $0["attempts"] as? Int == 1 }, "a full disk is not retried within the run")
        #expect(try Self.failures(ws).allSatisfy { $0["class"] as? String == "environment" })
        #expect(try RunWorkspace.temporaries(mountPoint).isEmpty)
        #expect(try CLI.run("/bin/mount", ["-o", "remount,size=64m", mountPoint]).status == 0)
        let recovered = try ws.segno(["run", "spec.yaml"])
        #expect(recovered.exited(0), "\(recovered.stderr)")
        #expect(!recovered.stdout.contains("known failures"), "\(recovered.stdout)")
        #expect(try Self.failures(ws).isEmpty)
        // Read-only: a changed source cannot be written; after the remount the next run does it.
        try RunWorkspace.writeTone(to: ws["in/memo 0.wav"], rate: 48000, channels: 2, seconds: 1, frequency: 999)
        #expect(try CLI.run("/bin/mount", ["-o", "remount,ro", mountPoint]).status == 0)
        let readOnly = try ws.segno(["run", "spec.yaml"])
        #expect(readOnly.status != 0)
        #expect(readOnly.stderr.contains("Read-only file system"), "\(readOnly.stderr)")
        #expect(try CLI.run("/bin/mount", ["-o", "remount,rw", mountPoint]).status == 0)
        let writable = try ws.segno(["run", "spec.yaml"])
        #expect(writable.exited(0), "\(writable.stderr)")
        #expect(try Self.failures(ws).isEmpty)
    }

    @Test func aWAVOfUnknownLengthReadsToTheEnd() throws {
        guard let ffmpeg = CLI.find("ffmpeg") else { Issue.record("ffmpeg is not installed"); return }
        let ws = try RunWorkspace()
        // What ffmpeg writes to a pipe: RIFF and data sizes 0xFFFFFFFF.
        let r = try CLI.run("/bin/sh", ["-c", "\"$0\" -loglevel error -f lavfi -i sine=f=440:d=1 -ac 1 -ar 16000 -f wav pipe: > \"$1\"", ffmpeg, ws["pipe.wav"]])
        #expect(r.status == 0, "\(r.stderr)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ws["pipe.wav"])).prefix(8))
        #expect(bytes[4..<8].allSatisfy { $0 == 0xFF }, "the test file has the unknown-length size")
        let info = try ws.segno(["info", "--json", "pipe.wav"])
        #expect(info.exited(0), "\(info.stdout)")
        #expect(info.stdout.contains("\"frames\":16000"), "\(info.stdout)")
    }
}

/// Reads outputs back for the safety tests.
enum WaveformProbe {
    /// True when the file parses as audiowaveform JSON.
    static func isWaveformJSON(_ path: String) throws -> Bool {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
        return object?["samples_per_pixel"] != nil && object?["data"] is [Any]
    }
}

/// Readers change nothing: `status` and `run --dry-run` open the state read-only, never migrate
/// it, and create no WAL or SHM file.
@Suite struct ReadOnlyStateTests {
    @Test func statusAndDryRunLeaveTheStateFolderByteIdentical() throws {
        let ws = try RunWorkspace()
        try ws.makeRecordings(count: 3, maxSeconds: 0.6)
        try ws.writeSpec(SafetyTests.spec(stages: ["encode: { path: \"{dir}/{stem}.flac\" }"]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        func snapshot() throws -> [String: Data] {
            var out: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: ws["out/.segno"]) {
                out[name] = try Data(contentsOf: URL(fileURLWithPath: ws["out/.segno/" + name]))
            }
            return out
        }
        let before = try snapshot()
        #expect(!before.keys.contains { $0.hasSuffix("-wal") || $0.hasSuffix("-shm") }, "\(before.keys)")
        try RunWorkspace.writeTone(to: ws["in/new.wav"], seconds: 0.5)
        let status = try ws.segno(["status", "spec.yaml", "--failed"])
        #expect(status.exited(0), "\(status.stderr)")
        #expect(status.stdout.contains("recordings 3: 3 done"), "\(status.stdout)")
        let dry = try ws.segno(["run", "spec.yaml", "--dry-run"])
        #expect(dry.exited(0), "\(dry.stderr)")
        #expect(dry.stdout.contains("dry run: 1 to run, 3 up to date"), "\(dry.stdout)")
        #expect(try snapshot() == before, "the state folder is byte-identical")
    }
}
