import Foundation
import SegnoAudio
import SegnoCore

/// Where in a recording words were said: `segno find` reads the transcripts among a hit's
/// outputs (the `transcribe` tap's JSON) and gives the time of each segment that holds the words.
public enum SpokenSearch {
    /// One place the words were said: seconds into the transcribed stream, and the segment's text.
    public struct Hit: Sendable, Equatable {
        public var time: Double
        public var text: String
    }

    /// The segments of the transcripts among `paths` (absolute; other files are skipped) in which
    /// every query term (`SearchWords.terms`, compared as the catalogue does: folded, each term's
    /// last word a prefix) occurs, with the time of the first matching word. Reads each file once.
    public static func hits(words: [String], in paths: [String]) -> [Hit] {
        let terms = SearchWords.terms(words)
        guard !terms.isEmpty else { return [] }
        var out: [Hit] = []
        for p in paths where p.hasSuffix(".json") {
            guard let data = FileManager.default.contents(atPath: p),
                  let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any], o["version"] as? Int == 1,
                  let segments = o["segments"] as? [[String: Any]] else { continue }
            for s in segments {
                let wordList = (s["words"] as? [[String: Any]] ?? [])
                let folded = wordList.map { SearchWords.of($0["word"] as? String ?? "") }
                let flat = folded.flatMap { $0 }
                // Index of each flat word's owner, to find its time.
                let owner = folded.enumerated().flatMap { i, w in Array(repeating: i, count: w.count) }
                var first: Int?
                var all = true
                for term in terms {
                    guard let at = position(of: term, in: flat) else { all = false; break }
                    first = min(first ?? at, at)
                }
                guard all else { continue }
                // On the source's timeline: a transcript of a moved stream says where it was in the source.
                func time(_ o: [String: Any]) -> Double? { ((o["source_start"] ?? o["start"]) as? NSNumber)?.doubleValue }
                let start = first.flatMap { time(wordList[owner[$0]]) } ?? time(s) ?? 0
                out.append(Hit(time: start, text: s["text"] as? String ?? ""))
            }
        }
        return out
    }

    /// Where `term` (folded words; the last one a prefix) starts in `words`, or nil.
    static package func position(of term: [String], in words: [String]) -> Int? {
        guard !term.isEmpty, words.count >= term.count else { return nil }
        for i in 0...(words.count - term.count) {
            var ok = true
            for (k, t) in term.enumerated() {
                let w = words[i + k]
                if k == term.count - 1 ? !w.hasPrefix(t) : w != t { ok = false; break }
            }
            if ok { return i }
        }
        return nil
    }

    /// "03:12" (minutes and seconds), "1:02:03" past an hour.
    public static func clock(_ seconds: Double) -> String {
        let s = Int(seconds.rounded(.down))
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%02d:%02d", s / 60, s % 60)
    }
}
