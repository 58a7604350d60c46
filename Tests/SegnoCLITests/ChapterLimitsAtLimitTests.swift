import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Decision 0076, docs/reference/limits.md: exactly `ChapterLimits.count` (999) chapters and a
/// title of exactly `ChapterLimits.titleBytes` (1,024) bytes are carried whole into every output
/// format, read back by ffprobe `-show_chapters` and (MP3) mutagen; one byte more is cut at a
/// character boundary.
@Suite(.serialized) struct ChapterLimitsAtLimitTests {
    /// 1,024 bytes: 511 two-byte "é" and "ab".
    static let longest = String(repeating: "é", count: 511) + "ab"
    /// 1,025 bytes: "a" and 512 "é"; cut at a character boundary it is "a" and 511 "é" (1,023 bytes).
    static let tooLong = "a" + String(repeating: "é", count: 512)
    static let tooLongCut = "a" + String(repeating: "é", count: 511)

    /// The source: 999 chapters of 10 ms on a 10 s tone, written by ffmpeg from an ffmetadata
    /// file into a FLAC's CHAPTERnnn comments; chapter 500 has the longest title, 501 one byte more.
    static func source(_ ws: RunWorkspace) throws -> [String] {
        var titles = (0..<999).map { "c\($0)" }
        titles[500] = longest
        titles[501] = tooLong
        var meta = ";FFMETADATA1\n"
        for (i, t) in titles.enumerated() {
            meta += "[CHAPTER]\nTIMEBASE=1/1000\nSTART=\(i * 10)\nEND=\(i * 10 + 10)\ntitle=\(t)\n"
        }
        try meta.write(toFile: ws["meta.txt"], atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: ws["in"], withIntermediateDirectories: true)
        let r = try CLI.tool("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=10:sample_rate=48000",
                                        "-f", "ffmetadata", "-i", ws["meta.txt"], "-map", "0:a", "-map_chapters", "1", ws["in/many.flac"]])
        #expect(r.status == 0, "ffmpeg: \(r.stderr)")
        return titles
    }

    @Test func exactlyTheMostChaptersAndTheLongestTitleReachEveryFormat() throws {
        let ws = try RunWorkspace()
        let titles = try Self.source(ws)
        let given = try ChaptersTests.probe(ws["in/many.flac"])
        #expect(given.count == 999 && given[500].2 == Self.longest, "ffmpeg wrote \(given.count) chapters")
        var want = titles
        want[501] = Self.tooLongCut
        try FileManager.default.createDirectory(atPath: ws["out"], withIntermediateDirectories: true)
        for ext in ["mp3", "flac", "opus", "m4a", "wav"] {
            let c = try ws.segno(["convert", "in/many.flac", "out/many.\(ext)"])
            #expect(c.exited(0), "\(ext): \(c.stderr)")
            let got = try ChaptersTests.probe(ws["out/many.\(ext)"])
            #expect(got.count == 999, "\(ext): \(got.count) chapters")
            #expect(got.map(\.2) == want, "\(ext): titles differ at \(zip(got.map(\.2), want).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)")
            #expect(got.enumerated().allSatisfy { abs($0.element.0 - Double($0.offset) * 0.01) <= 0.001 }, "\(ext): starts")
            #expect(got.count == 999 && got[500].2.utf8.count == 1024 && got[501].2.utf8.count == 1023)
        }
        // mutagen reads the MP3's CHAP frames: 999, the longest title whole.
        let id3 = try ChaptersTests.python(["id3", ws["out/many.mp3"]]) as? [String: Any] ?? [:]
        let chap = id3["chap"] as? [[String: Any]] ?? []
        #expect(chap.count == 999, "\(chap.count)")
        #expect(chap.map { $0["title"] as? String ?? "" }.sorted() == want.sorted())
    }
    // One more chapter (5,000 CHAP frames, 10,000 cue points) is ChaptersTests.hostileChapterDataFailsAlone.
}
