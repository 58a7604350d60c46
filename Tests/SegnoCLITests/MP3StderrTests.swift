import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Issue 12 item 8: no third-party library writes to segno's stderr. libmpg123 (through
/// libsndfile) used to print "Note: Illegal Audio-MPEG-Header …" and "Warning: Xing stream size
/// off …" for damaged MP3s; segno now decodes MP3 with libmpg123 silenced and says what it met in
/// its own words.
@Suite struct MP3StderrTests {
    /// An MP3 (LAME, with a Xing/Info header) of `frames` frames, with 3000 bytes of junk spliced
    /// into the middle (a zeroed stretch, or random bytes that may fake a frame header) and the
    /// header's byte count (and, with `wrongLength`, its frame count) made wrong.
    static func damagedMP3(_ ws: RunWorkspace, name: String, frames: Int, wrongLength: Bool, randomJunk: Bool = false) throws -> String {
        var rng = SplitMix64(seed: 11)
        try RunWorkspace.writeTone(to: ws["src-\(name).wav"], rate: 44100, channels: 2, frames: frames, rng: &rng)
        let made = try CLI.tool("ffmpeg", ["-v", "error", "-nostdin", "-y", "-i", ws["src-\(name).wav"], "-c:a", "libmp3lame", "-b:a", "128k", ws["clean-\(name).mp3"]])
        #expect(made.status == 0, "\(made.stderr)")
        var b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ws["clean-\(name).mp3"])))
        let tag = try #require((0..<(b.count - 4)).first { b[$0..<($0 + 4)].elementsEqual("Info".utf8) || b[$0..<($0 + 4)].elementsEqual("Xing".utf8) })
        // Flags (4 bytes), frame count (4), byte count (4), all big-endian.
        if wrongLength { b[tag + 11] = b[tag + 11] / 2 }   // the frame count's low byte (under 256 frames here)
        b[tag + 13] = b[tag + 13] &+ 0x40
        let mid = b.count / 2
        var s: UInt64 = 0xBAD
        let junk = (0..<3000).map { _ in s ^= s << 13; s ^= s >> 7; s ^= s << 17; return randomJunk ? UInt8(truncatingIfNeeded: s) : 0 }
        let path = ws["in/\(name).mp3"]
        try Data(b[..<mid] + junk + b[mid...]).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func foreignLines(_ stderr: String) -> [String] {
        stderr.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("segno") }
    }

    @Test func damagedMP3sLeaveNothingButSegnosOwnLinesOnStderr() throws {
        let ws = try RunWorkspace()
        let spliced = try Self.damagedMP3(ws, name: "spliced", frames: 88_200, wrongLength: false)
        let shortened = try Self.damagedMP3(ws, name: "shortened", frames: 88_200, wrongLength: true)
        let wrecked = try Self.damagedMP3(ws, name: "wrecked", frames: 88_200, wrongLength: false, randomJunk: true)

        let info = try ws.segno(["info", spliced, shortened, wrecked])
        #expect(Self.foreignLines(info.stderr).isEmpty, "\(info.stderr)")
        #expect(info.stdout.contains("spliced.mp3: MPEG-1/2 MP3, 44100 Hz, 2 ch, 88200 frames"), "\(info.stdout)")

        let convert = try ws.segno(["convert", spliced, ws["spliced.wav"]])
        #expect(convert.exited(0), "\(convert.stderr)")
        #expect(Self.foreignLines(convert.stderr).isEmpty, "\(convert.stderr)")
        #expect(convert.stderr.contains("segno: warning: \(spliced): damaged MP3: skipped 3000 bytes of junk between frames"), "\(convert.stderr)")
        // Gapless parity: the length the clean file had through libsndfile (its LAME tag's).
        let out = try ws.segno(["info", "spliced.wav"])
        #expect(out.stdout.contains("88200 frames"), "\(out.stdout)")

        try ws.writeSpec(SafetyTests.spec(input: "root: in, settle: 0s, include: [\"**/*.mp3\"]", stages: ["encode: { path: \"{stem}.flac\" }"]))
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(1), "\(run.stderr)")
        #expect(Self.foreignLines(run.stderr).isEmpty, "\(run.stderr)")
        #expect(run.stderr.contains("shortened.mp3: damaged MP3: its Xing/Info header declares 43"), "\(run.stderr)")
        #expect(run.stderr.contains("spliced.mp3: damaged MP3: skipped 3000 bytes"), "\(run.stderr)")
        // Random junk that fakes a frame header ends libmpg123's stream: the recording fails, in one line.
        #expect(run.stderr.contains("segno: \(wrecked): decode failed: damaged MP3: "), "\(run.stderr)")
        #expect(run.stdout.contains("2 done, 1 failed"), "\(run.stdout)")
    }
}
