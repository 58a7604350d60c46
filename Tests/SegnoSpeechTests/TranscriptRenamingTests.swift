import Foundation
@testable import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoSpeech
import Testing

/// Decision 0084: when enrolling a voice changes the names of a recording already transcribed,
/// its transcript is written again from its own files, with no audio and no model: from its JSON
/// byte for byte as the tap writes it, or, without a JSON, by changing the WebVTT voice spans and
/// SRT prefixes in place.
@Suite struct TranscriptRenamingTests {
    static let turns = [
        TranscriptTurn(start: 0.4, end: 5.4, speaker: TranscriptSpeaker(label: "speaker-3")),
        TranscriptTurn(start: 5.9, end: 9.0, speaker: TranscriptSpeaker(label: "speaker-7", name: "Ann")),
    ]

    /// The transcript of `TranscriptSpeakersTests` with the turns above, its times moved by 0.25 s
    /// (a stage before it moved time: 0.25 s cut at the start) when `moved`.
    static func transcript(moved: Bool) throws -> (Transcript, ((Double) -> Double)?) {
        let toSource: ((Double) -> Double)? = moved ? { $0 + 0.25 } : nil
        return (try TranscriptSpeakersTests.transcript().attributed(to: turns, toSource: toSource), toSource)
    }

    @Test(arguments: [false, true])
    func theJSONReadBackWritesEveryFormatByteForByte(moved: Bool) throws {
        let (t, toSource) = try Self.transcript(moved: moved)
        let json = t.json(model: "tiny.en", toSource: toSource)
        let back = try #require(WrittenTranscript(json: Data(json.utf8)))
        #expect(back.model == "tiny.en" && (back.sourceTimes != nil) == moved)
        #expect(back.transcript.json(model: back.model, toSource: back.toSource) == json)
        #expect(back.transcript.webVTT == t.webVTT && back.transcript.srt == t.srt)
        #expect(back.transcript.segments.count == 3, "the second segment was split where the voice changed")
    }

    @Test func newNamesReachEveryFormat() throws {
        let (t, _) = try Self.transcript(moved: false)
        let renamed = t.renamed(["speaker-3": "Mary Ann"])
        #expect(renamed.webVTT.contains("<v Mary Ann> Good morning, all.") && !renamed.webVTT.contains("<v Ann>"), "\(renamed.webVTT)")
        #expect(renamed.webVTT.contains("<v speaker-7>"), "Ann was forgotten: her label shows")
        #expect(renamed.srt.contains("Mary Ann:  Good morning, all.") && renamed.srt.contains("speaker-7: Hello there."), "\(renamed.srt)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(renamed.json(model: "m").utf8)) as? [String: Any])
        let segments = try #require(o["segments"] as? [[String: Any]])
        #expect(segments.map { $0["speaker"] as? String } == ["speaker-3", "speaker-3", "speaker-7"])
        #expect(segments.map { $0["speaker_name"] as? String } == ["Mary Ann", "Mary Ann", nil])
        let words = try #require(segments[0]["words"] as? [[String: Any]])
        #expect(words.allSatisfy { $0["speaker_name"] as? String == "Mary Ann" })
        // Times and text are untouched.
        #expect(renamed.segments.map(\.start) == t.segments.map(\.start) && renamed.segments.map(\.text) == t.segments.map(\.text))
    }

    /// Writes `t` in `formats` to a folder; returns the config and the paths.
    static func write(_ t: Transcript, formats: [TranscribeConfig.Format], in dir: TempDir) throws -> (TranscribeConfig, [String]) {
        let config = TranscribeConfig(path: try PathTemplate("{stem}"), formats: formats)
        let paths = formats.map { dir["m." + $0.rawValue] }
        for (f, p) in zip(formats, paths) {
            let text = switch f { case .vtt: t.webVTT; case .srt: t.srt; case .json: t.json(model: "tiny.en") }
            try Data(text.utf8).write(to: URL(fileURLWithPath: p))
        }
        return (config, paths)
    }

    @Test func theTapRewritesItsFilesFromTheJSON() throws {
        let dir = try TempDir()
        let (t, _) = try Self.transcript(moved: false)
        let (config, paths) = try Self.write(t, formats: [.srt, .json, .vtt], in: dir)
        let after = ["speaker-3": "Mary Ann", "speaker-7": "Ann"]
        let out = try #require(config.renamedSpeakers(paths: paths, before: ["speaker-7": "Ann"], after: after))
        let want = t.renamed(after)
        #expect(out.map { String(decoding: $0, as: UTF8.self) } == [want.srt, want.json(model: "tiny.en"), want.webVTT])
        // Not a transcript JSON: nothing is written.
        try Data("[]".utf8).write(to: URL(fileURLWithPath: paths[1]))
        #expect(config.renamedSpeakers(paths: paths, before: [:], after: after) == nil)
    }

    /// Without a JSON, the cues' voice spans and prefixes change in place: the same bytes as the
    /// files written from the renamed transcript.
    @Test func withoutTheJSONTheCuesChangeInPlace() throws {
        let dir = try TempDir()
        let (t, _) = try Self.transcript(moved: false)
        let (config, paths) = try Self.write(t, formats: [.vtt, .srt], in: dir)
        let after = ["speaker-3": "Mary Ann"]
        let out = try #require(config.renamedSpeakers(paths: paths, before: ["speaker-7": "Ann"], after: after))
        let want = t.renamed(after)
        #expect(String(decoding: out[0], as: UTF8.self) == want.webVTT)
        #expect(String(decoding: out[1], as: UTF8.self) == want.srt)
    }

    /// One shown name for two labels that now show differently: the cues cannot say which they
    /// were, so they are left alone (the runner warns).
    @Test func anAmbiguousNameIsLeftAlone() {
        #expect(Transcript.shownChanges(before: ["speaker-1": "Ann", "speaker-2": "Ann"], after: ["speaker-1": "Ann"]) == nil)
        #expect(Transcript.shownChanges(before: ["speaker-1": "Ann", "speaker-2": "Ann"], after: ["speaker-1": "Bo", "speaker-2": "Bo"]) == ["Ann": "Bo"])
        #expect(Transcript.shownChanges(before: [:], after: ["speaker-4": "Bo"]) == ["speaker-4": "Bo"])
    }
}
