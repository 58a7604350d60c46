import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// pipelines/spoken-memos.yaml on its bundled LibriVox sample, then `segno find` by a spoken word:
/// the memo is found with the time the word was said, inside the utterance that holds it (whose
/// place in the sample is known from how the sample was made, pipelines/spoken/README.md); the
/// word stays findable when a later run redoes another tap but not the transcript; the HTML
/// report (in headless Chromium) lists the transcript and a click on a line seeks the source's player.
@Suite struct SpokenFindTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func findPrintsTheTimeASpokenWordWasSaid() throws {
        let segno = try CLI.segnoPath()
        let needed = try CLI.run(segno, ["info", "--formats"]).stdout.split(separator: "\n")
            .filter { ["denoise deepfilter:", "pauses vad=silero:", "transcribe "].contains(where: $0.hasPrefix) }
        if needed.count < 4 || needed.contains(where: { $0.contains("not installed") }) {
            try Test.cancel("the speech engines are not installed (make deps)")
        }
        let dir = try TempDir()
        let spec = Self.repo.appendingPathComponent("pipelines/spoken-memos.yaml").path
        let env = ["SEGNO_SPOKEN_INPUT": Self.repo.appendingPathComponent("pipelines/spoken").path, "SEGNO_OUTPUT": dir["out"],
                   "SEGNO_SPOKEN_UPLOAD": dir["up"]]
        let run = try CLI.run(segno, ["run", spec], environment: env)
        #expect(run.status == 0, "\(run.stderr)")
        // "he might even have been made amiable himself" starts at 0.6 + 2.99 + 2.6 = 6.19 s and lasts 3.29 s.
        func check(_ label: String) throws {
            let text = try CLI.run(segno, ["find", spec, "amiable"], environment: env)
            #expect(text.status == 0)
            let line = text.stdout.split(separator: "\n").first { $0.hasPrefix("austen memo.flac 00:0") }
            #expect(line?.contains("amiable") == true, "\(label): \(text.stdout)")
            let json = try CLI.run(segno, ["find", spec, "AMIABLE", "--json"], environment: env)
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            let hit = (object?["results"] as? [[String: Any]])?.first
            let said = (hit?["spoken"] as? [[String: Any]])?.first
            let time = (said?["time"] as? NSNumber)?.doubleValue ?? -1
            #expect(time > 6.19 + 0.8 && time < 6.19 + 3.29, "\(label): amiable said at \(time) s")
            if let line, time >= 0 { #expect(line.contains(String(format: "00:%02d", Int(time))), "\(label): \(line)") }
            // A word from the other utterance, and one never said.
            #expect(try CLI.run(segno, ["find", spec, "young", "man"], environment: env).stdout.contains("austen memo.flac 00:0"))
            #expect(try CLI.run(segno, ["find", spec, "dentist"], environment: env).stdout.contains("no recordings match"))
        }
        try check("first run")
        // The HTML report shows the transcript; a click on a line seeks the source's player to it.
        let report = try CLI.run(segno, ["report", spec, "-o", dir["report.html"]], environment: env)
        #expect(report.status == 0, "\(report.stderr)")
        let page = try Chromium.load(dir["report.html"])
        let transcript = try RunWorkspace.json(String(contentsOfFile: dir["out/austen memo.json"], encoding: .utf8))
        let segments = transcript["segments"] as? [[String: Any]] ?? []
        #expect(page.check["cues"] as? Int == segments.count && !segments.isEmpty, "\(page.check)")
        let seek = page.check["seek"] as? [Any]
        #expect((seek?.first as? String)?.hasSuffix("pipelines/spoken/austen%20memo.flac") == true, "\(String(describing: seek))")
        #expect((seek?.last as? NSNumber)?.doubleValue == (segments.last?["start"] as? NSNumber)?.doubleValue)
        let again = try CLI.run(segno, ["run", spec, "--force=encode"], environment: env)
        #expect(again.status == 0, "\(again.stderr)")
        try check("after a run that redid encode only")
    }
}
