import Foundation
@testable import SegnoCore
@testable import SegnoSpeech
import Testing

/// Issue 30 item 1: a transcript made in the same run as a `speakers` tap says who spoke each
/// segment and word (WebVTT voice spans, SRT prefixes, JSON fields); without one it is written
/// exactly as before (decision 0077).
@Suite struct TranscriptSpeakersTests {
    /// Two segments as the helper reports them; the second's words cross from one voice to another at 6.0 s.
    static let helperJSON = """
    {"protocol":1,"language":"en","language_probability":0.99,"duration":10.0,"segments":[
     {"start":0.5,"end":3.0,"text":" Good morning, all.","avg_logprob":-0.2,"no_speech_prob":0.01,
      "words":[{"start":0.5,"end":1.0,"word":" Good","probability":0.9},{"start":1.0,"end":1.8,"word":" morning,","probability":0.8},
               {"start":1.9,"end":3.0,"word":" all.","probability":0.7}]},
     {"start":4.0,"end":8.0,"text":" Thank you. Hello there.","avg_logprob":-0.3,"no_speech_prob":0.01,
      "words":[{"start":4.0,"end":4.6,"word":" Thank","probability":0.9},{"start":4.6,"end":5.2,"word":" you.","probability":0.6},
               {"start":6.1,"end":6.8,"word":" Hello","probability":0.5},{"start":6.8,"end":8.0,"word":" there.","probability":0.4}]}]}
    """

    static func transcript() throws -> Transcript { try #require(Transcript.parse(helperJSON: Array(helperJSON.utf8))) }

    static let turns = [
        TranscriptTurn(start: 0.4, end: 5.4, speaker: TranscriptSpeaker(label: "speaker-1")),
        TranscriptTurn(start: 5.9, end: 9.0, speaker: TranscriptSpeaker(label: "speaker-2", name: "Alice & <Bob>")),
    ]

    /// Without speakers the writers are byte for byte what they were before issue 30 (the format
    /// written out by hand from the WebVTT, SubRip and transcript-JSON rules).
    @Test func withoutSpeakersTheFilesAreUnchanged() throws {
        let t = try Self.transcript()
        #expect(t.attributed(to: [], toSource: nil) == t)
        #expect(t.webVTT == "WEBVTT\n\n00:00:00.500 --> 00:00:03.000\n Good morning, all.\n\n00:00:04.000 --> 00:00:08.000\n Thank you. Hello there.\n")
        #expect(t.srt == "1\n00:00:00,500 --> 00:00:03,000\n Good morning, all.\n\n2\n00:00:04,000 --> 00:00:08,000\n Thank you. Hello there.\n\n")
        let json = t.json(model: "tiny.en")
        #expect(!json.contains("speaker"))
        #expect(json.contains(#"{"start":0.5,"end":1.0,"word":"Good","confidence":0.9}"#), "\(json)")
        #expect(json.hasPrefix(#"{"version":1,"language":"en","language_confidence":0.99,"duration":10.0,"model":"tiny.en","timeline":"source","text":" Good morning, all.  Thank you. Hello there.","segments":[{"start":0.5,"end":3.0,"text":" Good morning, all.","confidence":"#), "\(json)")
    }

    @Test func aSegmentThatCrossesATurnIsSplitAtItsWords() throws {
        let t = try Self.transcript().attributed(to: Self.turns, toSource: nil)
        #expect(t.segments.count == 3)
        #expect(t.segments.map(\.speaker?.label) == ["speaker-1", "speaker-1", "speaker-2"])
        #expect(t.segments[0].text == " Good morning, all.")  // not split: its own text
        #expect(t.segments[1].text == "Thank you.")
        #expect(t.segments[2].text == "Hello there.")
        // The parts keep the segment's outer edges and meet at the words' times.
        #expect(t.segments[1].start == 4.0 && t.segments[1].end == 5.2)
        #expect(t.segments[2].start == 6.1 && t.segments[2].end == 8.0)
        // Each part's confidence is its own words' geometric mean (decision 0067).
        #expect(abs(t.segments[2].confidence - (0.5 * 0.4).squareRoot()) < 1e-9)
        #expect(t.segments.flatMap(\.words).map(\.speaker?.label) == ["speaker-1", "speaker-1", "speaker-1", "speaker-1", "speaker-1", "speaker-2", "speaker-2"])
    }

    @Test func theWritersCarryTheSpeakers() throws {
        let t = try Self.transcript().attributed(to: Self.turns, toSource: nil)
        let vtt = t.webVTT
        #expect(vtt.contains("00:00:00.500 --> 00:00:03.000\n<v speaker-1> Good morning, all.\n"), "\(vtt)")
        #expect(vtt.contains("00:00:06.100 --> 00:00:08.000\n<v Alice &amp; &lt;Bob&gt;>Hello there.\n"), "\(vtt)")
        let srt = t.srt
        #expect(srt.contains("1\n00:00:00,500 --> 00:00:03,000\nspeaker-1:  Good morning, all.\n"), "\(srt)")
        #expect(srt.contains("3\n00:00:06,100 --> 00:00:08,000\nAlice & <Bob>: Hello there.\n"), "\(srt)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(t.json(model: "tiny.en").utf8)) as? [String: Any])
        let segments = try #require(o["segments"] as? [[String: Any]])
        #expect(segments.map { $0["speaker"] as? String } == ["speaker-1", "speaker-1", "speaker-2"])
        #expect(segments[0]["speaker_name"] == nil)
        #expect(segments[2]["speaker_name"] as? String == "Alice & <Bob>")
        let words = segments.flatMap { $0["words"] as? [[String: Any]] ?? [] }
        #expect(words.map { $0["speaker"] as? String } == ["speaker-1", "speaker-1", "speaker-1", "speaker-1", "speaker-1", "speaker-2", "speaker-2"])
    }

    /// After `pauses` the transcript's times are on the shortened stream: they are mapped to the
    /// source before they meet the turns (which are in source seconds).
    @Test func streamTimesAreMappedToTheSourceFirst() throws {
        // 3 s were cut at 5.2 s of the source: stream 6.1 is source 9.1.
        let turns = [TranscriptTurn(start: 0, end: 8.5, speaker: TranscriptSpeaker(label: "speaker-1")),
                     TranscriptTurn(start: 8.6, end: 12, speaker: TranscriptSpeaker(label: "speaker-2"))]
        let t = try Self.transcript().attributed(to: turns, toSource: { $0 < 5.2 ? $0 : $0 + 3 })
        #expect(t.segments.map(\.speaker?.label) == ["speaker-1", "speaker-1", "speaker-2"])
        let unmapped = try Self.transcript().attributed(to: turns, toSource: nil)
        #expect(unmapped.segments.count == 2 && unmapped.segments.allSatisfy { $0.speaker?.label == "speaker-1" })
    }

    @Test func wordsBetweenTurnsTakeTheNearestWithinReach() {
        let turns = [TranscriptTurn(start: 0, end: 2, speaker: TranscriptSpeaker(label: "speaker-1")),
                     TranscriptTurn(start: 10, end: 12, speaker: TranscriptSpeaker(label: "speaker-2"))]
        #expect(Transcript.speaker(turns, from: 2.5, to: 2.9)?.label == "speaker-1")
        #expect(Transcript.speaker(turns, from: 9.2, to: 9.5)?.label == "speaker-2")
        #expect(Transcript.speaker(turns, from: 5, to: 6) == nil)
        // Overlap wins over nearness: 1.9…3.9 overlaps speaker-1 by 0.1 s.
        #expect(Transcript.speaker(turns, from: 1.9, to: 3.9)?.label == "speaker-1")
        // The turn overlapped most.
        #expect(Transcript.speaker(turns + [TranscriptTurn(start: 2, end: 5, speaker: TranscriptSpeaker(label: "speaker-3"))], from: 1.5, to: 4)?.label == "speaker-3")
    }

    /// A segment without words goes whole to the turn it overlaps most.
    @Test func aSegmentWithoutWordsIsNotSplit() {
        let t = Transcript(language: "en", languageConfidence: 1, duration: 10,
                           segments: [.init(start: 4, end: 8, text: "hm", confidence: 0.5, words: [])])
        let a = t.attributed(to: Self.turns, toSource: nil)
        // 4…8 s overlaps speaker-1 for 1.4 s and speaker-2 for 2.1 s.
        #expect(a.segments.count == 1 && a.segments[0].speaker?.label == "speaker-2")
        #expect(a.webVTT.contains("<v Alice &amp; &lt;Bob&gt;>hm"))
    }
}
