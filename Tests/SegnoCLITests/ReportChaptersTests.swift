import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Issue 32 item 4: the report lists a recording's chapters (from its `chapters` tap's sidecar)
/// beside the waveform, and a click plays the row's audio from that chapter.
@Suite struct ReportChaptersTests {
    @Test func chaptersAreListedBesideTheWaveformAndSeekThePlayer() throws {
        let ws = try RunWorkspace()
        // Three chapters written into an MP3 of a 6 s tone by ffmpeg (ID3 CHAP, an independent writer).
        try RunWorkspace.writeTone(to: ws["tone.wav"], seconds: 6)
        let meta = ";FFMETADATA1\n" + [("Opening", 0), ("Q&A <votes>", 2000), ("Close", 4500)]
            .map { "[CHAPTER]\nTIMEBASE=1/1000\nSTART=\($0.1)\nEND=\($0.1 + 1000)\ntitle=\($0.0)\n" }.joined()
        try meta.write(toFile: ws["meta.txt"], atomically: true, encoding: .utf8)
        let ff = try CLI.tool("ffmpeg", ["-v", "error", "-y", "-i", ws["tone.wav"], "-f", "ffmetadata", "-i", ws["meta.txt"], "-map", "0:a",
                                         "-map_chapters", "1", "-c:a", "libmp3lame", ws["in/talk.mp3"]])
        #expect(ff.status == 0, "\(ff.stderr)")
        _ = try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nretries: 0\nstages:\n"
                             + "  - encode: \"{stem}.ogg\"\n  - chapters: \"{stem}.chapters.json\"\n  - metadata: { path: \"{stem}.meta.json\" }\n")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        let report = try ws.segno(["report", "spec.yaml", "-o", ws["out/report.html"]])
        #expect(report.exited(0), "\(report.stderr)")
        let page = try Chromium.load(ws["out/report.html"])
        #expect((page.check["errors"] as? [Any])?.isEmpty == true, "\(page.check["errors"] ?? "")")
        let chapters = (page.check["chapters"] as? [[Any]] ?? []).map { (($0[0] as? NSNumber)?.doubleValue ?? -1, $0[1] as? String ?? "") }
        #expect(chapters.map(\.0) == [0, 2, 4.5], "\(chapters)")
        #expect(chapters.map(\.1) == ["Opening", "Q&A <votes>", "Close"])
        // A click on the last chapter plays the encoded file from 4.5 s.
        let seek = page.check["chapter_seek"] as? [Any] ?? []
        #expect(seek.first as? String == "talk.ogg" && (seek.last as? NSNumber)?.doubleValue == 4.5, "\(seek)")
        // No speakers tap: no turns drawn, no speakers listed.
        #expect((page.check["turn_bars"] as? [Int])?.allSatisfy { $0 == 0 } == true && (page.check["speakers"] as? [Any])?.isEmpty == true)
    }
}
