import Foundation
@testable import SegnoCore
@testable import SegnoSpeech
import SegnoCoreTestSupport
import SegnoAudioTestSupport
import Testing

/// Issue 31 item 20: each transcript segment carries its own confidence. faster-whisper gives
/// every segment of a 30 s window that window's `avg_logprob`; the words' probabilities are the
/// segment's own (decision 0067).
@Suite struct SegmentConfidenceTests {
    @Test func segmentsOfOneWindowGetTheirOwnConfidence() throws {
        // Two segments of one window, as the helper reports them: one avg_logprob for both.
        let json = """
        {"protocol":1,"language":"en","language_probability":1.0,"duration":8.0,"segments":[
         {"start":0.0,"end":2.0,"text":"clear words","avg_logprob":-0.3,"no_speech_prob":0.01,
          "words":[{"start":0.0,"end":1.0,"word":" clear","probability":0.9},{"start":1.0,"end":2.0,"word":" words","probability":0.95}]},
         {"start":4.0,"end":6.0,"text":"mumbled words","avg_logprob":-0.3,"no_speech_prob":0.01,
          "words":[{"start":4.0,"end":5.0,"word":" mumbled","probability":0.4},{"start":5.0,"end":6.0,"word":" words","probability":0.5}]},
         {"start":6.0,"end":7.0,"text":"","avg_logprob":-0.3,"no_speech_prob":0.01,"words":[]}]}
        """
        let t = try #require(Transcript.parse(helperJSON: Array(json.utf8)))
        #expect(abs(t.segments[0].confidence - (0.9 * 0.95).squareRoot()) < 1e-9)
        #expect(abs(t.segments[1].confidence - (0.4 * 0.5).squareRoot()) < 1e-9)
        #expect(t.segments[0].confidence > t.segments[1].confidence)
        // Without words, the window's figure is all there is.
        #expect(abs(t.segments[2].confidence - exp(-0.3)) < 1e-9)
    }

    /// Five recorded utterances with pauses between them, 20 s: one window, several segments,
    /// each with the confidence of its own words.
    @Test func realSegmentsDoNotShareTheWindowsFigure() throws {
        let names = ["0870", "0880", "0890", "0920", "0930"].map { "sense_and_sensibility_01_austen_64kb-\($0).wav" }
        var x: [Float] = []
        for n in names { x += try Speech.utterance(n) + [Float](repeating: 0, count: 16000) }
        #expect(x.count < 30 * 16000)
        let config = TranscribeConfig(path: try PathTemplate("{stem}"), formats: [.json], language: "en")
        defer { config.helpers.shutdown() }
        let text = try TranscribeStageTests.transcribe(x, rate: 16000, config: config)["json"] ?? ""
        let json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let segments = json["segments"] as? [[String: Any]] ?? []
        #expect(segments.count >= 2, "\(text)")
        func n(_ v: Any?) -> Double { (v as? NSNumber)?.doubleValue ?? -1 }
        var seen = Set<Double>()
        for s in segments {
            let words = (s["words"] as? [[String: Any]] ?? []).map { n($0["confidence"]) }
            guard !words.isEmpty else { continue }
            let geometric = exp(words.map { log(max($0, 1e-6)) }.reduce(0, +) / Double(words.count))
            #expect(abs(n(s["confidence"]) - geometric) < 0.002, "\(s)")
            seen.insert(n(s["confidence"]))
        }
        #expect(seen.count >= 2, "every segment has the same confidence: \(segments.map { $0["confidence"] ?? "" })")
    }
}
