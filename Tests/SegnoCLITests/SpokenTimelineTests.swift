import Foundation
import SegnoTestSupport
import Testing

/// Issue 31 item 2 (decision 0072): `transcribe` after `pauses` hears the shortened stream, yet
/// `find` prints where the words were said in the *source*, and the transcript's JSON names its
/// timeline and carries the source times beside the stream's. The sample is the bundled LibriVox
/// memo, whose utterances' places are known from how it was made (pipelines/spoken/README.md).
@Suite struct SpokenTimelineTests {
    @Test func timesFromAShortenedStreamAreMappedBackToTheSource() throws {
        let segno = try CLI.segnoPath()
        let needed = try CLI.run(segno, ["info", "--formats"]).stdout.split(separator: "\n")
            .filter { ["pauses vad=silero:", "transcribe "].contains(where: $0.hasPrefix) }
        if needed.count < 2 || needed.contains(where: { $0.contains("not installed") }) {
            try Test.cancel("the speech engines are not installed (make deps)")
        }
        let ws = try RunWorkspace()
        try FileManager.default.copyItem(atPath: SpokenFindTests.repo.appendingPathComponent("pipelines/spoken/austen memo.flac").path,
                                         toPath: ws["in/austen memo.flac"])
        try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nretries: 0\nstages:\n"
                         + "  - pauses: { trim: true, shorten: { longer_than: 1s, to: 0.3s } }\n"
                         + "  - transcribe: { path: \"{stem}\", model: tiny.en, language: en }\n")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        let transcript = try RunWorkspace.json(String(contentsOfFile: ws["out/austen memo.json"], encoding: .utf8))
        #expect(transcript["timeline"] as? String == "stream")
        let segments = transcript["segments"] as? [[String: Any]] ?? []
        let words = segments.flatMap { $0["words"] as? [[String: Any]] ?? [] }
        let amiable = try #require(words.first { ($0["word"] as? String)?.lowercased().hasPrefix("amiable") == true }, "\(segments)")
        let streamTime = (amiable["start"] as? NSNumber)?.doubleValue ?? -1
        let sourceTime = (amiable["source_start"] as? NSNumber)?.doubleValue ?? -1
        // "he might even have been made amiable himself" starts at 6.19 s in the source and lasts 3.29 s.
        #expect(sourceTime > 6.19 + 0.8 && sourceTime < 6.19 + 3.29, "amiable said at \(sourceTime) s in the source")
        #expect(streamTime < sourceTime - 1, "the shortened stream comes to it sooner (\(streamTime) s)")
        let find = try ws.segno(["find", "spec.yaml", "amiable", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(find.stdout.utf8)) as? [String: Any]
        let said = (((object?["results"] as? [[String: Any]])?.first?["spoken"]) as? [[String: Any]])?.first
        #expect(((said?["time"] as? NSNumber)?.doubleValue).map { abs($0 - sourceTime) < 0.01 } == true, "\(find.stdout)")
    }
}
