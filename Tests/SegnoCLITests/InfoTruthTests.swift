import Foundation
import SegnoAudioTestSupport
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// `segno info` decodes to the end and reports what decodes, whatever the header claims; `--fast`
/// reads the header only and says so; a folder lists its recordings. Each count is checked against
/// ffmpeg's own decode of the same file (written to WAV, counted by SoX), and the lies against
/// mutagen's reading of the header.
@Suite struct InfoTruthTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    /// Frames ffmpeg decodes from `path` (it keeps what decodes before an error).
    func ffmpegFrames(_ path: String) throws -> Int {
        let wav = dir["ffmpeg-\(UUID().uuidString).wav"]
        _ = try CLI.tool("ffmpeg", ["-v", "quiet", "-i", path, "-c:a", "pcm_s16le", wav])
        return Int(try CLI.tool("sox", ["--i", "-s", wav]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// The frames mutagen says an MP3 holds (it trusts a Xing header, and estimates from the file's size without one).
    func mutagenFrames(_ path: String) throws -> Int {
        let r = try CLI.tool("python3", ["-c", "import sys, mutagen.mp3; i = mutagen.mp3.MP3(sys.argv[1]).info; print(round(i.length * i.sample_rate))", path])
        return Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    func object(_ line: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
    }

    func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }
    func write(_ b: [UInt8], _ path: String) throws { try Data(b).write(to: URL(fileURLWithPath: path)) }

    /// A 3 s stereo FLAC in 4096-frame blocks whose audio after the sixth block is junk that holds
    /// no sync code: libFLAC, libsndfile and ffmpeg all stop after 24,576 frames.
    @Test func aFLACThatLosesSyncIsNotOKAndGivesTheFramesThatDecode() throws {
        let wav = try Fixtures.writeSine(to: dir["in.wav"], rate: 44100, frames: 132_300, channels: 2)
        let flac = dir["lost.flac"]
        #expect(try CLI.tool("ffmpeg", ["-v", "error", "-i", wav, "-frame_size", "4096", flac]).status == 0)
        var b = try bytes(flac)
        // Frame headers: sync 0xFFF8, then block size 4096 (code 12) and 44.1 kHz (code 9).
        let frames = (0..<(b.count - 2)).filter { b[$0] == 0xFF && b[$0 + 1] == 0xF8 && b[$0 + 2] == 0xC9 }
        try #require(frames.count > 20, "\(frames.count) frame headers")
        var s: UInt32 = 12345
        for i in frames[6]..<b.count { s = s &* 1_103_515_245 &+ 12345; b[i] = UInt8(truncatingIfNeeded: s >> 16) & 0x7F }
        try write(b, flac)
        #expect(try ffmpegFrames(flac) == 24_576)

        let r = try CLI.segno(["info", "--json", flac])
        #expect(r.status == 1, "\(r.stdout)")
        let o = try object(r.stdout)
        #expect(o["ok"] as? Bool == false)
        #expect((o["error"] as? String)?.hasPrefix(flac + ": ") == true, "\(r.stdout)")
        #expect(o["frames"] as? Int == 24_576, "\(r.stdout)")
        #expect(o["header_frames"] as? Int == 132_300, "\(r.stdout)")
        #expect(o["frames_from"] == nil)  // decoded: DESIGN's fields, nothing more
        let text = try CLI.segno(["info", flac])
        #expect(text.status == 1 && text.stdout.isEmpty)
        #expect(text.stderr.contains("decoded: 24576 frames (0.557 s) of the 132300 its header declares"), "\(text.stderr)")

        // --fast reads the header alone, and says so.
        let fast = try object(try CLI.segno(["info", "--json", "--fast", flac]).stdout)
        #expect(fast["ok"] as? Bool == true && fast["frames"] as? Int == 132_300 && fast["frames_from"] as? String == "header", "\(fast)")
        #expect(try CLI.segno(["info", "--fast", flac]).stdout.contains("132300 frames, 3.000 s (from the header, not decoded)"))
    }

    /// An MP3 whose Xing header claims twice the frames that follow (mutagen believes it): the
    /// frames are those ffmpeg decodes from the same file, and the file fails as a run fails it.
    @Test func anMP3WhoseXingHeaderLiesGetsTheDecodedFrames() throws {
        let wav = try Fixtures.writeSine(to: dir["in.wav"], rate: 44100, frames: 220_500, channels: 2)
        let mp3 = dir["lies.mp3"]
        #expect(try CLI.tool("ffmpeg", ["-v", "error", "-i", wav, "-c:a", "libmp3lame", "-q:a", "4", mp3]).status == 0)
        var b = try bytes(mp3)
        let names: Set<[UInt8]> = [Array("Xing".utf8), Array("Info".utf8)]
        let found: Int? = (0..<8192).first { (at: Int) -> Bool in names.contains(Array(b[at..<(at + 4)])) }
        let tag = try #require(found)
        try #require(b[tag + 7] & 1 == 1, "the Xing header has a frame count")
        let declared = Int(b[tag + 8]) << 24 | Int(b[tag + 9]) << 16 | Int(b[tag + 10]) << 8 | Int(b[tag + 11])
        for (i, v) in withUnsafeBytes(of: UInt32(declared * 2).bigEndian, Array.init).enumerated() { b[tag + 8 + i] = v }
        try write(b, mp3)
        let decoded = try ffmpegFrames(mp3)
        #expect(try mutagenFrames(mp3) > decoded * 19 / 10)  // the header's lie, as a tag reader sees it

        let r = try CLI.segno(["info", "--json", mp3])
        let o = try object(r.stdout)
        #expect(r.status == 1 && o["ok"] as? Bool == false, "\(r.stdout)")
        #expect(o["frames"] as? Int == decoded, "\(r.stdout)")
        #expect((o["header_frames"] as? Int ?? 0) > decoded * 19 / 10, "\(r.stdout)")
    }

    /// APEv2 (with a 3,000-byte item), Lyrics3v2 and ID3v1 after the audio of a CBR MP3 without a
    /// length header and of a VBR one with: ok, with the frames ffmpeg decodes from the untagged file.
    /// mutagen counts the CBR file's tags as audio; ffmpeg decodes more from the tagged VBR file.
    @Test(arguments: [["-b:a", "128k", "-write_xing", "0"], ["-q:a", "4"]])
    func anMP3WithTrailingAPEv2AndLyrics3TagsGetsTheDecodedFrames(options: [String]) throws {
        let wav = try Fixtures.writeSine(to: dir["in.wav"], rate: 44100, frames: 220_500, channels: 2)
        let plain = dir["plain.mp3"], tagged = dir["tagged.mp3"]
        #expect(try CLI.tool("ffmpeg", ["-v", "error", "-i", wav, "-c:a", "libmp3lame"] + options + [plain]).status == 0)
        try write(try bytes(plain) + Self.apev2(["Title": "A title", "Comment": String(repeating: "x", count: 3000)])
                  + Self.lyrics3v2(["LYR": "Some words of a song", "ETT": "A title"]) + Self.id3v1(title: "A title"), tagged)
        let truth = try ffmpegFrames(plain)
        if options.contains("-write_xing") { #expect(try mutagenFrames(tagged) > truth + 4000) }

        let r = try CLI.segno(["info", "--json", tagged])
        let o = try object(r.stdout)
        #expect(r.status == 0 && o["ok"] as? Bool == true, "\(r.stdout) \(r.stderr)")
        #expect(o["frames"] as? Int == truth, "\(r.stdout)")
    }

    /// An APEv2 tag with header and footer (items: size and flags little-endian, key, NUL, value).
    static func apev2(_ items: [String: String]) -> [UInt8] {
        var body: [UInt8] = []
        for (k, v) in items.sorted(by: { $0.key < $1.key }) {
            body += le32(v.utf8.count) + le32(0) + Array(k.utf8) + [0] + Array(v.utf8)
        }
        func frame(_ flags: UInt32) -> [UInt8] {
            Array("APETAGEX".utf8) + le32(2000) + le32(body.count + 32) + le32(items.count) + le32(Int(flags)) + [UInt8](repeating: 0, count: 8)
        }
        return frame(0xA000_0000) + body + frame(0x8000_0000)
    }

    /// A Lyrics3 v2.00 tag: `LYRICSBEGIN`, fields (id, 5-digit size, value), 6-digit size, `LYRICS200`.
    static func lyrics3v2(_ fields: [String: String]) -> [UInt8] {
        var tag = Array("LYRICSBEGIN".utf8) + Array("IND0000210".utf8)
        for (k, v) in fields.sorted(by: { $0.key < $1.key }) { tag += Array((k + String(format: "%05d", v.utf8.count) + v).utf8) }
        return tag + Array(String(format: "%06d", tag.count).utf8) + Array("LYRICS200".utf8)
    }

    static func id3v1(title: String) -> [UInt8] {
        let t = Array(title.utf8.prefix(30))
        return Array("TAG".utf8) + t + [UInt8](repeating: 0, count: 125 - t.count)
    }

    static func le32(_ v: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(v).littleEndian, Array.init) }

    /// A folder lists its recordings, recursively, sorted, hidden files and other files left out;
    /// one line each, or one JSON object per line. A folder with none fails in its place.
    @Test func aFolderListsItsRecordings() throws {
        try FileManager.default.createDirectory(atPath: dir["rec/sub"], withIntermediateDirectories: true)
        _ = try Fixtures.writeSine(to: dir["rec/b.wav"], rate: 8000, frames: 800)
        _ = try Fixtures.writeSine(to: dir["rec/sub/a.flac"], rate: 8000, frames: 1600)
        _ = try Fixtures.writeSine(to: dir["rec/.hidden.wav"], rate: 8000, frames: 800)
        #expect(FileManager.default.createFile(atPath: dir["rec/notes.txt"], contents: Data("x".utf8)))
        let r = try CLI.segno(["info", dir["rec"]])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdoutLines.count == 2, "\(r.stdout)")
        #expect(r.stdoutLines.first?.hasPrefix(dir["rec/b.wav"] + ": WAV PCM_16, 8000 Hz, 1 ch, 800 frames") == true, "\(r.stdout)")
        #expect(r.stdoutLines.last?.hasPrefix(dir["rec/sub/a.flac"] + ": FLAC PCM_16, 8000 Hz, 1 ch, 1600 frames") == true, "\(r.stdout)")
        let j = try CLI.segno(["info", "--json", dir["rec"] + "/", dir["rec/b.wav"]])
        #expect(try j.stdoutLines.map { try object($0)["path"] as? String } == [dir["rec/b.wav"], dir["rec/sub/a.flac"], dir["rec/b.wav"]])
        try FileManager.default.createDirectory(atPath: dir["empty"], withIntermediateDirectories: false)
        let e = try CLI.segno(["info", "--json", dir["empty"], dir["rec/b.wav"]])
        #expect(e.status == 1 && e.stdoutLines.count == 2, "\(e.stdout)")
        #expect(e.stdoutLines.first?.contains(#""ok":false,"error":"\#(dir["empty"]): a folder with no recordings in it"#) == true, "\(e.stdout)")
    }
}
