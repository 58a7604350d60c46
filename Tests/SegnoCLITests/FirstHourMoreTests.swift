import Foundation
import SegnoAudio
import SegnoCore
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Issue 31, items 5, 6, 14, 17 and 20: answers that agree between `validate`, `run`, `convert`
/// and `repair`, checked against ffmpeg, ffprobe, flac and sox.
@Suite struct FirstHourMoreTests {
    /// ffmpeg's decode of `path` as mono float samples at `rate`.
    static func decoded(_ path: String, rate: Int) throws -> [Float] {
        let r = try CLI.tool("ffmpeg", ["-v", "error", "-i", path, "-ac", "1", "-ar", String(rate), "-f", "f32le", "-"])
        guard r.status == 0 else { throw CLITestError("ffmpeg cannot decode \(path): \(r.stderr)") }
        return r.stdoutData.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// The frequency of a steady tone (amplitude about 0.4, a little noise), from its upward
    /// crossings of +0.2 after a dip below −0.2 (the noise cannot make one).
    static func toneFrequency(_ x: [Float], rate: Int) -> Double {
        let body = x.dropFirst(x.count / 10).dropLast(x.count / 10)
        var crossings = 0
        var low = false
        for v in body {
            if v < -0.2 { low = true } else if low, v > 0.2 { crossings += 1; low = false }
        }
        return Double(crossings) * Double(rate) / Double(body.count)
    }

    /// Item 5: a spec that encodes Opus from 22.05 kHz audio gets 48 kHz Opus with a note, as
    /// `convert` does, instead of failing every recording after the work and parking it.
    @Test func opusFromAnOddRateIsResampledInARun() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/memo.wav"], rate: 22050, seconds: 1.5, frequency: 440)
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.opus\" }", "encode: { path: \"{stem}.flac\" }"]))
        let validate = try ws.segno(["validate", "spec.yaml"])
        #expect(validate.exited(0), "\(validate.stderr)")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.status) \(run.stderr)")
        #expect(run.stderr.contains("48000") && run.stderr.contains("22050") && run.stderr.contains("memo.opus"), "\(run.stderr)")
        let probe = try CLI.tool("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,sample_rate:format=duration",
                                             "-of", "default=nw=1", ws["out/memo.opus"]])
        #expect(probe.status == 0 && probe.stdout.contains("codec_name=opus"), "\(probe.stdout) \(probe.stderr)")
        let duration = probe.stdoutLines.first { $0.hasPrefix("duration=") }.flatMap { Double($0.dropFirst(9)) } ?? 0
        #expect(abs(duration - 1.5) < 0.03, "\(probe.stdout)")
        // The tone keeps its pitch: the audio was resampled, not relabelled.
        let f = Self.toneFrequency(try Self.decoded(ws["out/memo.opus"], rate: 48000), rate: 48000)
        #expect(abs(f - 440) < 5, "tone at \(f) Hz")
        // Nothing parked: the next run has nothing to do.
        let again = try ws.segno(["run", "spec.yaml"])
        #expect(again.exited(0) && !again.stderr.contains("failed"), "\(again.stderr)")
    }

    /// Item 5: a rate the user pinned that Opus cannot take is refused by `validate` and by
    /// `run` before any work.
    @Test func aPinnedRateOpusCannotTakeIsRefusedBeforeWork() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/memo.wav"], rate: 48000, seconds: 0.5)
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }", "resample: 22050", "encode: { path: \"{stem}.opus\" }"]))
        let validate = try ws.segno(["validate", "spec.yaml"])
        #expect(validate.exited(2) && validate.stderr.contains("22050") && validate.stderr.contains("48000"), "\(validate.stderr)")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(2), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws["out/memo.flac"]), "refused before any work")
    }
}

/// Item 6: `validate` and `run` check every model and engine a spec names before any work.
extension FirstHourMoreTests {
    static func spokenSpec(_ transcribe: String) -> String {
        RunTests.spec(stages: ["transcribe: { path: \"{stem}\", formats: [json], \(transcribe) }", "encode: { path: \"{stem}.flac\" }"])
    }

    @Test func anUnknownModelIsRefusedByValidateAndRun() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/memo.wav"], rate: 16000, seconds: 0.5)
        try ws.writeSpec(Self.spokenSpec("model: small"))
        let validate = try ws.segno(["validate", "spec.yaml"])
        #expect(validate.exited(2), "\(validate.status) \(validate.stderr)")
        // The line names the spec's line, the model, the names segno knows and where it looked.
        let line = try #require(validate.stderrLines.first { $0.contains("\"small\"") }, "\(validate.stderr)")
        #expect(line.contains("spec.yaml:") && line.contains("transcribe") && line.contains("tiny.en") && line.contains("base"), "\(line)")
        #expect(line.contains("site-packages") && line.contains(ws["small"]), "\(line)")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(2) && run.stderr.contains("\"small\""), "\(run.status) \(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws["out/memo.flac"]), "refused before any work")
        let status = try ws.segno(["status", "spec.yaml", "--json"])
        #expect(!status.stdout.contains("memo.wav"), "nothing was tried, so nothing is parked: \(status.stdout)")
    }

    /// A model folder is taken from the spec's folder, as every other path in a spec, and one
    /// that does not hold model.bin is refused naming the folder.
    @Test func aModelFolderIsCheckedBesideTheSpec() throws {
        let ws = try RunWorkspace()
        try FileManager.default.createDirectory(atPath: ws["specs/models/mine"], withIntermediateDirectories: true)
        try RunWorkspace.writeTone(to: ws["specs/in/memo.wav"], rate: 16000, seconds: 0.5)
        try ws.writeSpec(Self.spokenSpec("model: models/mine"), name: "specs/spec.yaml")
        let missing = try ws.segno(["validate", "specs/spec.yaml"])
        #expect(missing.exited(2) && missing.stderr.contains(ws["specs/models/mine"]) && missing.stderr.contains("model.bin"), "\(missing.stderr)")
        // With model.bin in place (and the working folder elsewhere), validate accepts it.
        try Data([0]).write(to: URL(fileURLWithPath: ws["specs/models/mine/model.bin"]))
        let found = try ws.segno(["validate", "specs/spec.yaml"])
        #expect(found.exited(0), "\(found.status) \(found.stderr)")
        // Known names that are installed pass, as before.
        try ws.writeSpec(Self.spokenSpec("model: tiny.en"), name: "specs/spec.yaml")
        #expect(try ws.segno(["validate", "specs/spec.yaml"]).exited(0))
    }
}

/// Item 20: the demo spec `make demo` runs is one `validate` accepts without a warning.
extension FirstHourMoreTests {
    @Test func theDemoSpecValidatesWithoutAWarning() throws {
        let spec = DemoSpec.repo.appendingPathComponent("pipelines/demo.yaml").path
        let r = try CLI.segno(["validate", spec])
        #expect(r.status == 0, "\(r.status) \(r.stderr)")
        #expect(!r.stderr.contains("warning"), "\(r.stderr)")
    }
}

/// Item 14: `repair` without `--reference` takes the rate the AAC frames are consistent with and
/// says why; with one, it warns when the reference does not match the stream.
extension FirstHourMoreTests {
    static func probeRate(_ path: String) throws -> (rate: Int, channels: Int, duration: Double) {
        let r = try CLI.tool("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=sample_rate,channels:format=duration",
                                         "-of", "default=nw=1", path])
        func v(_ key: String) -> String { r.stdoutLines.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) } ?? "" }
        return (Int(v("sample_rate")) ?? 0, Int(v("channels")) ?? 0, Double(v("duration")) ?? 0)
    }

    @Test(arguments: [(44100, 1), (48000, 2), (22050, 1)])
    func anAACMemoGetsTheRateItsFramesName(rate: Int, channels: Int) throws {
        let fixture = try RepairTests()
        let original = try fixture.encode("memo\(rate).m4a", codec: "aac", rate: rate, channels: channels)
        let damaged = try fixture.damage(original)
        let out = fixture.dir.path + "/fixed\(rate).m4a"
        let r = try CLI.segno(["repair", damaged, "-o", out])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("AAC-LC \(rate) Hz") && r.stdout.contains("kb/s at \(rate) Hz"), "\(r.stdout)")
        #expect(!r.stderr.contains("warning"), "\(r.stderr)")
        let got = try Self.probeRate(out), want = try Self.probeRate(original)
        #expect(got.rate == rate && got.channels == channels, "\(got)")
        // The same length as the original (the cut 1000 bytes, 0.13 s, and the priming aside), not 9 % (0.5 s) off.
        #expect(abs(got.duration - want.duration) < 0.25, "\(got.duration) s against \(want.duration) s")
    }

    @Test func aReferenceThatDoesNotMatchTheStreamIsWarnedAbout() throws {
        let fixture = try RepairTests()
        let memo = try fixture.encode("memo.m4a", codec: "aac", rate: 44100, channels: 1)
        let damaged = try fixture.damage(memo)
        let stereo = try fixture.encode("stereo.m4a", codec: "aac", rate: 22050, channels: 2)
        let other = try CLI.segno(["repair", damaged, "--reference", stereo, "-o", fixture.dir.path + "/a.m4a"])
        // Refused or warned, it names what differs.
        #expect(other.stderr.contains("mono") && other.stderr.contains("stereo"), "\(other.status) \(other.stdout) \(other.stderr)")
        #expect(other.stderr.contains("22050") && other.stderr.contains("memo.cut.m4a"), "\(other.stderr)")
        // The same family at the other rate: decodes, but its bitrate names 44.1 kHz.
        let at48 = try fixture.encode("at48.m4a", codec: "aac", rate: 48000, channels: 1)
        let near = try CLI.segno(["repair", damaged, "--reference", at48, "-o", fixture.dir.path + "/b.m4a"])
        #expect(near.status == 0, "\(near.stderr)")
        #expect(near.stderr.contains("warning") && near.stderr.contains("44100 Hz") && near.stderr.contains("48000"), "\(near.stderr)")
        // A matching reference: no warning.
        let same = try CLI.segno(["repair", damaged, "--reference", memo, "-o", fixture.dir.path + "/c.m4a"])
        #expect(same.status == 0 && !same.stderr.contains("warning"), "\(same.stderr)")
    }
}

/// Item 17: `repair` takes a WAV, RF64, AIFF or CAF cut short and sets its sizes to what it holds.
extension FirstHourMoreTests {
    @Test(arguments: ["wav", "rf64", "aiff", "caf"])
    func aPCMFileCutShortGetsItsTrueSizes(ext: String) throws {
        let ws = try RunWorkspace()
        // 2 s of 16-bit stereo at 16 kHz, written by ffmpeg (the independent writer), cut at 60 %
        // and one byte into a frame.
        let whole = ws["whole.\(ext)"]
        let format = ["rf64": ["-rf64", "always", "-f", "wav"], "aiff": ["-c:a", "pcm_s16be"]][ext] ?? []
        let made = try CLI.tool("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000:duration=2",
                                           "-ac", "2"] + format + [whole])
        #expect(made.status == 0, "\(made.stderr)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: whole))
        let cut = ws["cut.\(ext)"]
        try bytes.prefix(bytes.count * 6 / 10 + 1).write(to: URL(fileURLWithPath: cut))
        let out = ws["fixed.\(ext)"]
        let r = try ws.segno(["repair", cut, "-o", out])
        #expect(r.exited(0), "\(r.status) \(r.stderr)")
        #expect(r.stdout.contains("cut.\(ext)") && r.stdout.contains("frames"), "\(r.stdout)")
        // ffprobe's duration is the header's; ffmpeg decodes exactly that many frames, and they
        // are the original's, as far as they go.
        let decoded = try CLI.tool("ffmpeg", ["-nostdin", "-v", "error", "-i", out, "-f", "f32le", "-"])
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
        let frames = decoded.stdoutData.count / 8
        let original = try CLI.tool("ffmpeg", ["-nostdin", "-v", "error", "-i", whole, "-f", "f32le", "-"]).stdoutData
        #expect(decoded.stdoutData == original.prefix(decoded.stdoutData.count))
        #expect(Double(frames) > 0.55 * 32000 && frames < 32000, "\(frames)")
        let probe = try CLI.tool("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", out])
        #expect(abs((Double(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - Double(frames) / 16000) < 0.002, "\(probe.stdout)")
        if ext != "rf64" {
            // sox reads the header's count and finds exactly those samples, without a warning.
            let soxi = try CLI.tool("sox", ["--i", "-s", out])
            #expect(Int(soxi.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == frames, "\(soxi.stdout) \(soxi.stderr)")
            let sox = try CLI.tool("sox", ["-V2", out, "-t", "f32", "-"])
            #expect(sox.status == 0 && !sox.stderr.contains("WARN") && sox.stdoutData.count == frames * 8, "\(sox.stderr)")
        }
        // A healthy file is refused, naming it.
        let healthy = try ws.segno(["repair", whole, "-o", ws["again.\(ext)"]])
        #expect(healthy.exited(1) && healthy.stderr.contains("whole.\(ext)") && healthy.stderr.contains("nothing to repair"), "\(healthy.stderr)")
    }
}

/// Item 17: a FLAC cut short loses its partial last frame and gets a true STREAMINFO.
extension FirstHourMoreTests {
    @Test func aFLACCutShortGetsATrueStreamInfo() throws {
        let ws = try RunWorkspace()
        // 25 s by the reference encoder (flac), with its seek table (a point every 10 s).
        let wav = ws["src.wav"], whole = ws["whole.flac"]
        #expect(try CLI.tool("sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "25", "pinknoise", "vol", "0.5"]).status == 0)
        let made = try CLI.tool("flac", ["-s", "-f", "-o", whole, wav])
        #expect(made.status == 0, "\(made.stderr)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: whole))
        let cut = ws["cut.flac"]
        try bytes.prefix(bytes.count * 6 / 10).write(to: URL(fileURLWithPath: cut))
        #expect(try CLI.tool("flac", ["-t", "-s", cut]).status != 0, "flac -t finds the cut")
        let out = ws["fixed.flac"]
        let r = try ws.segno(["repair", cut, "-o", out])
        #expect(r.exited(0), "\(r.status) \(r.stderr)")
        #expect(r.stdout.contains("cut.flac") && r.stdout.contains("STREAMINFO"), "\(r.stdout)")
        // flac -t decodes every frame and checks the MD5 STREAMINFO now holds.
        let test = try CLI.tool("flac", ["-t", "-s", out])
        #expect(test.status == 0 && test.stderr.isEmpty, "\(test.stderr)")
        let total = try CLI.tool("metaflac", ["--show-total-samples", out]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let decoded = try CLI.tool("ffmpeg", ["-nostdin", "-v", "error", "-i", out, "-f", "s16le", "-"])
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
        #expect(Int(total) == decoded.stdoutData.count / 4, "STREAMINFO \(total), decoded \(decoded.stdoutData.count / 4)")
        let original = try CLI.tool("ffmpeg", ["-nostdin", "-v", "error", "-i", whole, "-f", "s16le", "-"]).stdoutData
        #expect(decoded.stdoutData == original.prefix(decoded.stdoutData.count))
        // Nothing whole was lost: at most one frame (4096 samples) short of what ffmpeg reads of the cut file.
        let fromCut = try CLI.tool("ffmpeg", ["-nostdin", "-v", "quiet", "-i", cut, "-f", "s16le", "-"]).stdoutData.count / 4
        #expect((Int(total) ?? 0) >= fromCut - 4096 && (Int(total) ?? 0) <= fromCut, "\(total) against ffmpeg's \(fromCut)")
        // A healthy FLAC is refused, naming it.
        let healthy = try ws.segno(["repair", whole, "-o", ws["again.flac"]])
        #expect(healthy.exited(1) && healthy.stderr.contains("whole.flac") && healthy.stderr.contains("nothing to repair"), "\(healthy.stderr)")
    }
}

/// Item 17: an MP3 with junk gets its clean frames; a plain cut MP3 keeps as many frames as
/// ffmpeg reads of it.
extension FirstHourMoreTests {
    /// 10 s of MP3 by ffmpeg's LAME, and the byte offsets where its frames start.
    static func mp3(_ ws: RunWorkspace) throws -> (path: String, bytes: Data, frames: [Int]) {
        let mp3 = ws["talk.mp3"]
        let made = try CLI.tool("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=330:sample_rate=44100:duration=10",
                                           "-c:a", "libmp3lame", "-b:a", "128k", mp3])
        #expect(made.status == 0, "\(made.stderr)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: mp3))
        var at = 0, starts: [Int] = []
        if bytes.prefix(3) == Data("ID3".utf8) { at = 10 + bytes[6...9].reduce(0) { $0 << 7 | Int($1 & 0x7F) } }
        while at + 4 <= bytes.count, let f = MPEGFrame(Array(bytes[at..<(at + 4)])) { starts.append(at); at += f.length }
        return (mp3, bytes, starts)
    }

    @Test func anMP3WithJunkGetsItsCleanFrames() throws {
        let ws = try RunWorkspace()
        let (mp3, bytes, starts) = try Self.mp3(ws)
        #expect(starts.count > 300)
        // 3000 bytes of junk between two frames in the middle.
        var rng = SplitMix64(seed: 31)
        let junk = Data((0..<3000).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        let at = starts[starts.count / 2]
        try (bytes.prefix(at) + junk + bytes.dropFirst(at)).write(to: URL(fileURLWithPath: ws["junk.mp3"]))
        let r = try ws.segno(["repair", ws["junk.mp3"], "-o", ws["clean.mp3"]])
        #expect(r.exited(0), "\(r.status) \(r.stderr)")
        #expect(r.stdout.contains("junk.mp3") && r.stdout.contains("3000 bytes"), "\(r.stdout)")
        // The junk was all that was wrong: the repaired file is the original, byte for byte.
        #expect(try Data(contentsOf: URL(fileURLWithPath: ws["clean.mp3"])) == bytes)
        let check = try CLI.tool("ffmpeg", ["-nostdin", "-v", "error", "-i", ws["clean.mp3"], "-f", "null", "-"])
        #expect(check.status == 0 && check.stderr.isEmpty, "\(check.stderr)")
        // The original itself has nothing to repair.
        let healthy = try ws.segno(["repair", mp3, "-o", ws["again.mp3"]])
        #expect(healthy.exited(1) && healthy.stderr.contains("talk.mp3") && healthy.stderr.contains("nothing to repair"), "\(healthy.stderr)")
    }

    @Test func aCutMP3KeepsAsManyFramesAsFFmpegReads() throws {
        let ws = try RunWorkspace()
        let (_, bytes, starts) = try Self.mp3(ws)
        // Cut 100 bytes into a frame.
        try bytes.prefix(starts[starts.count * 6 / 10] + 100).write(to: URL(fileURLWithPath: ws["cut.mp3"]))
        let r = try ws.segno(["repair", ws["cut.mp3"], "-o", ws["fixed.mp3"]])
        #expect(r.exited(0), "\(r.status) \(r.stderr)")
        func decode(_ p: String) throws -> Data { try CLI.tool("ffmpeg", ["-nostdin", "-v", "quiet", "-i", p, "-f", "s16le", "-"]).stdoutData }
        let fromCut = try decode(ws["cut.mp3"]), fixed = try decode(ws["fixed.mp3"])
        #expect(fixed.count == fromCut.count, "\(fixed.count / 2) samples against ffmpeg's \(fromCut.count / 2) from the cut file")
        #expect(fixed == fromCut)
        // The repaired file is whole: every frame complete, as ffprobe counts them.
        let check = try CLI.tool("ffmpeg", ["-nostdin", "-v", "error", "-i", ws["fixed.mp3"], "-f", "null", "-"])
        #expect(check.status == 0 && check.stderr.isEmpty, "\(check.stderr)")
    }
}
