import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoCoreTestSupport
import SegnoDSP
import SegnoTestSupport
import Testing

/// Runs the built `segno` binary as a user would.
@Suite struct CLITests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    /// A good 44.1 kHz stereo FLAC (1 s), a good 8 kHz mono WAV (0.25 s) and four bad files.
    func makeFiles() throws -> (good: [String], bad: [String]) {
        let flac = try Fixtures.writeSine(to: dir["good.flac"], frames: 44100, channels: 2)
        let wav = try Fixtures.writeSine(to: dir["good.wav"], rate: 8000, frames: 2000)
        #expect(FileManager.default.createFile(atPath: dir["empty.wav"], contents: Data()))
        #expect(FileManager.default.createFile(atPath: dir["notes.wav"], contents: Data("not audio at all\n".utf8)))
        try FileManager.default.createDirectory(atPath: dir["folder.wav"], withIntermediateDirectories: false)
        return ([flac, wav], [dir["empty.wav"], dir["notes.wav"], dir["folder.wav"], dir["missing.wav"]])
    }

    // MARK: info

    @Test func infoReportsEachFileAndGoesOn() throws {
        let (good, bad) = try makeFiles()
        let order = [good[0], bad[0], bad[1], good[1], bad[2], bad[3]]
        let r = try CLI.segno(["info"] + order)
        #expect(r.status == 1)
        #expect(r.stdoutLines.count == 2)
        #expect(r.stdoutLines.first?.hasPrefix(good[0] + ": FLAC PCM_16, 44100 Hz, 2 ch, 44100 frames, 1.000 s") == true, "\(r.stdout)")
        #expect(r.stdoutLines.last == good[1] + ": WAV PCM_16, 8000 Hz, 1 ch, 2000 frames, 0.250 s")
        // One line per bad file, in order, each naming its file.
        #expect(r.stderrLines.count == bad.count, "\(r.stderr)")
        for (line, path) in zip(r.stderrLines, bad) { #expect(line.contains(path), "\(line)") }
        #expect(r.stderrLines[0].contains("empty"))
        #expect(r.stderrLines[1].contains("looks like text"))
        #expect(r.stderrLines[2].contains("a folder with no recordings in it"))  // folder.wav is an empty folder
        #expect(r.stderrLines[3].contains("no such file"))
    }

    @Test func infoOnGoodFilesExitsZero() throws {
        let (good, _) = try makeFiles()
        let r = try CLI.segno(["info"] + good)
        #expect(r.status == 0)
        #expect(r.stdoutLines.count == 2)
        #expect(r.stderr.isEmpty)
    }

    @Test func infoJSONIsOneObjectPerFileInInputOrder() throws {
        let (good, bad) = try makeFiles()
        let order = [bad[3], good[0], bad[0], good[1], bad[1], bad[2]]
        let r = try CLI.segno(["info", "--json"] + order)
        #expect(r.status == 1)
        #expect(r.stdoutLines.count == order.count, "\(r.stdout)")
        for (line, path) in zip(r.stdoutLines, order) {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            let o = try #require(object, "not a JSON object: \(line)")
            #expect(o["path"] as? String == path)
            let ok = try #require(o["ok"] as? Bool)
            #expect(ok == good.contains(path))
            if ok {
                #expect(Set(o.keys) == ["path", "ok", "container", "codec", "sample_rate", "channels", "frames", "duration"])
            } else {
                #expect(Set(o.keys) == ["path", "ok", "error"])
                #expect((o["error"] as? String)?.contains(path) == true)
            }
        }
        let flac = try #require(JSONSerialization.jsonObject(with: Data(r.stdoutLines[1].utf8)) as? [String: Any])
        #expect(flac["container"] as? String == "FLAC")
        #expect(flac["codec"] as? String == "PCM_16")
        #expect(flac["sample_rate"] as? Int == 44100)
        #expect(flac["channels"] as? Int == 2)
        #expect(flac["frames"] as? Int == 44100)
        #expect(flac["duration"] as? Double == 1.0)
        let wav = try #require(JSONSerialization.jsonObject(with: Data(r.stdoutLines[3].utf8)) as? [String: Any])
        #expect(wav["duration"] as? Double == 0.25)
    }

    @Test func infoOnAFileNamedWithANewlineKeepsOneLine() throws {
        let odd = try Fixtures.writeSine(to: dir["two\nlines.wav"], rate: 8000, frames: 10)
        let r = try CLI.segno(["info", "--json", odd, dir["missing\nfile.wav"]])
        #expect(r.stdoutLines.count == 2)
        let o = try #require(JSONSerialization.jsonObject(with: Data(r.stdoutLines[0].utf8)) as? [String: Any])
        #expect(o["path"] as? String == odd)
        let text = try CLI.segno(["info", dir["missing\nfile.wav"]])
        #expect(text.stderrLines.count == 1)
    }

    @Test func infoOnAnUnreadableFile() throws {
        let p = try Fixtures.writeSine(to: dir["locked.wav"], rate: 8000, frames: 100)
        #expect(chmod(p, 0) == 0)
        defer { chmod(p, 0o644) }
        let r: ProcessResult
        if geteuid() == 0 {
            // Root reads everything, so run segno as nobody; the test folder must be reachable.
            guard CLI.find("setpriv") != nil else { try Test.cancel("running as root without setpriv (util-linux)") }
            #expect(chmod(dir.path, 0o755) == 0)
            let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups"]
            var exe = try CLI.segnoPath()
            if try CLI.tool("setpriv", asNobody + [exe, "--version"]).status != 0 {
                // The build folder is private to root (a clone under /root): run a copy from here.
                let copy = dir["segno-copy"]
                try FileManager.default.copyItem(atPath: exe, toPath: copy)
                chmod(copy, 0o755)
                exe = copy
                let probe = try CLI.tool("setpriv", asNobody + [exe, "--version"])
                if probe.status != 0 { try Test.cancel("nobody cannot run segno here: \(probe.stderr)") }
            }
            r = try CLI.tool("setpriv", asNobody + [exe, "info", p])
        } else {
            r = try CLI.segno(["info", p])
        }
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderrLines.count == 1)
        #expect(r.stderr.contains(p))
        #expect(r.stderr.lowercased().contains("permission denied"), "\(r.stderr)")
    }

    /// ADTS: exact frames by default (the decoder's count), an estimate flagged only with --fast.
    @Test func infoIsExactUnlessFast() throws {
        let wav = try Fixtures.writeSine(to: dir["in.wav"], rate: 44100, frames: 44_321, channels: 2)
        let aac = dir["memo.aac"]
        #expect(try CLI.tool("ffmpeg", ["-v", "error", "-i", wav, "-c:a", "aac", "-f", "adts", aac]).status == 0)
        let exact = try CLI.segno(["info", "--json", aac])
        #expect(exact.status == 0, "\(exact.stderr)")
        let o = try #require(JSONSerialization.jsonObject(with: Data(exact.stdout.utf8)) as? [String: Any])
        #expect(o["estimated"] == nil)
        // What the decoder yields: decode to WAV and count.
        #expect(try CLI.segno(["convert", aac, dir["decoded.wav"]]).status == 0)
        let decoded = try CLI.tool("sox", ["--i", "-s", dir["decoded.wav"]]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(o["frames"] as? Int == Int(decoded), "\(exact.stdout) vs \(decoded)")
        let fast = try CLI.segno(["info", "--json", "--fast", aac])
        let f = try #require(JSONSerialization.jsonObject(with: Data(fast.stdout.utf8)) as? [String: Any])
        #expect(f["estimated"] as? Bool == true)
        #expect(try CLI.segno(["info", "--fast", aac]).stdout.contains(" about "))
    }

    /// A file with a good header and no decodable audio fails: ok:false, exit 1, file and cause named.
    @Test func infoFailsAFileWithNoDecodableAudio() throws {
        let wav = try Fixtures.writeSine(to: dir["in.wav"], rate: 44100, frames: 44100)
        let flac = dir["bad.flac"]
        #expect(try CLI.tool("ffmpeg", ["-v", "error", "-i", wav, flac]).status == 0)
        var b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: flac)))
        // Keep the metadata blocks, zero the audio frames after them.
        var at = 4
        while b[at] & 0x80 == 0 { at += 4 + (Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3])) }
        at += 4 + (Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3]))
        for i in at..<b.count { b[i] = 0 }
        try Data(b).write(to: URL(fileURLWithPath: flac))
        let r = try CLI.segno(["info", "--json", flac])
        #expect(r.status == 1)
        let o = try #require(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(o["ok"] as? Bool == false)
        #expect((o["error"] as? String)?.hasPrefix(flac + ": ") == true, "\(r.stdout)")
        #expect(try CLI.segno(["info", "--fast", flac]).status == 0)  // the header alone looks fine
    }

    // MARK: convert

    /// What a browser's MediaRecorder uploads: Opus in WebM, through the ffmpeg program.
    @Test func convertReadsWebMOpus() throws {
        let wav = try Fixtures.writeSine(to: dir["in.wav"], rate: 48000, frames: 48000, channels: 2)
        let webm = dir["upload.webm"]
        #expect(try CLI.tool("ffmpeg", ["-v", "error", "-i", wav, "-c:a", "libopus", webm]).status == 0)
        let r = try CLI.segno(["convert", webm, dir["out.flac"], "--mix", "mono"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try CLI.segno(["info", webm]).stdout.contains("WebM Opus, 48000 Hz, 2 ch, 48000 frames"))
        #expect(try CLI.segno(["info", dir["out.flac"]]).stdout.contains("48000 Hz, 1 ch, 48000 frames"))
    }

    @Test func convertFlacTo16kMonoWav() throws {
        let input = try Fixtures.writeSine(to: dir["in.flac"], frequency: 440, rate: 44100, frames: 44100, channels: 2)
        let output = dir["out/voice.wav"]
        // As SoX and ffmpeg: a missing output folder is an error, not created (issue 22); a usage
        // error, exit 2 (issue 31 item 10).
        let missing = try CLI.segno(["convert", input, output, "--rate", "16000", "--mix", "mono"])
        #expect(missing.status == 2 && missing.stderr.contains("does not exist") && dir.contents() == ["in.flac"], "\(missing.stderr)")
        try FileManager.default.createDirectory(atPath: dir["out"], withIntermediateDirectories: false)
        let r = try CLI.segno(["convert", input, output, "--rate", "16000", "--mix", "mono"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(dir.contents() == ["in.flac", "out"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir["out"]) == ["voice.wav"])

        let info = try CLI.segno(["info", "--json", output])
        let o = try #require(JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as? [String: Any])
        #expect(o["container"] as? String == "WAV")
        #expect(o["codec"] as? String == "PCM_16")
        #expect(o["sample_rate"] as? Int == 16000)
        #expect(o["channels"] as? Int == 1)
        #expect(o["frames"] as? Int == 16000)

        // sox agrees on the header…
        #expect(try CLI.tool("sox", ["--i", "-r", output]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "16000")
        #expect(try CLI.tool("sox", ["--i", "-c", output]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        #expect(try CLI.tool("sox", ["--i", "-s", output]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "16000")
        // …and its own conversion of the same file sounds the same (both resamplers are
        // linear-phase and time-aligned, so away from the edges they agree closely).
        let reference = dir["sox.wav"]
        let sox = try CLI.tool("sox", [input, "-r", "16000", "-c", "1", reference])
        #expect(sox.status == 0, "\(sox.stderr)")
        let ours = try Fixtures.soxDecode(output), theirs = try Fixtures.soxDecode(reference)
        #expect(ours.count == 16000)
        #expect(theirs.count == ours.count)
        guard theirs.count == ours.count else { return }
        var worst: Float = 0
        for i in 800..<(ours.count - 800) { worst = max(worst, abs(ours[i] - theirs[i])) }
        #expect(worst < 2e-3, "segno and sox differ by \(worst)")
    }

    @Test func convertKeepsDepthAndFollowsTheExtension() throws {
        let input = try Fixtures.writeSine(to: dir["in.wav"], rate: 48000, frames: 4800, channels: 2, bits: .b24)
        let r = try CLI.segno(["convert", input, dir["out.flac"]])
        #expect(r.status == 0, "\(r.stderr)")
        let info = try CLI.segno(["info", dir["out.flac"]])
        #expect(info.stdout.contains("FLAC PCM_24, 48000 Hz, 2 ch, 4800 frames"), "\(info.stdout)")
        let forced = try CLI.segno(["convert", input, dir["out.bin"], "--format", "caf", "--bits", "16", "--gain=-6"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(try CLI.segno(["info", dir["out.bin"]]).stdout.contains("CAF PCM_16"))
    }

    /// 8-bit and 64-bit float sources keep their depth by default, and come back sample for sample.
    @Test(arguments: [(SampleBits.b8, "in.wav", "out.wav", "PCM_U8"), (.b8, "in.aiff", "out.aiff", "PCM_S8"),
                      (.b8, "in.wav", "out.caf", "PCM_S8"), (.double, "in.wav", "out.wav", "DOUBLE"),
                      (.double, "in.wav", "out.caf", "DOUBLE"), (.double, "in.caf", "out.aiff", "DOUBLE")])
    func convertKeeps8BitAndDoubleDepth(bits: SampleBits, input: String, output: String, codec: String) throws {
        let source = try Fixtures.writeSine(to: dir[input], rate: 16000, frames: 1600, channels: 2, bits: bits)
        let r = try CLI.segno(["convert", source, dir[output]])
        #expect(r.status == 0, "\(r.stderr)")
        let info = try CLI.segno(["info", "--json", dir[output]])
        let o = try #require(JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as? [String: Any])
        #expect(o["codec"] as? String == codec, "\(info.stdout)")
        #expect(o["frames"] as? Int == 1600)
        // The round trip is exact (the sine's float32 values are what a double source holds),
        // read back with libsndfile (sox reads 64-bit float CAF/AIFF as something else).
        func samples(_ path: String) throws -> [Float] {
            let d = try SndFileDecoder(path: path)
            defer { d.close() }
            var block = AudioBlock(channels: d.info.channels, capacity: 4096)
            var out: [Float] = []
            while try d.read(into: &block, maxFrames: 4096) > 0 { out += block.samples[0..<(block.frames * block.channels)] }
            return out
        }
        let back = try samples(dir[output])
        #expect(back.count == 3200)
        #expect(back == (try samples(source)))
    }

    /// An 8-channel (7.1) WAV whose channels carry distinct tones, folded to stereo by convert:
    /// the centre reaches both sides equally, the LFE neither, each surround only its own side.
    @Test func convertFolds7Point1ToStereo() throws {
        let rate = 48000, frames = 4800, n = 8
        let freqs = (0..<n).map { 300.0 + 200.0 * Double($0) }
        var x = [Float](repeating: 0, count: frames * n)
        for f in 0..<frames { for ch in 0..<n { x[f * n + ch] = Float(0.4 * sin(2 * .pi * freqs[ch] * Double(f) / Double(rate))) } }
        try Fixtures.write(x, channels: n, rate: rate, to: dir["surround.wav"], bits: .float, blockFrames: frames)
        let r = try CLI.segno(["convert", dir["surround.wav"], dir["stereo.wav"], "--mix", "stereo"])
        #expect(r.status == 0, "\(r.stderr)")
        let y = try Fixtures.soxDecode(dir["stereo.wav"])
        #expect(y.count == frames * 2)
        guard y.count == frames * 2 else { return }
        func level(_ side: Int, _ ch: Int) -> Double {
            var s = 0.0
            for f in 0..<frames { s += Double(y[f * 2 + side]) * sin(2 * .pi * freqs[ch] * Double(f) / Double(rate)) }
            return 2 * s / Double(frames) / 0.4
        }
        let c = 0.70710678, norm = 1 + 3 * c
        #expect(abs(level(0, 0) - 1 / norm) < 1e-3 && abs(level(1, 0)) < 1e-3, "L")
        #expect(abs(level(1, 1) - 1 / norm) < 1e-3 && abs(level(0, 1)) < 1e-3, "R")
        #expect(abs(level(0, 2) - c / norm) < 1e-3 && abs(level(1, 2) - c / norm) < 1e-3, "C in both")
        #expect(abs(level(0, 3)) < 1e-3 && abs(level(1, 3)) < 1e-3, "LFE dropped")
        for (ch, side) in [(4, 0), (5, 1), (6, 0), (7, 1)] {
            #expect(abs(level(side, ch) - c / norm) < 1e-3 && abs(level(1 - side, ch)) < 1e-3, "surround \(ch)")
        }
    }

    @Test func helpWorks() throws {
        let r = try CLI.segno(["--help"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("info") && r.stdout.contains("convert"))
        let c = try CLI.segno(["convert", "--help"])
        #expect(c.status == 0)
        for option in ["--rate", "--quality", "--mix", "--gain", "--format", "--bits", "--encode-quality"] {
            #expect(c.stdout.contains(option), "convert --help lacks \(option)")
        }
    }

    @Test(arguments: [
        ["convert", "a.wav", "b.wav", "--bogus"],
        ["convert", "a.wav"],
        ["convert", "a.wav", "b.wav", "--mix", "sideways"],
        ["convert", "a.wav", "b.wav", "--rate", "fast"],
        ["convert", "a.wav", "b.xyz"],
        ["info"],
        ["frobnicate"],
    ])
    func badUsageExitsTwo(arguments: [String]) throws {
        let r = try CLI.segno(arguments)
        #expect(r.status == 2, "segno \(arguments.joined(separator: " ")) exited \(r.status): \(r.stderr)")
        #expect(!r.stderr.isEmpty)
    }

    @Test func convertOntoTheInputIsRefused() throws {
        let input = try Fixtures.writeSine(to: dir["in.wav"], rate: 8000, frames: 800)
        let before = try Data(contentsOf: URL(fileURLWithPath: input))
        for output in [input, dir.path + "/./in.wav", dir.path + "/../" + (dir.path as NSString).lastPathComponent + "/in.wav"] {
            let r = try CLI.segno(["convert", input, output])
            #expect(r.status == 2, "convert onto \(output): a usage error, exit 2 (issue 31 item 10): \(r.status)")
            #expect(r.stderr.contains("input"), "\(r.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == before)
        #expect(dir.contents() == ["in.wav"])
    }

    @Test func convertOfAMissingFileNamesIt() throws {
        let r = try CLI.segno(["convert", dir["nope.flac"], dir["out.wav"]])
        // A usage error (exit 2) as in every other command (issue 31 item 10); the first line says it.
        #expect(r.status == 2, "\(r.status) \(r.stderr)")
        #expect(r.stderrLines.first?.contains(dir["nope.flac"]) == true && r.stderrLines.first?.contains("no such file") == true, "\(r.stderr)")
        #expect(dir.contents().isEmpty)
    }

    @Test func convertOfADamagedFileLeavesNoOutput() throws {
        let good = try Fixtures.writeSine(to: dir["good.flac"], frames: 44100, channels: 2)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: good))
        let cut = dir["cut.flac"]
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: cut))
        let r = try CLI.segno(["convert", cut, dir["out.wav"]])
        #expect(r.status == 1)
        #expect(r.stderr.contains(cut))
        #expect(dir.contents() == ["cut.flac", "good.flac"])
    }

    @Test func convertToOpusAt44100SaysToResample() throws {
        let input = try Fixtures.writeSine(to: dir["in.wav"], frames: 4410)
        // As opusenc and ffmpeg: resampled to 48 kHz, said once, naming --rate (issue 22).
        let r = try CLI.segno(["convert", input, dir["out.opus"]])
        #expect(r.status == 0)
        #expect(r.stderr.contains("44100 Hz") && r.stderr.contains("--rate"), "convert names its flag: \(r.stderr)")
        #expect(try CLI.segno(["info", dir["out.opus"]]).stdout.contains("48000 Hz"))
        let ok = try CLI.segno(["convert", input, dir["out.opus"], "--rate", "48000"])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(try CLI.segno(["info", dir["out.opus"]]).stdout.contains("48000 Hz"))
    }
}
