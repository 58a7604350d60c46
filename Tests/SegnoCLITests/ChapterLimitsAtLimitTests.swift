import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Decision 0076, docs/reference/limits.md: exactly `ChapterLimits.count` (999) chapters and a
/// title of exactly `ChapterLimits.titleBytes` (1,024) bytes are carried whole into every output
/// format, read back by ffprobe `-show_chapters` and (MP3) mutagen; one byte more is cut at a
/// character boundary. The source is written by mutagen, never by segno.
@Suite(.serialized) struct ChapterLimitsAtLimitTests {
    /// 1,024 bytes: 511 two-byte "é" and "ab".
    static let longest = String(repeating: "é", count: 511) + "ab"
    /// 1,025 bytes: "a" and 512 "é"; cut at a character boundary it is "a" and 511 "é" (1,023 bytes).
    static let tooLong = "a" + String(repeating: "é", count: 512)
    static let tooLongCut = "a" + String(repeating: "é", count: 511)

    /// The source: 999 chapters of 10 ms on a 10 s tone in a FLAC's `CHAPTERnnn` comments, written
    /// by sox (the audio) and mutagen (the comments); chapter 500 has the longest title, 501 one byte more.
    static func source(_ ws: RunWorkspace) throws -> [String] {
        var titles = (0..<999).map { "c\($0)" }
        titles[500] = longest
        titles[501] = tooLong
        try FileManager.default.createDirectory(atPath: ws["in"], withIntermediateDirectories: true)
        let sox = try CLI.tool("sox", ["-n", "-r", "48000", "-b", "16", "-c", "1", ws["in/many.flac"], "synth", "10", "sine", "440", "vol", "0.2"])
        #expect(sox.status == 0, "sox: \(sox.stderr)")
        try JSONSerialization.data(withJSONObject: titles).write(to: URL(fileURLWithPath: ws["titles.json"]))
        let script = [
            "import json, sys",
            "from mutagen.flac import FLAC",
            "f = FLAC(sys.argv[1])",
            "for i, t in enumerate(json.load(open(sys.argv[2], encoding='utf-8')), 1):",
            "    ms = (i - 1) * 10",
            "    f['CHAPTER%03d' % i] = '00:00:%02d.%03d' % (ms // 1000, ms % 1000)",
            "    f['CHAPTER%03dNAME' % i] = t",
            "f.save()",
        ].joined(separator: "\n")
        let r = try CLI.tool("python3", ["-c", script, ws["in/many.flac"], ws["titles.json"]])
        #expect(r.status == 0, "mutagen: \(r.stderr)")
        return titles
    }

    @Test func exactlyTheMostChaptersAndTheLongestTitleReachEveryFormat() throws {
        let ws = try RunWorkspace()
        let titles = try Self.source(ws)
        let given = try ChaptersTests.probe(ws["in/many.flac"])
        #expect(given.count == 999 && given[500].2 == Self.longest, "mutagen wrote \(given.count) chapters")
        var want = titles
        want[501] = Self.tooLongCut
        try FileManager.default.createDirectory(atPath: ws["out"], withIntermediateDirectories: true)
        for ext in ["mp3", "flac", "opus", "m4a", "wav"] {
            let c = try ws.segno(["convert", "in/many.flac", "out/many.\(ext)"])
            #expect(c.exited(0), "\(ext): \(c.stderr)")
        }
        // ffprobe reads FLAC, Opus and M4A whole: 999 chapters at 10 ms steps, every title.
        for ext in ["flac", "opus", "m4a"] {
            let got = try ChaptersTests.probe(ws["out/many.\(ext)"])
            #expect(got.count == 999, "\(ext): \(got.count) chapters")
            let same = got.map(\.2) == want
            #expect(same, "\(ext): titles differ at \(zip(got.map(\.2), want).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)")
            #expect(got.enumerated().allSatisfy { abs($0.element.0 - Double($0.offset) * 0.01) <= 0.001 }, "\(ext): starts")
        }
        // MP3: mutagen reads the CHAP frames (ffprobe 6 skips a CHAP whose title passes about 256
        // bytes, even in a file mutagen wrote): 999, at their starts, every title.
        let id3 = try ChaptersTests.python(["id3", ws["out/many.mp3"]]) as? [String: Any] ?? [:]
        let chap = id3["chap"] as? [[String: Any]] ?? []
        #expect(chap.count == 999, "\(chap.count)")
        let byStart = chap.sorted { ($0["start_ms"] as? Int ?? 0) < ($1["start_ms"] as? Int ?? 0) }
        #expect(byStart.map { $0["start_ms"] as? Int ?? -1 } == (0..<999).map { $0 * 10 })
        let sameID3 = byStart.map { $0["title"] as? String ?? "" } == want
        #expect(sameID3, "mutagen's titles differ")
        // WAV: a plain RIFF parser reads the cue points and labl titles (ffprobe cuts a labl at
        // 512 bytes): 999 points at 480-sample steps, every title.
        let cues = try ChaptersTests.python(["cues", ws["out/many.wav"]]) as? [String: Any] ?? [:]
        let points = cues["cues"] as? [[String: Any]] ?? []
        #expect(points.count == 999, "\(points.count)")
        #expect(points.map { $0["offset"] as? Int ?? -1 } == (0..<999).map { $0 * 480 })
        let sameRIFF = points.map { $0["label"] as? String ?? "" } == want
        #expect(sameRIFF, "the labl titles differ")
        #expect(points.count == 999 && (points[500]["label"] as? String)?.utf8.count == 1024 && (points[501]["label"] as? String)?.utf8.count == 1023)
    }

    // One more chapter (5,000 CHAP frames, 10,000 cue points) is ChaptersTests.hostileChapterDataFailsAlone.
}
