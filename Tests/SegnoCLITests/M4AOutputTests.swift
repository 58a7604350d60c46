import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// `.m4a` output (AAC, ALAC) through the ffmpeg program, from `convert` and from a spec run.
/// ffprobe and ffmpeg's decoder are the references for what was written.
@Suite struct M4AOutputTests {
    /// `ffprobe`'s codec, duration (in the stream's time base) and time base of the first audio stream.
    static func probe(_ path: String) throws -> (codec: String, durationTS: Int, timeBase: String) {
        let r = try CLI.tool("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=codec_name,duration_ts,time_base",
                                         "-of", "default=noprint_wrappers=1", "file:" + path])
        #expect(r.status == 0, "\(r.stderr)")
        var d: [String: String] = [:]
        for line in r.stdout.split(separator: "\n") {
            let kv = line.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { d[String(kv[0])] = String(kv[1]) }
        }
        return (d["codec_name"] ?? "", Int(d["duration_ts"] ?? "") ?? -1, d["time_base"] ?? "")
    }

    /// ffmpeg's decode of `path` to 16-bit PCM.
    static func pcm16(_ path: String) throws -> Data {
        try Audio.output(of: "ffmpeg", ["-v", "error", "-nostdin", "-i", "file:" + path, "-f", "s16le", "pipe:1"], what: "decode \(path)")
    }

    @Test func convertWritesAACByDefaultAndALACWhenAsked() throws {
        let ws = try RunWorkspace()
        var rng = SplitMix64(seed: 3)
        try RunWorkspace.writeTone(to: ws["memo.wav"], rate: 44100, channels: 2, frames: 66_150, rng: &rng)
        let aac = try ws.segno(["convert", "memo.wav", "memo.m4a"])
        #expect(aac.exited(0), "\(aac.stderr)")
        #expect(aac.stderr.isEmpty, "\(aac.stderr)")
        let p = try Self.probe(ws["memo.m4a"])
        #expect(p.codec == "aac" && p.durationTS == 66_150 && p.timeBase == "1/44100", "\(p)")
        let info = try ws.segno(["info", "memo.m4a"])
        #expect(info.stdout.contains("AAC, 44100 Hz, 2 ch, 66150 frames"), "\(info.stdout)")

        let alac = try ws.segno(["convert", "memo.wav", "lossless.m4a", "--format", "alac"])
        #expect(alac.exited(0), "\(alac.stderr)")
        let q = try Self.probe(ws["lossless.m4a"])
        #expect(q.codec == "alac" && q.durationTS == 66_150, "\(q)")
        // Bit for bit the WAV's samples.
        let wav = try Data(contentsOf: URL(fileURLWithPath: ws["memo.wav"]))
        #expect(try Self.pcm16(ws["lossless.m4a"]) == wav.suffix(66_150 * 4))

        let rate = try ws.segno(["convert", "memo.wav", "low.m4a", "--bitrate", "48k", "--mix", "mono", "--rate", "22050"])
        #expect(rate.exited(0), "\(rate.stderr)")
        #expect(try Self.probe(ws["low.m4a"]).durationTS == 33_075)
        for (args, message) in [(["--bitrate", "128k"], "--bitrate applies to aac and mp3 output only"),
                                (["--format", "alac", "--encode-quality", "0.5"], "alac is lossless")] {
            let r = try ws.segno(["convert", "memo.wav", "bad.flac"] + args)
            #expect(r.exited(2) && r.stderr.contains(message), "\(args): \(r.stderr)")
        }
        #expect(try RunWorkspace.temporaries(ws.root).isEmpty)
    }

    @Test func aSpecRunWritesBothAndARerunHasNothingToDo() throws {
        let ws = try RunWorkspace()
        var rng = SplitMix64(seed: 5)
        try RunWorkspace.writeTone(to: ws["in/a.wav"], rate: 48000, frames: 48_000, rng: &rng)
        try RunWorkspace.writeTone(to: ws["in/sub/b.wav"], rate: 16000, channels: 2, frames: 23_456, rng: &rng)
        try ws.writeSpec(SafetyTests.spec(stages: ["encode: { path: \"{dir}/{stem}.m4a\", bitrate: 96k }",
                                                   "encode: { path: \"{dir}/{stem}.lossless.m4a\", format: alac }"]))
        let first = try ws.segno(["run", "spec.yaml"])
        #expect(first.exited(0), "\(first.stderr)")
        let a = try Self.probe(ws["out/a.m4a"]), b = try Self.probe(ws["out/sub/b.m4a"])
        #expect(a.codec == "aac" && a.durationTS == 48_000 && a.timeBase == "1/48000", "\(a)")
        #expect(b.codec == "aac" && b.durationTS == 23_456 && b.timeBase == "1/16000", "\(b)")
        #expect(try Self.probe(ws["out/a.lossless.m4a"]).codec == "alac")
        #expect(try Self.probe(ws["out/sub/b.lossless.m4a"]).durationTS == 23_456)
        #expect(try RunWorkspace.temporaries(ws.root).isEmpty)
        let bytes = try RunWorkspace.outputs(ws["out"])
        let stamps = try RunWorkspace.stamps(ws["out"])
        #expect(bytes.count == 4)
        let second = try ws.segno(["run", "spec.yaml"])
        #expect(second.exited(0), "\(second.stderr)")
        #expect(try RunWorkspace.stamps(ws["out"]) == stamps, "nothing is rewritten")
        // Made again from scratch: the same bytes (a rerun after kill -9 gives what an
        // uninterrupted run gives).
        let forced = try ws.segno(["run", "spec.yaml", "--force"])
        #expect(forced.exited(0), "\(forced.stderr)")
        #expect(try RunWorkspace.outputs(ws["out"]) == bytes)
    }

    @Test func withoutFFmpegTheRecordingFailsForTheEnvironmentAndTheNextRunMakesIt() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/memo.wav"], seconds: 0.5)
        try ws.writeSpec(SafetyTests.spec(stages: ["encode: { path: \"{stem}.flac\" }", "encode: { path: \"{stem}.m4a\" }"]))
        // A PATH without ffmpeg.
        try FileManager.default.createDirectory(atPath: ws["bin"], withIntermediateDirectories: true)
        let first = try ws.segno(["run", "spec.yaml"], environment: ["PATH": ws["bin"]])
        #expect(first.exited(1), "\(first.stderr)")
        #expect(first.stderr.contains("memo.m4a: AAC output needs ffmpeg on PATH; install it with apt-get install ffmpeg"), "\(first.stderr)")
        #expect(try SafetyTests.failures(ws).first?["class"] as? String == "environment")
        #expect(access(ws["out/memo.m4a"], F_OK) != 0)
        #expect(try RunWorkspace.temporaries(ws.root).isEmpty)
        // convert says the same, with the usual exit code.
        let convert = try ws.segno(["convert", "in/memo.wav", "x.m4a"], environment: ["PATH": ws["bin"]])
        #expect(convert.exited(1) && convert.stderr.contains("x.m4a: AAC output needs ffmpeg on PATH"), "\(convert.stderr)")
        // ffmpeg back on PATH: the plain run completes.
        let second = try ws.segno(["run", "spec.yaml"])
        #expect(second.exited(0), "\(second.stderr)")
        #expect(try Self.probe(ws["out/memo.m4a"]).codec == "aac")
        #expect(try SafetyTests.failures(ws).isEmpty)
    }
}
