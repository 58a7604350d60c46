import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoTestSupport
import Testing

/// Issue 31: what a new user met in the first hour — exit codes, hints that name what exists,
/// numbers that agree, and no false alarms.
@Suite struct FirstHourTests {
    /// Item 11: `report -o` (and `run --report`) into a folder that does not exist is a usage
    /// error (exit 2) that creates nothing, as `convert` and `waveform -o` refuse it.
    @Test func reportIntoAMissingFolderIsRefused() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], rate: 16000, seconds: 0.5)
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }"]))
        let run = try ws.segno(["run", "spec.yaml", "--report", ws["typo/run.json"]])
        #expect(run.exited(2) && run.stderr.contains("typo"), "\(run.status) \(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws["typo"]))
        #expect(!FileManager.default.fileExists(atPath: ws["out/a.flac"]), "refused before any work")
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        let report = try ws.segno(["report", "spec.yaml", "-o", ws["typo/deeper/r.html"]])
        #expect(report.exited(2) && report.stderr.contains("typo"), "\(report.status) \(report.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws["typo"]))
        // Into a folder that exists, it writes.
        let written = try ws.segno(["report", "spec.yaml", "-o", ws["r.html"]])
        #expect(written.exited(0) && FileManager.default.fileExists(atPath: ws["r.html"]), "\(written.stderr)")
    }
}

/// Item 9: every hint names an option the command it comes from accepts.
extension FirstHourTests {
    /// The long options (`--name`) a message names.
    static func optionsNamed(in text: String) -> Set<String> {
        let regex = try! NSRegularExpression(pattern: "(?<![A-Za-z0-9-])--[a-z][a-z0-9-]*")
        let range = NSRange(text.startIndex..., in: text)
        return Set(regex.matches(in: text, range: range).compactMap { Range($0.range, in: text).map { String(text[$0]) } })
    }

    /// The long options `segno COMMAND --help` lists.
    static func accepted(by command: String) throws -> Set<String> {
        optionsNamed(in: try CLI.segno([command, "--help"]).stdout)
    }

    /// A 2 s WAV cut to 60 % of its bytes (its header still claims 2 s).
    static func cutWAV(_ ws: RunWorkspace, _ rel: String) throws {
        try RunWorkspace.writeTone(to: ws["whole.wav"], rate: 16000, seconds: 2)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: ws["whole.wav"]))
        try bytes.prefix(bytes.count * 6 / 10).write(to: URL(fileURLWithPath: ws[rel]))
    }

    @Test func salvageHintsNameWhatEachCommandTakes() throws {
        let ws = try RunWorkspace()
        try Self.cutWAV(ws, "in/cut.wav")
        // convert and waveform take --salvage, and say so.
        for args in [["convert", ws["in/cut.wav"], ws["cut.flac"]], ["waveform", ws["in/cut.wav"], "-o", ws["cut.json"]]] {
            let r = try ws.segno(args)
            #expect(r.exited(1) && r.stderr.contains("--salvage"), "\(args): \(r.stderr)")
            #expect(Self.optionsNamed(in: r.stderr).isSubset(of: try Self.accepted(by: args[0])), "\(args): \(r.stderr)")
        }
        // info takes neither: its hints name the commands that do, with the option after them.
        for json in [false, true] {
            let info = try ws.segno(["info", ws["in/cut.wav"]] + (json ? ["--json"] : []))
            let text = info.stdout + info.stderr
            #expect(info.exited(1) && text.contains("salvage"), "\(text)")
            let bare = text.components(separatedBy: "--salvage").dropLast()
                .filter { !$0.hasSuffix("segno convert ") && !$0.hasSuffix("segno waveform ") }
            #expect(bare.isEmpty, "info names --salvage without a command that takes it: \(text)")
            #expect(Self.optionsNamed(in: text.replacingOccurrences(of: "segno convert --salvage", with: "")
                                       .replacingOccurrences(of: "segno waveform --salvage", with: "")).isSubset(of: try Self.accepted(by: "info")), "\(text)")
        }
        // A run names the spec's key, and so does what status keeps.
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }"]))
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(1) && run.stderr.contains("damaged: salvage"), "\(run.stderr)")
        #expect(!run.stderr.contains("--salvage"), "\(run.stderr)")
        let status = try ws.segno(["status", "spec.yaml", "--failed"])
        #expect(status.stdout.contains("damaged: salvage") && !status.stdout.contains("--salvage"), "\(status.stdout)")
    }

    @Test func waveformAndConvertHintsNameRealOptions() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/b.wav"], rate: 16000, seconds: 1)
        try RunWorkspace.writeTone(to: ws["in/b.flac"], rate: 16000, seconds: 1, frequency: 300)
        // Two inputs for one output, with --out-dir given: the hint is one that works.
        try FileManager.default.createDirectory(atPath: ws["peaks"], withIntermediateDirectories: true)
        let collide = try ws.segno(["waveform", ws["in"], "--out-dir", ws["peaks"]])
        #expect(collide.exited(1) && collide.stderr.contains("b.json"), "\(collide.stderr)")
        #expect(!collide.stderr.contains("layout"), "\(collide.stderr)")
        #expect(Self.optionsNamed(in: collide.stderr).isSubset(of: try Self.accepted(by: "waveform")), "\(collide.stderr)")
        let line = try #require(collide.stderrLines.first { $0.contains("own name") }, "\(collide.stderr)")
        let skipped = try #require(["b.wav", "b.flac"].first { line.hasPrefix("segno: " + ws["in/" + $0]) })
        // The hint, followed, writes the skipped input's data.
        let suggested = ws["peaks/b-" + (skipped as NSString).pathExtension + ".json"]
        #expect(line.contains("segno waveform \(ws["in/" + skipped]) -o OTHER.json"), "\(line)")
        #expect(try ws.segno(["waveform", ws["in/" + skipped], "-o", suggested]).exited(0))

        // audiowaveform's form writing standard output without a format names --output-format.
        let dash = try ws.segno(["waveform", "-i", ws["in/b.wav"], "-o", "-"])
        #expect(dash.exited(1) && dash.stderr.contains("--output-format") && !dash.stderr.contains("give an output"), "\(dash.stderr)")

        // convert --rate that the format cannot take: a usage error naming the rates it can.
        let rate = try ws.segno(["convert", ws["in/b.wav"], ws["b.opus"], "--rate", "44100"])
        #expect(rate.exited(2) && rate.stderr.contains("48000") && !rate.stderr.contains("add --rate"), "\(rate.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws["b.opus"]))
        #expect(try ws.segno(["convert", ws["in/b.wav"], ws["b.opus"], "--rate", "48000"]).exited(0))
    }
}

/// Item 8: the numbers segno prints agree with each other and with what the next run does.
extension FirstHourTests {
    /// "3 done, 1 failed, 2 partly done" from a run's last line, as (done, failed, partly done).
    static func outcome(_ stdout: String) -> (done: Int, failed: Int, partial: Int)? {
        let regex = try! NSRegularExpression(pattern: "(\\d+) done, (\\d+) failed(?:, (\\d+) partly done)?, \\d+ up to date")
        guard let m = regex.matches(in: stdout, range: NSRange(stdout.startIndex..., in: stdout)).last else { return nil }
        func n(_ i: Int) -> Int { Range(m.range(at: i), in: stdout).flatMap { Int(stdout[$0]) } ?? 0 }
        return (n(1), n(2), n(3))
    }

    @Test func theRunSummaryCountsAsStatusDoes() throws {
        let ws = try RunWorkspace()
        // Eight channels: the FLAC is written, the MP3 (at most 2 channels) is not: partly done.
        try RunWorkspace.writeTone(to: ws["in/eight.wav"], channels: 8, seconds: 0.5)
        try RunWorkspace.writeTone(to: ws["in/mono.wav"], seconds: 0.5)
        try Data("RIFF but not audio at all".utf8).write(to: URL(fileURLWithPath: ws["in/broken.wav"]))
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }", "encode: { path: \"{stem}.mp3\" }"]))
        let run = try ws.segno(["run", "spec.yaml", "--report", ws["r.json"]])
        #expect(run.exited(1), "\(run.stderr)")
        let said = try #require(Self.outcome(run.stdout), "\(run.stdout)")
        let status = try ws.status()
        #expect(said.done == status.int("done") && said.failed == status.int("failed") && said.partial == status.int("partial"),
                "run said \(said), status \(status)")
        #expect(said.partial == 1 && said.failed == 1 && said.done == 1, "\(run.stdout)")
        let report = try ws.report("r.json")
        #expect(report.int("counts", "failed") == status.int("failed") && report.int("counts", "partial") == status.int("partial"), "\(report)")
    }

    @Test func leftForTheNextRunIsWhatTheNextRunDoesAfterForce() throws {
        let ws = try RunWorkspace()
        try ws.makeRecordings(count: 3, maxSeconds: 0.6)
        try Data("RIFF but not audio at all".utf8).write(to: URL(fileURLWithPath: ws["in/broken.wav"]))
        try ws.writeSpec(RunTests.spec())
        #expect(try ws.segno(["run", "spec.yaml"]).exited(1))
        try RunWorkspace.writeTone(to: ws["in/new1.wav"], seconds: 0.5)
        try RunWorkspace.writeTone(to: ws["in/new2.wav"], seconds: 0.5, frequency: 300)
        // --force plans all six; the time is up before any starts.
        let forced = try ws.segno(["run", "spec.yaml", "--force", "--max-time", "0s"])
        #expect(forced.exited(0), "\(forced.stderr)")
        let left = forced.stdout.components(separatedBy: "--max-time reached, ").last?.split(separator: " ").first.flatMap { Int($0) }
        let dry = try ws.segno(["run", "spec.yaml", "--dry-run"])
        #expect(left == 2 && dry.stdout.contains("dry run: \(left ?? -1) to run, 3 up to date, 1 known failures"), "\(forced.stdout) then \(dry.stdout)")
    }

    @Test func outputsSaysGoneAsStatusDoesAndNoEmptyFingerprint() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/long.wav"], rate: 16000, seconds: 8)
        try RunWorkspace.writeTone(to: ws["in/short.wav"], rate: 16000, seconds: 0.5)
        try RunWorkspace.writeTone(to: ws["in/eight.wav"], channels: 8, seconds: 0.5)
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }", "encode: { path: \"{stem}.mp3\" }", "fingerprint: {}"]))
        _ = try ws.segno(["run", "spec.yaml"])
        try FileManager.default.removeItem(atPath: ws["in/eight.wav"])
        let status = try ws.status()
        #expect(status.int("gone") == 1 && status.int("partial") == 0, "\(status)")
        let json = try RunWorkspace.json(try ws.segno(["outputs", "spec.yaml", "--json"]).stdout)
        let recs = try #require(json["recordings"] as? [[String: Any]])
        let eight = try #require(recs.first { $0["path"] as? String == "eight.wav" })
        #expect(eight["state"] as? String == "gone" && eight["last_state"] as? String == "partial", "\(eight)")
        let text = try ws.segno(["outputs", "spec.yaml"])
        #expect(text.stdout.contains("eight.wav: gone") && !text.stdout.contains("eight.wav: partial"), "\(text.stdout)")
        // A recording too short to fingerprint has none, not a fingerprint of 0 characters.
        #expect(!text.stdout.contains("(0 characters"), "\(text.stdout)")
        let short = try #require(recs.first { $0["path"] as? String == "short.wav" })
        #expect((short["fingerprint"] as? String).map { !$0.isEmpty } ?? true, "\(short)")
        let long = try #require(recs.first { $0["path"] as? String == "long.wav" })
        #expect((long["fingerprint"] as? String)?.isEmpty == false, "\(long)")
    }

    @Test func duplicatesHelpQuotesTheThresholdTheCodeUses() throws {
        let help = try CLI.segno(["help", "duplicates"]).stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        let percent = DuplicateFinder.defaultMaxBitError * 100
        #expect(DuplicateFinder().maxBitError == DuplicateFinder.defaultMaxBitError)
        #expect(help.contains(String(format: "at most %g %%", percent)), "\(help)")
        #expect(help.contains(String(format: "similarity ≥ %.2f", 1 - DuplicateFinder.defaultMaxBitError)), "\(help)")
    }
}

/// Item 1: salvage reports a recording salvaged only when something was lost or skipped.
extension FirstHourTests {
    /// Healthy FLAC (by `flac`), MP3 and Opus (by ffmpeg) of one noise WAV under `in/`, each
    /// checked healthy by those tools; and a FLAC cut short, which salvage does recover.
    static func healthyAndCut(_ ws: RunWorkspace) throws {
        let wav = ws["src.wav"]
        _ = try Audio.output(of: "sox", ["-R", "-n", "-r", "48000", "-c", "1", "-b", "16", wav, "synth", "3", "pinknoise", "vol", "0.5"], what: "make a WAV")
        _ = try Audio.output(of: "flac", ["-s", "-f", "-o", ws["in/memo.flac"], wav], what: "encode FLAC")
        _ = try Audio.output(of: "ffmpeg", ["-nostdin", "-v", "error", "-i", wav, "-c:a", "libmp3lame", "-b:a", "96k", ws["in/memo.mp3"]], what: "encode MP3")
        _ = try Audio.output(of: "ffmpeg", ["-nostdin", "-v", "error", "-i", wav, "-c:a", "libopus", "-b:a", "48k", ws["in/memo.opus"]], what: "encode Opus")
        // The independent tools find nothing wrong with them.
        #expect(try CLI.tool("flac", ["-t", "-s", ws["in/memo.flac"]]).status == 0)
        for name in ["memo.flac", "memo.mp3", "memo.opus"] {
            let check = try CLI.tool("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", ws["in/" + name], "-f", "null", "-"])
            #expect(check.status == 0 && check.stderr.isEmpty, "\(name): \(check.stderr)")
        }
        let flac = try Data(contentsOf: URL(fileURLWithPath: ws["in/memo.flac"]))
        try flac.prefix(flac.count * 6 / 10).write(to: URL(fileURLWithPath: ws["in/cut.flac"]))
        #expect(try CLI.tool("flac", ["-t", "-s", ws["in/cut.flac"]]).status != 0)
    }

    @Test func healthyFilesAreNotReportedSalvaged() throws {
        let ws = try RunWorkspace()
        try Self.healthyAndCut(ws)
        for name in ["memo.flac", "memo.mp3", "memo.opus"] {
            let convert = try ws.segno(["convert", "--salvage", ws["in/" + name], ws["out-" + name + ".wav"]])
            #expect(convert.exited(0) && !convert.stderr.contains("salvaged"), "\(name): \(convert.stderr)")
            let wave = try ws.segno(["waveform", "--salvage", ws["in/" + name], "-o", ws["out-" + name + ".json"]])
            #expect(wave.exited(0) && !wave.stderr.contains("salvaged"), "\(name): \(wave.stderr)")
        }
        let cut = try ws.segno(["convert", "--salvage", ws["in/cut.flac"], ws["cut.wav"]])
        #expect(cut.exited(0) && cut.stderr.contains("salvaged"), "the cut FLAC is: \(cut.stderr)")

        try ws.writeSpec(RunTests.spec(input: ["damaged: salvage"], stages: ["encode: { path: \"{stem}.{ext}.wav\" }", "metadata: { path: \"{stem}.{ext}.json\" }"]))
        let run = try ws.segno(["run", "spec.yaml", "--report", ws["r.json"]])
        #expect(run.exited(0), "\(run.stderr)")
        let warned = run.stderrLines.filter { $0.contains("salvaged") }
        #expect(warned.count == 1 && warned.first?.contains("cut.flac") == true, "\(run.stderr)")
        #expect(try ws.status().int("salvaged") == 1)
        let outputs = try ws.segno(["outputs", "spec.yaml"])
        #expect(outputs.stdout.components(separatedBy: "salvaged").count == 2, "\(outputs.stdout)")
        for name in ["memo.flac", "memo.mp3", "memo.opus"] {
            let meta = try RunWorkspace.json(String(contentsOfFile: ws["out/" + (name as NSString).deletingPathExtension + "." + (name as NSString).pathExtension + ".json"], encoding: .utf8))
            #expect(meta["salvaged"] == nil, "\(name): \(meta)")
        }
        let recordings = try #require(try ws.report("r.json")["recordings"] as? [[String: Any]])
        #expect(recordings.filter { $0["salvaged"] != nil }.compactMap { $0["path"] as? String } == ["cut.flac"], "\(recordings)")
    }
}

/// Item 4: `salvaged` is a JSON object in every `--json`, and prose in the text forms.
extension FirstHourTests {
    @Test func salvagedIsAnObjectInJSONAndProseInText() throws {
        let ws = try RunWorkspace()
        try Self.cutWAV(ws, "in/cut.wav")
        try ws.writeSpec(RunTests.spec(input: ["damaged: salvage"], stages: ["encode: { path: \"{stem}.wav\" }"]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        // What sox counts in the output and the original: the recovered and the lost frames.
        let soxi = { (path: String) throws -> Int in
            Int(String(decoding: try Audio.output(of: "soxi", ["-s", path], what: "count frames"), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        let recovered = try soxi(ws["out/cut.wav"]), whole = try soxi(ws["whole.wav"])
        #expect(recovered > 0 && recovered < whole)
        func check(_ object: Any?, _ what: String) {
            let o = object as? [String: Any]
            #expect(o?["frames"] as? Int == recovered && o?["frames_lost"] as? Int == whole - recovered, "\(what): \(String(describing: object))")
            #expect((o?["causes"] as? [String])?.contains("truncated") == true, "\(what): \(String(describing: object))")
        }
        let status = try ws.status()
        check((status["salvaged_recordings"] as? [[String: Any]])?.first?["report"], "status --json")
        let outputs = try RunWorkspace.json(try ws.segno(["outputs", "spec.yaml", "--json"]).stdout)
        check((outputs["recordings"] as? [[String: Any]])?.first?["salvaged"], "outputs --json")
        let report = try RunWorkspace.json(try ws.segno(["report", "spec.yaml", "--json"]).stdout)
        check((report["recordings"] as? [[String: Any]])?.first?["salvaged"], "report --json")
        // The text forms say it in words, not JSON.
        for args in [["status", "spec.yaml"], ["outputs", "spec.yaml"]] {
            let text = try ws.segno(args).stdout
            let line = text.split(separator: "\n").first { $0.contains("salvaged") && $0.contains("frames") }.map(String.init) ?? ""
            #expect(line.contains("\(whole - recovered) frames lost") && !line.contains("{") && !line.contains("\"frames_lost\""), "\(args): \(text)")
        }
    }
}

/// Item 7: every reading command answers a lost database and a never-run spec as the others do,
/// and a lost database as `run` does.
extension FirstHourTests {
    static let readers: [[String]] = [["status"], ["find", "memo"], ["outputs"], ["report"], ["duplicates"]]

    @Test func readingCommandsAnswerANeverRunSpecAndALostDatabaseAlike() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/memo.wav"], rate: 16000, seconds: 4)
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }", "fingerprint: {}"]))
        // Never run: one line, the same for all, exit 0; --json is JSON; nothing is created.
        var said: Set<String> = []
        for r in Self.readers {
            let text = try ws.segno([r[0], "spec.yaml"] + r.dropFirst())
            #expect(text.exited(0), "\(r): \(text.status) \(text.stderr)")
            said.insert(text.stdout)
            let json = try ws.segno([r[0], "spec.yaml", "--json"] + r.dropFirst())
            #expect(json.exited(0) && (try? RunWorkspace.json(json.stdout)) != nil, "\(r) --json: \(json.stdout) \(json.stderr)")
        }
        #expect(said.count == 1 && said.first?.contains("nothing has run") == true, "\(said)")
        #expect(!FileManager.default.fileExists(atPath: ws["out"]))

        // The database lost after runs: run refuses with 65, and so does every reader, in run's words.
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        for suffix in ["", "-wal", "-shm"] { unlink(ws["out/.segno/state.sqlite" + suffix]) }
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(65), "\(run.status) \(run.stderr)")
        for r in Self.readers {
            for json in [false, true] {
                let read = try ws.segno([r[0], "spec.yaml"] + (json ? ["--json"] : []) + r.dropFirst())
                #expect(read.exited(65) && read.stderr == run.stderr, "\(r) json \(json): \(read.status) \(read.stdout) \(read.stderr) — run said \(run.stderr)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: ws["out/.segno/state.sqlite"]), "no reader makes a new database")
    }
}

/// Item 16: spec and command-line habits.
extension FirstHourTests {
    @Test func encodeShorthandAndNormaliseAlias() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/memo.wav"], rate: 16000, seconds: 1)
        try ws.writeSpec(RunTests.spec(output: "a", stages: ["normalise: -20", "encode: \"{stem}.flac\""]), name: "a.yaml")
        try ws.writeSpec(RunTests.spec(output: "b", stages: ["normalize: -20", "encode: { path: \"{stem}.flac\" }"]), name: "b.yaml")
        for spec in ["a.yaml", "b.yaml"] {
            let r = try ws.segno(["run", spec])
            #expect(r.exited(0), "\(spec): \(r.stderr)")
        }
        #expect(try CLI.tool("flac", ["-t", "-s", ws["a/memo.flac"]]).status == 0)
        // The same stages under either spelling: the same audio (flac decodes both to the same samples).
        #expect(try Fixtures.soxDecode(ws["a/memo.flac"]) == Fixtures.soxDecode(ws["b/memo.flac"]))
        let convert = try ws.segno(["convert", ws["in/memo.wav"], ws["n.flac"], "--normalise", "-20"])
        #expect(convert.exited(0), "\(convert.stderr)")
        #expect(try Fixtures.soxDecode(ws["n.flac"]) == Fixtures.soxDecode(ws["a/memo.flac"]))
    }

    @Test func unknownCommandsAreUsageErrorsWithASuggestion() throws {
        let runn = try CLI.segno(["runn", "spec.yaml"])
        #expect(runn.status == 2 && runn.stderr.contains("did you mean run?"), "\(runn.status) \(runn.stderr)")
        let nothing = try CLI.segno(["help", "nothing"])
        #expect(nothing.status == 2 && nothing.stderr.contains("nothing") && nothing.stdout.isEmpty, "\(nothing.status) \(nothing.stdout) \(nothing.stderr)")
        let stateTypo = try CLI.segno(["help", "state", "rebuld"])
        #expect(stateTypo.status == 2 && stateTypo.stderr.contains("did you mean rebuild?"), "\(stateTypo.stderr)")
        for ok in [["help", "run"], ["help", "state", "rebuild"], ["help"], ["--help"]] {
            let r = try CLI.segno(ok)
            #expect(r.status == 0 && !r.stdout.isEmpty, "\(ok): \(r.status) \(r.stderr)")
        }
    }

    @Test func convertTakesFormatM4A() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["a.wav"], rate: 44100, seconds: 1)
        let r = try ws.segno(["convert", ws["a.wav"], ws["a.audio"], "--format", "m4a"])
        #expect(r.exited(0), "\(r.stderr)")
        let probe = try CLI.tool("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name:format=format_name", "-of", "default=nw=1", ws["a.audio"]])
        #expect(probe.stdout.contains("codec_name=aac") && probe.stdout.contains("mp4"), "\(probe.stdout)")
    }

    @Test func titlesInPathsAreSafeOnSMBAndFAT() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["src.wav"], rate: 16000, seconds: 1)
        let title = #"Q&A: what? <draft> "v2"|final*. "#
        #expect(try ws.segno(["convert", ws["src.wav"], ws["in/memo.flac"], "--tag", "title=" + title]).exited(0))
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{title}.flac\" }"]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        let names = try FileManager.default.contentsOfDirectory(atPath: ws["out"]).filter { $0.hasSuffix(".flac") }
        #expect(names.count == 1, "\(names)")
        let name = try #require(names.first)
        let stem = String(name.dropLast(5))
        // What Windows (and so SMB and FAT) refuses in a name: none of these, no trailing dot or space.
        #expect(!name.contains { "<>:\"/\\|?*".contains($0) } && !stem.hasSuffix(".") && !stem.hasSuffix(" "), "\(name)")
        #expect(stem.contains("Q&A") && stem.contains("draft") && stem.contains("v2") && stem.contains("final"), "\(name)")
        // The tag itself is kept as it was (read back by ffprobe).
        let probe = try CLI.tool("ffprobe", ["-v", "error", "-show_entries", "format_tags=title", "-of", "default=nw=1:nk=1", ws["out/" + name]])
        #expect(probe.stdout.trimmingCharacters(in: .newlines) == title, "\(probe.stdout)")
    }

    @Test func outputsTakesAPathAsTabCompletionGivesIt() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/talks/x.wav"], rate: 16000, seconds: 0.5)
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{dir}/{stem}.flac\" }"]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        for given in ["in/talks/x.wav", "./in/talks/x.wav", "talks/x.wav", ws["in/talks/x.wav"]] {
            let r = try ws.segno(["outputs", "spec.yaml", given, "--json"])
            #expect(r.exited(0), "\(given): \(r.stderr)")
            let recs = (try RunWorkspace.json(r.stdout)["recordings"] as? [[String: Any]]) ?? []
            #expect(recs.first?["path"] as? String == "talks/x.wav", "\(given): \(r.stdout)")
        }
        #expect(try ws.segno(["outputs", "spec.yaml", "in/talks/nope.wav"]).exited(1))
    }

    @Test func helpTextsAreNotHandWrapped() throws {
        // On a wide terminal each paragraph is one line: no break that the source put there.
        for args in [["--help"], ["help", "find"], ["help", "duplicates"], ["help", "outputs"], ["help", "waveform"], ["help", "state", "rebuild"]] {
            let r = try CLI.segno(args, environment: ["COLUMNS": "1000"])
            #expect(r.status == 0, "\(args)")
            let paragraphs = r.stdout.components(separatedBy: "\n\n")
            let discussion = paragraphs.filter { !$0.hasPrefix("OVERVIEW") && !$0.hasPrefix("USAGE") && !$0.contains("OPTIONS:")
                && !$0.contains("ARGUMENTS:") && !$0.contains("SUBCOMMANDS:") && !$0.contains("See '") }
            for p in discussion {
                #expect(!p.trimmingCharacters(in: .whitespacesAndNewlines).contains("\n"), "\(args): a hand-wrapped paragraph: \(p)")
            }
        }
        let root = try CLI.segno(["--help"], environment: ["COLUMNS": "1000"])
        #expect(root.stdout.contains("usage; 65 the state"), "\(root.stdout)")
    }
}

/// Item 12: an input failure (an empty, text or cut file) waits until the file changes, as the
/// failure table says; a spec change does not retry it (a spec failure it does).
extension FirstHourTests {
    @Test func inputFailuresWaitForTheFileNotTheSpec() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/good.wav"], rate: 16000, seconds: 0.5)
        try Data("these are my notes, not audio".utf8).write(to: URL(fileURLWithPath: ws["in/notes.wav"]))
        #expect(FileManager.default.createFile(atPath: ws["in/empty.wav"], contents: Data()))
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }"]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(1))
        let failed = try ws.status(failed: true)["failures"] as? [[String: Any]] ?? []
        #expect(failed.count == 2 && failed.allSatisfy { $0["class"] as? String == "input" }, "\(failed)")
        #expect(failed.allSatisfy { $0["next"] as? String == "skipped until the file changes (segno retry)" }, "\(failed)")
        // Another stage: the good recording is redone, the bad files are not tried again.
        try ws.writeSpec(RunTests.spec(stages: ["gain: -3", "encode: { path: \"{stem}.flac\" }"]))
        let changed = try ws.segno(["run", "spec.yaml"])
        #expect(changed.exited(0), "\(changed.stdout) \(changed.stderr)")
        #expect(changed.stdout.contains("1 done, 0 failed") && changed.stdout.contains("2 known failures"), "\(changed.stdout)")
        let attempts = (try ws.status(failed: true)["failures"] as? [[String: Any]] ?? []).compactMap { $0["attempts"] as? Int }
        #expect(attempts == [1, 1], "\(attempts)")
        // The file changes: it is tried again.
        try Data("still not audio, but other notes".utf8).write(to: URL(fileURLWithPath: ws["in/notes.wav"]))
        RunWorkspace.setModified(ws["in/notes.wav"], seconds: 1_700_000_000)
        let again = try ws.segno(["run", "spec.yaml"])
        #expect(again.exited(1) && again.stderr.contains("notes.wav") && !again.stderr.contains("empty.wav"), "\(again.stderr)")
    }
}

/// Item 15: `convert` into a name segno filled from another input says so instead of replacing it.
extension FirstHourTests {
    @Test func convertFromAnotherInputIntoTheSameOutputIsRefused() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["memo.wav"], rate: 16000, seconds: 1)
        _ = try Audio.output(of: "ffmpeg", ["-nostdin", "-v", "error", "-i", ws["memo.wav"], "-af", "volume=0.5", "-c:a", "aac", ws["memo.m4a"]], what: "encode AAC")
        #expect(try ws.segno(["convert", ws["memo.wav"], ws["memo.flac"]]).exited(0))
        let first = try Fixtures.soxDecode(ws["memo.flac"])
        // The same input again (other options) replaces it, as before.
        #expect(try ws.segno(["convert", "./memo.wav", ws["memo.flac"], "--gain", "-1"]).exited(0))
        let regain = try Fixtures.soxDecode(ws["memo.flac"])
        #expect(regain != first)
        // Another input: refused, naming both; the file is what the first input made.
        let other = try ws.segno(["convert", ws["memo.m4a"], ws["memo.flac"]])
        #expect(other.exited(1) && other.stderr.contains("memo.wav") && other.stderr.contains("memo.m4a") && other.stderr.contains("--overwrite"), "\(other.stderr)")
        #expect(try Fixtures.soxDecode(ws["memo.flac"]) == regain)
        // --overwrite replaces it; from then on the m4a is its input.
        #expect(try ws.segno(["convert", ws["memo.m4a"], ws["memo.flac"], "--overwrite"]).exited(0))
        #expect(try Fixtures.soxDecode(ws["memo.flac"]) != regain)
        #expect(try ws.segno(["convert", ws["memo.m4a"], ws["memo.flac"]]).exited(0))
    }
}

/// Item 13: a length tag is derived from the audio; it is not carried into an output (where
/// `tempo` or `pauses` would make it wrong). mutagen reads the tags back.
extension FirstHourTests {
    static func mutagenTags(_ path: String) throws -> [String: String] {
        let script = "import json,sys,mutagen\nf=mutagen.File(sys.argv[1])\nprint(json.dumps({str(k): str(v) for k, v in (f.tags or {}).items()}))"
        let r = try CLI.tool("python3", ["-c", script, path])
        guard r.status == 0 else { throw CLITestError("mutagen: \(r.stderr)") }
        return (try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: String]) ?? [:]
    }

    @Test(.enabled(if: (try? CLI.tool("python3", ["-c", "import mutagen"]).status) == 0))
    func aLengthTagIsNotCarried() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["src.wav"], rate: 44100, seconds: 2)
        _ = try Audio.output(of: "ffmpeg", ["-nostdin", "-v", "error", "-i", ws["src.wav"], "-c:a", "libmp3lame", "-metadata", "title=Kitchen idea", ws["memo.mp3"]], what: "encode MP3")
        let add = "import sys\nfrom mutagen.id3 import ID3, TLEN\nt=ID3(sys.argv[1])\nt.add(TLEN(encoding=3, text='2000'))\nt.save()"
        #expect(try CLI.tool("python3", ["-c", add, ws["memo.mp3"]]).status == 0)
        #expect(try Self.mutagenTags(ws["memo.mp3"])["TLEN"] == "2000")
        for out in ["fast.flac", "fast.opus", "fast.m4a"] {
            let r = try ws.segno(["convert", ws["memo.mp3"], ws[out], "--tempo", "2"])
            #expect(r.exited(0), "\(out): \(r.stderr)")
            let tags = try Self.mutagenTags(ws[out])
            #expect(!tags.keys.contains { $0.lowercased().hasSuffix("length") }, "\(out) carries a length: \(tags)")
            #expect(tags.contains { $0.key.lowercased() == "title" || $0.key == "©nam" }, "\(out) keeps its title: \(tags)")
        }
    }
}

/// Item 18: `info` on a file whose audio fails from the first frame still shows what its
/// container says (tags), as ffprobe and mutagen do.
extension FirstHourTests {
    @Test func infoShowsTheTagsOfAFileWhoseAudioFails() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["src.wav"], rate: 44100, seconds: 1)
        _ = try Audio.output(of: "flac", ["-s", "-f", "-T", "TITLE=Kitchen idea", "-o", ws["memo.flac"], ws["src.wav"]], what: "encode FLAC")
        // Every byte after the metadata blocks becomes junk: no frame decodes.
        var b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ws["memo.flac"])))
        var at = 4, last = false
        while !last && at + 4 <= b.count {
            last = b[at] & 0x80 != 0
            at += 4 + (Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3]))
        }
        for i in at..<b.count { b[i] = UInt8(truncatingIfNeeded: i &* 7 &+ 1) & 0x7F }
        try Data(b).write(to: URL(fileURLWithPath: ws["memo.flac"]))
        #expect(try CLI.tool("flac", ["-t", "-s", ws["memo.flac"]]).status != 0)
        let probe = try CLI.tool("ffprobe", ["-v", "quiet", "-show_entries", "format_tags=title", "-of", "default=nw=1:nk=1", ws["memo.flac"]])
        #expect(probe.stdout.trimmingCharacters(in: .newlines) == "Kitchen idea", "ffprobe reads the title: \(probe.stdout)")
        let text = try ws.segno(["info", ws["memo.flac"]])
        #expect(text.exited(1) && text.stderr.contains("Kitchen idea"), "\(text.stdout) \(text.stderr)")
        let json = try ws.segno(["info", "--json", ws["memo.flac"]])
        let o = try RunWorkspace.json(json.stdout)
        #expect(json.exited(1) && o["ok"] as? Bool == false && (o["tags"] as? [String: Any])?["title"] as? String == "Kitchen idea", "\(json.stdout)")
    }
}

/// Item 3 (its search part): "cafe" finds a recording named with the Latin-1 byte é.
extension FirstHourTests {
    @Test func cafeFindsALatin1Name() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["src.wav"], rate: 16000, seconds: 0.5)
        let bin = (try CLI.segnoPath() as NSString).deletingLastPathComponent
        let made = try CLI.run("/bin/sh", ["-c", #"cd "$0" && cp src.wav "$(printf 'in/caf\351 notes.wav')""#, ws.root, bin])
        #expect(made.status == 0, "\(made.stderr)")
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }"]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        let found = try ws.segno(["find", "spec.yaml", "cafe", "--json"])
        let results = (try RunWorkspace.json(found.stdout)["results"] as? [[String: Any]]) ?? []
        #expect(results.count == 1 && (results.first?["path"] as? String)?.hasPrefix(#"caf\xe9"#) == true, "\(found.stdout) \(found.stderr)")
        // The name's own bytes are what is printed, not the é it was searched as.
        #expect(!found.stdout.contains("café"), "\(found.stdout)")
    }
}
