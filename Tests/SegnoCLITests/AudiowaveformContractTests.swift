import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// The audiowaveform form of `segno waveform` (`-i`, or `--input-format` alone) keeps
/// audiowaveform 1.10.3's contract (issue 22), as its own OptionHandlerTest checks it
/// (tools/waveform/audiowaveform-suite.sh runs that suite): standard output without `-o`,
/// standard input without `-i`, `txt` and `wav` output, exit 1 and no file for every failure,
/// and its pictures. Checked here on segno's own fixtures against sox, ffmpeg and hand-made bytes.
@Suite struct AudiowaveformContractTests {
    /// A 3 s, 16 kHz stereo tone with noise.
    static func workspace() throws -> RunWorkspace {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["a.wav"], rate: 16000, channels: 2, seconds: 3)
        return ws
    }

    static func bytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }
    static func sh(_ command: String) throws -> ProcessResult { try CLI.tool("sh", ["-c", command]) }

    /// A version 2 `.dat` written byte by byte: 8-bit, 8000 Hz, 64 samples per point.
    static func dat(channels: Int, bits: Int = 8, rate: Int = 8000, spp: Int = 64, values: [Int]) -> [UInt8] {
        func le(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        var out = le(channels == 1 ? 1 : 2) + le(bits == 8 ? 1 : 0) + le(rate) + le(spp) + le(values.count / (2 * channels))
        if channels > 1 { out += le(channels) }
        for v in values { out += bits == 8 ? [UInt8(truncatingIfNeeded: v)] : [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
        return out
    }

    /// RGBA pixels of a PNG as ffmpeg decodes it.
    static func rgba(_ png: String) throws -> [UInt8] {
        Array(try Audio.output(of: "ffmpeg", ["-v", "error", "-nostdin", "-i", png, "-f", "rawvideo", "-pix_fmt", "rgba", "pipe:1"], what: "decode \(png)"))
    }

    @Test func fileOrStandardStreamsGiveTheSameBytesAndNothingBesideTheInput() throws {
        let ws = try Self.workspace()
        let bin = try CLI.segnoPath()
        let ref = try ws.segno(["waveform", "-i", ws["a.wav"], "-o", ws["ref.dat"], "-z", "64", "-b", "8"])
        #expect(ref.exited(0) && ref.stdout.isEmpty, "\(ref.stderr)")
        let ways = [
            "'\(bin)' waveform -i '\(ws["a.wav"])' --output-format dat -z 64 -b 8 > '\(ws["s1.dat"])'",
            "'\(bin)' waveform --input-format wav -o '\(ws["s2.dat"])' -z 64 -b 8 < '\(ws["a.wav"])'",
            "'\(bin)' waveform --input-format wav --output-format dat -z 64 -b 8 < '\(ws["a.wav"])' > '\(ws["s3.dat"])'",
            "cat '\(ws["a.wav"])' | '\(bin)' waveform --input-format wav --output-format dat -z 64 -b 8 > '\(ws["s4.dat"])'",
        ]
        for (k, way) in ways.enumerated() {
            let r = try Self.sh(way)
            #expect(r.status == 0, "\(way): \(r.stderr)")
            #expect(try Self.bytes(ws["s\(k + 1).dat"]) == Self.bytes(ws["ref.dat"]), "\(way)")
        }
        // 8-bit flag, 64 samples per point, 16000 Hz, in audiowaveform's header.
        let head = try Self.bytes(ws["ref.dat"])
        #expect(head[4] == 1 && head[8] == 0x80 && head[9] == 0x3E && head[12] == 64)
        // audiowaveform's default is 16 bits; nothing is written beside the input.
        #expect(try Self.sh("'\(bin)' waveform -i '\(ws["a.wav"])' --output-format json -z 64 > '\(ws["d.json"])'").status == 0)
        #expect(try String(contentsOfFile: ws["d.json"], encoding: .utf8).contains("\"bits\":16"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: ws.root).filter { $0.hasPrefix("a.") } == ["a.wav"])
    }

    @Test func dataConvertsToTextAtItsOwnDepth() throws {
        let ws = try Self.workspace()
        let bin = try CLI.segnoPath()
        try Data(Self.dat(channels: 2, values: [-3, 4, -1, 2, 0, 0, -128, 127])).write(to: URL(fileURLWithPath: ws["two.dat"]))
        let out = try Self.sh("'\(bin)' waveform -i '\(ws["two.dat"])' --output-format txt")
        #expect(out.status == 0 && out.stdout == "-3,4,-1,2\n0,0,-128,127\n", "\(out.stdout) \(out.stderr)")
        let file = try ws.segno(["waveform", "-i", ws["two.dat"], "-o", ws["two.txt"], "-b", "16"])
        #expect(file.exited(0), "\(file.stderr)")
        #expect(try String(contentsOfFile: ws["two.txt"], encoding: .utf8) == "-768,1024,-256,512\n0,0,-32768,32512\n")
        // JSON in, the same text; a zoom or audio in cannot make text (exit 1, no file).
        #expect(try ws.segno(["waveform", "-i", ws["two.dat"], "-o", ws["two.json"]]).exited(0))
        #expect(try Self.sh("'\(bin)' waveform -i '\(ws["two.json"])' --output-format txt").stdout == out.stdout)
        for args in [["-i", ws["two.dat"], "-o", ws["z.txt"], "-z", "128"], ["-i", ws["a.wav"], "-o", ws["z.txt"]]] {
            let r = try ws.segno(["waveform"] + args)
            #expect(r.exited(1) && !FileManager.default.fileExists(atPath: ws["z.txt"]), "\(args): \(r.stderr)")
        }
    }

    @Test func audioBecomesSixteenBitWAVAsSoxDecodesIt() throws {
        let ws = try Self.workspace()
        let bin = try CLI.segnoPath()
        #expect(try CLI.tool("sox", [ws["a.wav"], ws["a.flac"]]).status == 0)
        #expect(try CLI.tool("sox", [ws["a.wav"], "-t", "raw", "-e", "signed", "-b", "16", "-L", ws["a.raw"]]).status == 0)
        let flac = try ws.segno(["waveform", "-i", ws["a.flac"], "-o", ws["f.wav"]])
        #expect(flac.exited(0) && flac.stdout.isEmpty, "\(flac.stderr)")
        let raw = try ws.segno(["waveform", "-i", ws["a.raw"], "--raw-samplerate", "16000", "--raw-channels", "2", "--raw-format", "s16le", "-o", ws["r.wav"]])
        #expect(raw.exited(0), "\(raw.stderr)")
        let piped = try Self.sh("'\(bin)' waveform --input-format flac --output-format wav < '\(ws["a.flac"])' > '\(ws["p.wav"])'")
        #expect(piped.status == 0, "\(piped.stderr)")
        let pcm = try Self.bytes(ws["a.raw"])
        for wav in ["f.wav", "r.wav", "p.wav"] {
            let head = try Self.bytes(ws[wav]).prefix(44)
            #expect(Array(head[0..<4]) == Array("RIFF".utf8) && head[20] == 1 && head[22] == 2 && head[34] == 16, "\(wav)")
            let decoded = try Audio.output(of: "sox", [ws[wav], "-t", "raw", "-e", "signed", "-b", "16", "-L", "-"], what: wav)
            #expect(Array(decoded) == pcm, "\(wav)")
        }
        #expect(try Self.bytes(ws["p.wav"]) == Self.bytes(ws["f.wav"]))
    }

    @Test(arguments: [
        ["-o", "x.mp3"], ["-o", "x.wav"], ["-o", "x.png", "-z", "0"], ["-o", "x.png", "--pixels-per-second", "-1"],
        ["-o", "x.png", "--colors", "test"], ["-o", "x.png", "--waveform-style", "test"],
        ["-o", "x.png", "--waveform-style", "bars", "--bar-style", "test"], ["-o", "x.png", "--waveform-style", "bars", "--bar-gap", "-1"],
        ["-o", "x.png", "--waveform-style", "bars", "--bar-width", "0"], ["-o", "x.json", "--input-format", "txt"],
        ["-o", "x.wav", "--input-format", "raw", "--raw-samplerate", "16000", "--raw-channels", "0", "--raw-format", "s16le"],
        ["-o", "x.wav", "--input-format", "raw", "--raw-samplerate", "16000", "--raw-channels", "1", "--raw-format", "unknown"],
    ])
    func everyFailureExitsOneAndWritesNothing(args: [String]) throws {
        let ws = try Self.workspace()
        let r = try ws.segno(["waveform", "-i", ws["a.wav"]] + args.map { $0.hasPrefix("x.") ? ws[$0] : $0 })
        #expect(r.exited(1) && r.stdout.isEmpty && !r.stderr.isEmpty, "\(args): \(r.status) \(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: ws.root).filter { $0.hasPrefix("x.") }.isEmpty, "\(args)")
    }

    /// audiowaveform's picture: 800 × 250, audacity colours, row = top + h − 1 − ⌊(v + 32768) · h / 65536⌋
    /// in 16-bit units, a border, ticks and 6 × 13 labels.
    @Test func picturesFollowAudiowaveformsDefaultsAndArithmetic() throws {
        let ws = try Self.workspace()
        try Data(Self.dat(channels: 1, bits: 16, values: [-32768, 32767, 0, 0, -16384, 16384])).write(to: URL(fileURLWithPath: ws["m.dat"]))
        #expect(try ws.segno(["waveform", "-i", ws["m.dat"], "-o", ws["n.png"], "-z", "64", "--no-axis-labels"]).exited(0))
        let n = try Self.rgba(ws["n.png"])
        #expect(n.count == 800 * 250 * 4)
        func px(_ p: [UInt8], _ x: Int, _ y: Int) -> [UInt8] { Array(p[(y * 800 + x) * 4..<(y * 800 + x) * 4 + 3]) }
        let wave: [UInt8] = [63, 77, 155], back: [UInt8] = [214, 214, 214], black: [UInt8] = [0, 0, 0]
        #expect((0..<250).allSatisfy { px(n, 0, $0) == wave })
        #expect(px(n, 1, 124) == wave && px(n, 1, 123) == back && px(n, 1, 125) == back)
        #expect(px(n, 2, 62) == wave && px(n, 2, 187) == wave && px(n, 2, 61) == back && px(n, 2, 188) == back)
        #expect(px(n, 3, 124) == back)
        // Labels (the default): border, a tick each second (125 columns), "00:01" from column 111.
        #expect(try ws.segno(["waveform", "-i", ws["m.dat"], "-o", ws["l.png"], "-z", "64"]).exited(0))
        let l = try Self.rgba(ws["l.png"])
        #expect(px(l, 0, 0) == black && px(l, 799, 249) == black && px(l, 400, 0) == black)
        #expect(px(l, 125, 10) == black && px(l, 125, 11) == back && px(l, 125, 239) == black && px(l, 125, 238) == back)
        #expect(px(l, 113, 228) == black && px(l, 112, 228) == back && px(l, 114, 228) == back)  // the top of the "0"
        // Inside the border the lane is rows 1…248: point 2 (±16384) spans rows 62…186.
        #expect(px(l, 0, 1) == black && px(l, 2, 62) == wave && px(l, 2, 186) == wave && px(l, 2, 61) == back && px(l, 2, 187) == back)
    }

    /// MP3 as audiowaveform decodes it (libmad, in the segno-decode helper): its encoder delay and
    /// libmad's 529 samples skipped, the padding kept, samples truncated (>> 13), not rounded.
    /// Checked against ffmpeg's decode: the same samples within 1 (ffmpeg decodes in floating
    /// point), and longer by exactly the padding ffmpeg trims (LAME tag padding − 529).
    @Test func mp3IsDecodedAsAudiowaveformDecodesIt() throws {
        let ws = try Self.workspace()
        #expect(try CLI.tool("ffmpeg", ["-v", "error", "-nostdin", "-i", ws["a.wav"], "-ac", "1", "-c:a", "libmp3lame", "-b:a", "64k", ws["m.mp3"]]).status == 0)
        let r = try ws.segno(["waveform", "-i", ws["m.mp3"], "-o", ws["m.wav"]])
        #expect(r.exited(0), "\(r.stderr)")
        let mine = try Self.bytes(ws["m.wav"]).dropFirst(44)
        let samples = stride(from: mine.startIndex, to: mine.endIndex - 1, by: 2).map { Int(Int16(bitPattern: UInt16(mine[$0]) | UInt16(mine[$0 + 1]) << 8)) }
        let f32 = try Audio.output(of: "ffmpeg", ["-v", "error", "-nostdin", "-i", ws["m.mp3"], "-f", "f32le", "pipe:1"], what: "decode")
        let theirs = f32.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }.map { Int((Double($0) * 32768).rounded(.down)) }
        // The LAME/Lavc tag: 12-bit delay and padding 141 bytes after the Xing/Info magic.
        let mp3 = try Self.bytes(ws["m.mp3"])
        let magic = try #require((0..<2000).first { Array(mp3[$0..<$0 + 4]) == Array("Xing".utf8) || Array(mp3[$0..<$0 + 4]) == Array("Info".utf8) })
        let padding = (Int(mp3[magic + 142]) & 15) << 8 | Int(mp3[magic + 143])
        #expect(samples.count == theirs.count + padding - 529, "\(samples.count) vs \(theirs.count) + \(padding) - 529")
        let n = min(samples.count, theirs.count)
        let off = (0..<n).filter { samples[$0] != theirs[$0] }
        #expect(off.allSatisfy { abs(samples[$0] - theirs[$0]) <= 1 } && off.count * 100 < n, "\(off.count) of \(n) differ")
        // The same samples feed the data: standard input gives the same .dat as the file.
        let bin = try CLI.segnoPath()
        #expect(try Self.sh("'\(bin)' waveform --input-format mp3 --output-format dat -z 64 < '\(ws["m.mp3"])' > '\(ws["m1.dat"])'").status == 0)
        #expect(try ws.segno(["waveform", "-i", ws["m.wav"], "-o", ws["m2.dat"], "-z", "64", "-b", "16"]).exited(0))
        #expect(try Self.bytes(ws["m1.dat"]) == Self.bytes(ws["m2.dat"]))
    }
}
