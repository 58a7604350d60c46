import Foundation
import SegnoCore

/// A transcript segno wrote, read back from its JSON: what `Transcript.json(model:toSource:)`
/// needs to write the same file again (decision 0084).
package struct WrittenTranscript {
    package var transcript: Transcript
    package var model: String
    /// Source seconds of every stream time the JSON gives them for (`source_start`/`source_end`);
    /// nil when its timeline is the source's.
    package var sourceTimes: [Double: Double]?

    /// The map `json(model:toSource:)` is given: the recorded source time of each stream time.
    package var toSource: ((Double) -> Double)? {
        sourceTimes.map { times in { times[$0] ?? $0 } }
    }

    /// The largest transcript JSON read back (a 10-hour recording's is a few MB).
    package static let largest = 64 << 20

    /// Reads segno's transcript JSON (version 1); nil when `data` is not one.
    package init?(json data: Data) {
        guard data.count <= Self.largest, let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any], o["version"] as? Int == 1,
              let model = o["model"] as? String, let segs = o["segments"] as? [[String: Any]] else { return nil }
        func d(_ v: Any?) -> Double? { (v as? NSNumber)?.doubleValue }
        let moved = o["timeline"] as? String == "stream"
        var source: [Double: Double] = [:]
        func times(_ x: [String: Any]) -> (Double, Double)? {
            guard let a = d(x["start"]), let b = d(x["end"]) else { return nil }
            if moved {
                guard let sa = d(x["source_start"]), let sb = d(x["source_end"]) else { return nil }
                source[a] = sa
                source[b] = sb
            }
            return (a, b)
        }
        func speaker(_ x: [String: Any]) -> TranscriptSpeaker? {
            (x["speaker"] as? String).map { TranscriptSpeaker(label: $0, name: x["speaker_name"] as? String) }
        }
        var segments: [Transcript.Segment] = []
        for s in segs {
            guard let (a, b) = times(s), let text = s["text"] as? String, let c = d(s["confidence"]) else { return nil }
            var words: [Transcript.Word] = []
            for w in s["words"] as? [[String: Any]] ?? [] {
                guard let (wa, wb) = times(w), let wt = w["word"] as? String, let wc = d(w["confidence"]) else { return nil }
                words.append(Transcript.Word(start: wa, end: wb, text: wt, confidence: wc, speaker: speaker(w)))
            }
            segments.append(Transcript.Segment(start: a, end: b, text: text, confidence: c, words: words, speaker: speaker(s)))
        }
        transcript = Transcript(language: o["language"] as? String ?? "", languageConfidence: d(o["language_confidence"]) ?? 0,
                                duration: d(o["duration"]) ?? 0, segments: segments)
        self.model = model
        sourceTimes = moved ? source : nil
    }
}

extension Transcript {
    /// The transcript with each speaker's name now `names[label]` (none when absent).
    package func renamed(_ names: [String: String]) -> Transcript {
        func named(_ s: TranscriptSpeaker?) -> TranscriptSpeaker? { s.map { TranscriptSpeaker(label: $0.label, name: names[$0.label]) } }
        var out = self
        out.segments = segments.map { s in
            var s = s
            s.speaker = named(s.speaker)
            s.words = s.words.map { w in
                var w = w
                w.speaker = named(w.speaker)
                return w
            }
            return s
        }
        return out
    }

    /// What a reader saw for each label before (its name, else the label) → what they see after;
    /// nil when one shown name stood for labels that now show differently (the cues cannot say
    /// which label they were).
    static package func shownChanges(before: [String: String], after: [String: String]) -> [String: String]? {
        var out: [String: String] = [:]
        for label in Set(before.keys).union(after.keys) {
            let old = before[label] ?? label, new = after[label] ?? label
            if let seen = out[old], seen != new { return nil }
            out[old] = new
        }
        return out
    }

    /// A WebVTT file segno wrote with its voice spans (`<v Alice>`) shown as `changes` says.
    static package func renamedVTT(_ text: String, _ changes: [String: String]) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard line.hasPrefix("<v "), let close = line.firstIndex(of: ">") else { return String(line) }
            let who = String(line[line.index(line.startIndex, offsetBy: 3)..<close])
            guard let new = changes[who] else { return String(line) }
            return "<v \(cueEscaped(new))" + line[close...]
        }.joined(separator: "\n")
    }

    /// A SubRip file segno wrote with its speaker prefixes (`Alice: `) shown as `changes` says.
    static package func renamedSRT(_ text: String, _ changes: [String: String]) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var i = 0
        while i + 2 < lines.count {
            // A cue: its number, its times, then its text, the first line of which bears the prefix.
            if Int(lines[i]) != nil, lines[i + 1].contains(" --> "), let colon = lines[i + 2].range(of: ": "),
               let new = changes[String(lines[i + 2][..<colon.lowerBound])] {
                lines[i + 2] = cueText(new) + lines[i + 2][colon.lowerBound...]
            }
            while i < lines.count && !lines[i].isEmpty { i += 1 }
            i += 1
        }
        return lines.joined(separator: "\n")
    }
}

extension TranscribeConfig: SpeakerNamesRewriting {
    /// From the transcript's own JSON when the tap writes one: every format written again as the
    /// tap would with the new names. Without a JSON, the WebVTT voice spans and SRT prefixes are
    /// changed in place, when each shown name stood for one label.
    public func renamedSpeakers(paths: [String], before: [String: String], after: [String: String]) -> [[UInt8]]? {
        guard paths.count == formats.count else { return nil }
        func read(_ p: String) -> Data? {
            guard let size = (try? FileManager.default.attributesOfItem(atPath: p)[.size] as? Int), size <= WrittenTranscript.largest else { return nil }
            return FileManager.default.contents(atPath: p)
        }
        if let i = formats.firstIndex(of: .json) {
            guard let data = read(paths[i]), let written = WrittenTranscript(json: data) else { return nil }
            let t = written.transcript.renamed(after)
            return formats.map { f -> String in
                switch f {
                case .vtt: t.webVTT
                case .srt: t.srt
                case .json: t.json(model: written.model, toSource: written.toSource)
                }
            }.map { Array($0.utf8) }
        }
        guard let changes = Transcript.shownChanges(before: before, after: after) else { return nil }
        var out: [[UInt8]] = []
        for (f, p) in zip(formats, paths) {
            guard let data = read(p), let text = String(data: data, encoding: .utf8) else { return nil }
            out.append(Array((f == .vtt ? Transcript.renamedVTT(text, changes) : Transcript.renamedSRT(text, changes)).utf8))
        }
        return out
    }
}
