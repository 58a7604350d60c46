import Foundation

/// Chapters made from what a run found (issue 32, item 3; decision 0082): at speaker changes, at
/// the longest pauses, at the transcript's topic boundaries (`TopicTiling`). Every time is in
/// seconds of the SOURCE (decision 0072); every list starts at 0 and runs to `duration`, each
/// chapter ending where the next begins.
public enum ChapterMaking {
    public typealias Pause = Findings.Pause
    public typealias Turn = Findings.Turn
    public typealias Said = Findings.Segment

    /// Chapters at the midpoints of the longest pauses: pauses are taken longest first (ties by
    /// earlier start), and one is kept when it leaves every chapter at least `min` seconds long
    /// (from 0, to `duration`, and to every boundary kept before). Titled "Part n", or with the
    /// transcript's words when `said` is given. Empty when no pause fits.
    public static func atPauses(_ pauses: [Pause], duration: Double, min: Double, said: [Said] = [], stopWords: Set<String> = StopWords.english) -> [Chapter] {
        let ordered = pauses.filter { $0.end > $0.start }.sorted { ($1.length, $0.start) < ($0.length, $1.start) }
        var cuts: [Double] = []
        for p in ordered {
            let t = (p.start + p.end) / 2
            guard t >= min, duration - t >= min, cuts.allSatisfy({ abs($0 - t) >= min }) else { continue }
            cuts.append(t)
        }
        return titled(cuts.sorted(), duration: duration, said: said, fallback: "Part", stopWords: stopWords)
    }

    /// Chapters at speaker changes: a turn whose speaker differs from the turn before it starts a
    /// chapter, unless the chapter before it would be shorter than `min` seconds (the change is
    /// then skipped; a last chapter shorter than `min` joins the one before). Each chapter is
    /// titled with the name (else the label) of the speaker heard longest in it, and neighbours
    /// with the same title become one. Empty when fewer than two chapters are left.
    public static func atSpeakerChanges(_ turns: [Turn], duration: Double, min: Double) -> [Chapter] {
        let sorted = turns.filter { $0.end > $0.start }.sorted { $0.start < $1.start }
        guard let first = sorted.first else { return [] }
        var starts: [Double] = [0]
        var previous = first.speaker
        for t in sorted.dropFirst() where t.speaker != previous {
            previous = t.speaker
            if t.start - starts[starts.count - 1] >= min { starts.append(t.start) }
        }
        while starts.count > 1, duration - starts[starts.count - 1] < min { starts.removeLast() }
        var titled: [(Double, String)] = []
        for (i, s) in starts.enumerated() {
            let end = i + 1 < starts.count ? starts[i + 1] : duration
            var heard: [String: Double] = [:], order: [String] = []
            for t in sorted {
                let d = Swift.min(t.end, end) - Swift.max(t.start, s)
                guard d > 0 else { continue }
                let who = t.shown
                if heard[who] == nil { order.append(who) }
                heard[who, default: 0] += d
            }
            let title = order.max { heard[$0]! < heard[$1]! || (heard[$0]! == heard[$1]! && order.firstIndex(of: $0)! > order.firstIndex(of: $1)!) } ?? first.shown
            if titled.last?.1 != title { titled.append((s, title)) }
        }
        guard titled.count > 1 else { return [] }
        return chain(titled, duration: duration)
    }

    /// Chapters at the transcript's topic boundaries (`TopicTiling.boundaries`), snapped to the
    /// nearest segment start, none shorter than `min`, titled with each chapter's most
    /// characteristic words. Empty when the transcript shows no boundary.
    public static func atTopics(_ said: [Said], duration: Double, min: Double, stopWords: Set<String> = StopWords.english) -> [Chapter] {
        let cuts = TopicTiling.boundaries(said, duration: duration, min: min, stopWords: stopWords)
        guard !cuts.isEmpty else { return [] }
        return titled(cuts, duration: duration, said: said, fallback: "Part", stopWords: stopWords)
    }

    /// The chapters of several sources merged (`merge: true`): all of them in order of start; a
    /// chapter starting within `near` seconds of one kept before it (from an earlier source, or
    /// earlier in the same) is left out. Ends are set anew, each to the next start.
    public static func merged(_ lists: [[Chapter]], duration: Double, near: Double = 1) -> [Chapter] {
        var kept: [Chapter] = []
        for list in lists {
            for c in list where kept.allSatisfy({ abs($0.start - c.start) >= near }) { kept.append(c) }
        }
        kept.sort { $0.start < $1.start }
        return chain(kept.map { ($0.start, $0.title) }, duration: duration)
    }

    /// Chapters from their starts and titles, each ending at the next start, the last at `duration`.
    static func chain(_ starts: [(Double, String)], duration: Double) -> [Chapter] {
        starts.enumerated().map { i, s in
            Chapter(start: s.0, end: i + 1 < starts.count ? starts[i + 1].0 : max(duration, s.0), title: s.1)
        }
    }

    /// Chapters from 0 through each cut to `duration`, titled with their words (`TopicTiling.titles`)
    /// where the transcript says any, else "`fallback` n".
    static func titled(_ cuts: [Double], duration: Double, said: [Said], fallback: String, stopWords: Set<String> = StopWords.english) -> [Chapter] {
        guard !cuts.isEmpty else { return [] }
        let starts = [0] + cuts
        let words = TopicTiling.titles(said, starts: starts, stopWords: stopWords)
        return chain(starts.enumerated().map { i, s in (s, words[i].isEmpty ? "\(fallback) \(i + 1)" : words[i]) }, duration: duration)
    }
}
