import Foundation
@testable import SegnoCore
import Testing

/// The report's and `find`'s readers of the `speakers` tap's turn file and the `chapters` tap's
/// sidecars (issues 30 and 32), on files written by hand in each documented form.
@Suite struct SpeakerTurnsAndChaptersFileTests {
    static let turns = #"""
    [{"start":0.5,"end":4.0,"speaker":"speaker-1","confidence":0.91},
     {"start":4.4,"end":6.0,"speaker":"speaker-2","name":"Alice","confidence":0.88,"stream_start":4.0,"stream_end":5.6},
     {"start":6.5,"end":12.5,"speaker":"speaker-1","confidence":0.9}]
    """#

    @Test func aTurnFileIsReadWithNamesAndTotals() throws {
        let t = try #require(SpeakerTurnsFile.parse(Data(Self.turns.utf8)))
        #expect(t.map(\.label) == ["speaker-1", "speaker-2", "speaker-1"])
        #expect(t[1].name == "Alice" && t[1].shown == "Alice" && t[0].shown == "speaker-1")
        let totals = SpeakerTurnsFile.totals(t)
        #expect(totals.map(\.speaker) == ["speaker-1", "Alice"])
        #expect(abs(totals[0].seconds - 9.5) < 1e-9 && abs(totals[1].seconds - 1.6) < 1e-9)
        #expect(abs(totals[0].share - 9.5 / 11.1) < 1e-9 && abs(totals[0].share + totals[1].share - 1) < 1e-9)
        #expect(SpeakerTurnsFile.searchWords(t) == "speaker-1 speaker-2 Alice")
        #expect(t[1].isSpoken(by: "alice") && t[1].isSpoken(by: "SPEAKER-2") && !t[1].isSpoken(by: "speaker-1") && !t[0].isSpoken(by: "speaker-10"))
    }

    @Test func otherJSONIsNotATurnFile() {
        #expect(SpeakerTurnsFile.parse(Data(#"{"version":1,"segments":[]}"#.utf8)) == nil)
        #expect(SpeakerTurnsFile.parse(Data(#"[{"start":1,"end":2}]"#.utf8)) == nil)
        #expect(SpeakerTurnsFile.parse(Data("not json".utf8)) == nil)
        #expect(SpeakerTurnsFile.parse(Data("[]".utf8)) == [])
    }

    @Test func chapterSidecarsInEachForm() throws {
        let vtt = "WEBVTT\n\n1\n00:00:00.000 --> 00:01:05.250\nOpening\n\n2\n00:01:05.250 --> 00:02:00.000\nQ&A -> votes\n"
        let psc = """
        <?xml version="1.0" encoding="UTF-8"?>
        <psc:chapters version="1.2" xmlns:psc="http://podlove.org/simple-chapters">
          <psc:chapter start="00:00:00.000" title="Opening"/>
          <psc:chapter start="00:01:05.250" title="Q&amp;A &quot;votes&quot;"/>
        </psc:chapters>
        """
        let json = #"{"version":"1.2.0","chapters":[{"startTime":65.25,"title":"Q&A"},{"startTime":0.0,"endTime":65.25,"title":"Opening"}]}"#
        // peaks.js (`format: peaks`): the segments are the chapters, the points (markers) are not.
        let peaks = #"{"segments":[{"startTime":65.25,"endTime":120,"labelText":"Q&A"},{"startTime":0,"endTime":65.25,"labelText":"Opening"}],"points":[{"time":3,"labelText":"clap"}]}"#
        for (text, second) in [(vtt, "Q&A -> votes"), (psc, "Q&A \"votes\""), (json, "Q&A"), (peaks, "Q&A")] {
            let c = try #require(ChapterSidecarFile.parse(text))
            #expect(c.map(\.start) == [0, 65.25], "\(text)")
            #expect(c.map(\.title) == ["Opening", second], "\(text)")
        }
        #expect(ChapterSidecarFile.parse("[1,2]") == nil)
    }
}
