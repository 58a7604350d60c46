import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// What users of SoX, ffmpeg and opusenc type, and what a new user tripped over (issue 22).
@Suite struct HabitsAndFirstRunTests {
    @Test func opusFrom44100IsResampledTo48000AndSaidOnce() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["a.wav"], rate: 44100, channels: 2, seconds: 1)
        let r = try ws.segno(["convert", ws["a.wav"], ws["a.opus"]])
        #expect(r.exited(0), "\(r.stderr)")
        #expect(r.stderr.components(separatedBy: "48000 Hz").count == 2 && r.stderr.contains("44100"), "\(r.stderr)")
        // ffprobe reads 48 kHz and about a second.
        let probe = try CLI.tool("ffprobe", ["-v", "error", "-show_entries", "stream=sample_rate:format=duration", "-of", "default=nw=1", ws["a.opus"]])
        #expect(probe.stdout.contains("sample_rate=48000"), "\(probe.stdout)")
        let duration = probe.stdout.split(separator: "\n").first { $0.hasPrefix("duration=") }.flatMap { Double($0.dropFirst(9)) }
        #expect(abs((duration ?? 0) - 1) < 0.05, "\(probe.stdout)")
        // A rate Opus codes at is kept, and nothing is said.
        try RunWorkspace.writeTone(to: ws["b.wav"], rate: 16000, seconds: 1)
        let kept = try ws.segno(["convert", ws["b.wav"], ws["b.opus"]])
        #expect(kept.exited(0) && !kept.stderr.contains("resampling"), "\(kept.stderr)")
    }

    /// MP3 as LAME is driven: `--bitrate 96` (kb/s, LAME's -b) gives a constant 96 kb/s and
    /// `-V 2` LAME's VBR quality 2, as mutagen reads them back from the LAME tag; MPEG-2 rates too.
    @Test(arguments: [(["--bitrate", "96"], 44100, "CBR", "-b 96"), (["--bitrate", "128k"], 48000, "CBR", "-b 128"),
                      (["--bitrate", "64"], 22050, "CBR", "-b 64"), (["-V", "2"], 44100, "VBR", "-V 2"), (["-V", "7"], 44100, "VBR", "-V 7")])
    func mp3TakesLAMEsBitrateAndVBRQuality(options: [String], rate: Int, mode: String, settings: String) throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["a.wav"], rate: rate, channels: 2, seconds: 2)
        let r = try ws.segno(["convert", ws["a.wav"], ws["a.mp3"]] + options)
        #expect(r.exited(0), "\(r.stderr)")
        let read = try CLI.tool("python3", ["-c", "import sys, mutagen.mp3; i = mutagen.mp3.MP3(sys.argv[1]).info; print(str(i.bitrate_mode).split('.')[-1], i.encoder_settings, sep='|')", ws["a.mp3"]])
        #expect(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(mode)|\(settings)", "\(read.stdout) \(read.stderr)")
        if mode == "CBR" {
            let probe = try CLI.tool("ffprobe", ["-v", "error", "-show_entries", "stream=bit_rate", "-of", "csv=p=0", ws["a.mp3"]])
            #expect(Int(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == Int(settings.dropFirst(3))! * 1000, "\(probe.stdout)")
        }
    }

    @Test func mp3RateOptionsAreCheckedBeforeAnyAudio() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["a.wav"], rate: 44100, seconds: 1)
        for (args, words) in [(["--bitrate", "400"], "8…320"), (["-V", "10"], "0…9"), (["-V", "2", "--bitrate", "96"], "one of"),
                              (["-V", "2", "--format", "flac"], "mp3 output only")] {
            let r = try ws.segno(["convert", ws["a.wav"], ws["a.mp3"]] + args)
            #expect(r.exited(2) && r.stderr.contains(words), "\(args): \(r.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: ws["a.mp3"]))
    }

    /// `status` after `kill -9`: the run left `running` shows as killed, with the recordings it
    /// finished counted — as many as the next run finds up to date, and no more than the outputs
    /// on disk (one may be in place without its record, and is redone).
    @Test func statusCountsWhatAKilledRunFinished() throws {
        let ws = try RunWorkspace()
        for i in 0..<5 { try RunWorkspace.writeTone(to: ws["in/m\(i).wav"], rate: 44100, channels: 2, seconds: 4) }
        try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nparallel: 1\nstages:\n  - pitch: { semitones: 3 }\n  - encode: { path: \"{stem}.flac\" }\n")
        func flacs() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: ws["out"])) ?? []).filter { $0.hasSuffix(".flac") && !$0.hasPrefix(".") }.count
        }
        let run = try ws.start(["run", "spec.yaml", "--quiet"])
        // Killed once the first recording is done: its file renamed into place and its record written.
        Wait.until(timeout: 120, interval: 0.05) { flacs() >= 1 }
        Wait.until(timeout: 60, interval: 0.05) { ((try? ws.status())?["done"] as? Int ?? 0) >= 1 }
        run.send(SIGKILL)
        #expect(run.wait().signalled, "killed mid-run, not already finished")
        let onDisk = flacs()
        let last = try #require((try ws.status()["runs"] as? [[String: Any]])?.first)
        #expect(last["status"] as? String == "killed", "\(last)")
        let done = last["done"] as? Int ?? -1
        #expect(done >= 1 && done <= onDisk && onDisk < 5, "\(done) counted, \(onDisk) on disk")
        #expect(try ws.segno(["status", "spec.yaml"]).stdout.contains("killed: \(done) done, 0 failed"))
        let next = try ws.segno(["run", "spec.yaml"])
        #expect(next.exited(0) && next.stdout.contains("\(5 - done) done, 0 failed, \(done) up to date"), "\(next.stdout)")
    }

    @Test func aBareNormalizeTargetIsLUFS() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["a.wav"], rate: 48000, seconds: 3)
        let r = try ws.segno(["convert", ws["a.wav"], ws["n.wav"], "--normalize", "-20"])
        #expect(r.exited(0), "\(r.stderr)")
        // ffmpeg's ebur128 filter measures the integrated loudness: -20 LUFS within 0.5 LU.
        let m = try CLI.tool("ffmpeg", ["-nostdin", "-hide_banner", "-i", ws["n.wav"], "-af", "ebur128", "-f", "null", "-"])
        let line = m.stderr.split(separator: "\n").last { $0.contains("I:") && $0.contains("LUFS") }
        let value = line.flatMap { l in l.split(separator: " ").compactMap { Double($0) }.first }
        #expect(abs((value ?? 0) + 20) < 0.5, "\(line ?? "no loudness line")")
        #expect(try ws.segno(["convert", ws["a.wav"], ws["x.wav"], "--normalize", "-1"]).exited(2))
    }

    @Test func forceTakesItsStageAsTheNextWord() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], rate: 16000, seconds: 0.5)
        let spec = try ws.writeSpec("""
        version: 1
        input: {root: ./in, settle: 0s}
        output: {root: ./out}
        stages:
          - waveform: {path: "{stem}.json"}
          - encode: {path: "{stem}.flac"}
        """)
        #expect(try ws.segno(["run", spec, "--quiet"]).exited(0))
        let before = try RunWorkspace.stamps(ws["out"])
        let r = try ws.segno(["run", "--force", "waveform", spec, "--quiet"])
        #expect(r.exited(0), "\(r.stderr)")
        let after = try RunWorkspace.stamps(ws["out"])
        #expect(after["a.json"] != before["a.json"] && after["a.flac"] == before["a.flac"], "\(before) \(after)")
        // --force before the spec alone still forces everything.
        #expect(try ws.segno(["run", "--force", spec, "--quiet"]).exited(0))
        #expect(try RunWorkspace.stamps(ws["out"])["a.flac"] != before["a.flac"])
    }

    @Test func aMissingInputRootIsRefusedAndLeavesNothing() throws {
        let ws = try RunWorkspace()
        let spec = try ws.writeSpec("""
        version: 1
        input: {root: ./nothere}
        output: {root: ./out}
        stages:
          - waveform: {path: "{stem}.json"}
        """)
        let v = try ws.segno(["validate", spec])
        #expect(v.exited(2) && v.stderr.contains("nothere") && v.stderr.contains("does not exist"), "\(v.stderr)")
        for args in [["run", spec], ["run", spec, "--dry-run"]] {
            let r = try ws.segno(args, timeout: 30)
            #expect(r.exited(2) && r.stderr.contains("does not exist"), "\(args): \(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: ws["out"]), "\(args)")
        }
    }
}

/// `segno duplicates` finds a memo shorter than --min-overlap and its MP3 (issue 22).
@Suite struct ShortDuplicatesTests {
    @Test func aShortMemoAndItsMP3AreDuplicates() throws {
        let ws = try RunWorkspace()
        try FileManager.default.createDirectory(atPath: ws["in"], withIntermediateDirectories: true)
        let say = try CLI.tool("espeak-ng", ["-s", "150", "-w", ws["in/memo.wav"], "Call the tuner at nine, then send the mixes."])
        #expect(say.status == 0, "\(say.stderr)")
        #expect(try CLI.tool("ffmpeg", ["-v", "error", "-nostdin", "-i", ws["in/memo.wav"], "-c:a", "libmp3lame", "-b:a", "96k", ws["in/memo-copy.mp3"]]).status == 0)
        let seconds = try #require(Double(try CLI.tool("soxi", ["-D", ws["in/memo.wav"]]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(seconds > 2.5 && seconds < 5, "\(seconds) s")
        try ws.writeSpec(RunTests.spec(stages: ["fingerprint: {}"]))
        #expect(try ws.segno(["run", "spec.yaml", "--quiet"]).exited(0))
        let r = try ws.segno(["duplicates", "spec.yaml"])
        #expect(r.exited(0) && r.stdout.contains("memo.wav") && r.stdout.contains("memo-copy.mp3"), "\(r.stdout) \(r.stderr)")
        let help = try ws.segno(["duplicates", "--help"]).stdout
        #expect(help.contains("default: 5") && help.contains("however short"), "\(help)")
    }
}
