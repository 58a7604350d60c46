import Foundation

/// Topic boundaries in a transcript by lexical cohesion, in the manner of TextTiling (Hearst 1997,
/// "TextTiling: Segmenting Text into Multi-paragraph Subtopic Passages"): the words are cut into
/// token sequences of `sequenceWords`; at each gap between sequences the blocks of sequences before
/// and after are compared by the cosine of their word counts (stop words left out, plurals folded);
/// each word weighted by its inverse sequence frequency in the recording (a word in every part of
/// the talk, "press" on a phone line or the lecturer's "slide", says nothing of its topic); the
/// scores are smoothed; a gap's depth is how far the score falls below the peaks on either side.
/// This is done for each block size of `blockSizes`; each size's deepest gaps (local maxima of
/// depth) are scored in standard deviations from that size's mean depth and snapped to the
/// longest silence between words within a sequence either side when the engine gave word times,
/// else to the nearest segment start; candidates of the sizes within `groupSeconds` of each other
/// are one, scored by their mean (a size that found none there counts as its mean depth). Those
/// above the mean are boundaries, highest first, none leaving a chapter shorter than `min`. No
/// network, no language model. Times in source seconds.
public enum TopicTiling {
    /// Words per token sequence (Hearst's w, 20 in her paper and NLTK): the step between the
    /// gaps a boundary can fall in, about 5 s of speech.
    public static let sequenceWords = 12
    /// Token sequences per block on each side of a gap (Hearst's k, 10 in NLTK): blocks of 48, 60
    /// and 72 words, under half a minute of speech each, so a passage of a minute (about 150
    /// words) fills one; their depths averaged, so no one block size decides. Chosen on
    /// development recordings apart from those `make quality` scores (decision 0082, amended:
    /// 15 × 4, then 12 × 5 alone before).
    public static let blockSizes = [4, 5, 6]
    /// Candidates of the block sizes this close (seconds) are the same boundary.
    public static let groupSeconds = 5.0

    /// A word of the transcript with the time it was said (interpolated inside its segment).
    struct Token {
        var word: String
        var time: Double
        /// The word's own start and end when the engine gave word times, else `time` both.
        var start: Double, end: Double
        init(word: String, time: Double, start: Double? = nil, end: Double? = nil) {
            self.word = word
            self.time = time
            self.start = start ?? time
            self.end = end ?? time
        }
    }

    /// The transcript's words, lower-cased, in order, each at the middle of its word's time when the
    /// engine gave word times, else at its place in its segment.
    static func tokens(_ said: [ChapterMaking.Said]) -> [Token] {
        var out: [Token] = []
        for s in said.sorted(by: { $0.start < $1.start }) {
            if !s.words.isEmpty {
                for w in s.words { for x in words(of: w.text) { out.append(Token(word: x, time: (w.start + w.end) / 2, start: w.start, end: w.end)) } }
                continue
            }
            let words = words(of: s.text)
            let step = words.isEmpty ? 0 : max(0, s.end - s.start) / Double(words.count)
            for (i, w) in words.enumerated() { out.append(Token(word: w, time: s.start + step * (Double(i) + 0.5))) }
        }
        return out
    }

    /// The words of a text: runs of letters, digits and inner apostrophes, lower-cased.
    static func words(of text: String) -> [String] {
        var out: [String] = [], word = ""
        for ch in text.lowercased() {
            if ch.isLetter || ch.isNumber || (ch == "'" && !word.isEmpty) { word.append(ch) } else if !word.isEmpty {
                out.append(word.trimmingCharacters(in: ["'"]))
                word = ""
            }
        }
        if !word.isEmpty { out.append(word.trimmingCharacters(in: ["'"])) }
        return out.filter { !$0.isEmpty }
    }

    /// The form a word is counted under: "'s" and a plural "s" folded ("topics" → "topic").
    static func term(_ w: String) -> String {
        var w = w
        if w.hasSuffix("'s") { w.removeLast(2) }
        if w.count > 3, w.hasSuffix("ies") { return String(w.dropLast(3)) + "y" }
        if w.count > 3, w.hasSuffix("s"), !w.hasSuffix("ss"), !w.hasSuffix("us"), !w.hasSuffix("is") { w.removeLast() }
        return w
    }

    /// The source times of the topic boundaries, in order: each a gap's time snapped to the longest
    /// silence between words near it (word times) or to the nearest segment start, none within
    /// `min` seconds of 0, of `duration` or of another. Empty when the transcript is shorter than
    /// four token sequences or no gap is deep enough. Called once per recording by `ChapterMaking`.
    public static func boundaries(_ said: [ChapterMaking.Said], duration: Double, min: Double, stopWords: Set<String>) -> [Double] {
        let toks = tokens(said)
        let w = sequenceWords
        let n = toks.count / w
        guard n >= 4 else { return [] }
        let seqs: [[String: Int]] = (0..<n).map { i in
            var c: [String: Int] = [:]
            for t in toks[(i * w)..<((i + 1) * w)] where !stopWords.contains(t.word) && t.word.count > 1 { c[term(t.word), default: 0] += 1 }
            return c
        }
        let weights = inverseFrequencies(seqs)
        let starts = said.map(\.start).filter { $0 > 0 }.sorted()
        let wordTimes = said.contains { !$0.words.isEmpty }
        var candidates: [(z: Double, time: Double)] = []
        for size in blockSizes {
            let k = Swift.min(size, n / 2)
            // Gap g lies between sequence g and g + 1.
            let raw: [Double] = (0..<(n - 1)).map { g in
                cosine(sum(seqs[Swift.max(0, g - k + 1)...g]), sum(seqs[(g + 1)...Swift.min(n - 1, g + k)]), weights: weights)
            }
            let depths = depthScores(smoothed(raw))
            let mean = depths.reduce(0, +) / Double(depths.count)
            let sd = (depths.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(depths.count)).squareRoot()
            for g in depths.indices {
                // A local maximum of depth only (the neighbours of a deep gap are deep too).
                if g > 0, depths[g - 1] > depths[g] { continue }
                if g + 1 < depths.count, depths[g + 1] >= depths[g] { continue }
                let t = (toks[(g + 1) * w - 1].time + toks[(g + 1) * w].time) / 2
                candidates.append(((depths[g] - mean) / (sd > 0 ? sd : 1),
                                   wordTimes ? silence(near: (g + 1) * w, in: toks, within: w) : snap(t, to: starts)))
            }
        }
        var groups: [(time: Double, z: Double)] = []
        for c in candidates.sorted(by: { $0.z > $1.z }) {
            if let i = groups.firstIndex(where: { abs($0.time - c.time) <= groupSeconds }) { groups[i].z += c.z } else { groups.append((c.time, c.z)) }
        }
        var cuts: [Double] = []
        for g in groups.sorted(by: { $0.z > $1.z }) where g.z / Double(blockSizes.count) > 0 {
            guard g.time >= min, duration - g.time >= min, cuts.allSatisfy({ abs($0 - g.time) >= min }) else { continue }
            cuts.append(g.time)
        }
        return cuts.sorted()
    }

    static func sum(_ s: ArraySlice<[String: Int]>) -> [String: Int] {
        s.reduce(into: [:]) { acc, c in for (k, v) in c { acc[k, default: 0] += v } }
    }

    /// Each word's weight: ln((1 + N) / df), N the token sequences, df those that hold the word.
    static func inverseFrequencies(_ seqs: [[String: Int]]) -> [String: Double] {
        var df: [String: Int] = [:]
        for c in seqs { for w in c.keys { df[w, default: 0] += 1 } }
        let n = Double(seqs.count)
        return df.mapValues { log((1 + n) / Double($0)) }
    }

    /// The cosine of two word counts, each word's count times its weight (1 when `weights` has
    /// none for it); 0 when either is empty.
    static func cosine(_ a: [String: Int], _ b: [String: Int], weights: [String: Double] = [:]) -> Double {
        func w(_ k: String) -> Double { weights[k] ?? 1 }
        let dot = a.reduce(0.0) { $0 + Double($1.value * (b[$1.key] ?? 0)) * w($1.key) * w($1.key) }
        let na = a.reduce(0.0) { $0 + pow(Double($1.value) * w($1.key), 2) }, nb = b.reduce(0.0) { $0 + pow(Double($1.value) * w($1.key), 2) }
        return na > 0 && nb > 0 ? dot / (na * nb).squareRoot() : 0
    }

    /// One round of a moving average over three gaps (Hearst's smoothing, width 1 either side).
    static func smoothed(_ s: [Double]) -> [Double] {
        s.indices.map { i in
            let r = Swift.max(0, i - 1)...Swift.min(s.count - 1, i + 1)
            return s[r].reduce(0, +) / Double(r.count)
        }
    }

    /// Each gap's depth: (highest score reached climbing left) + (climbing right) − 2 × its score.
    static func depthScores(_ s: [Double]) -> [Double] {
        s.indices.map { i in
            var l = s[i], r = s[i]
            var j = i
            while j > 0, s[j - 1] >= l { j -= 1; l = s[j] }
            j = i
            while j + 1 < s.count, s[j + 1] >= r { j += 1; r = s[j] }
            return l + r - 2 * s[i]
        }
    }

    /// The middle of the longest silence between two words within `within` words of token
    /// `index` either side (the pause a topic most likely changed in): with word times, a gap
    /// between sequences is snapped to it rather than to a segment start.
    static func silence(near index: Int, in toks: [Token], within: Int) -> Double {
        let lo = Swift.max(1, index - within), hi = Swift.min(toks.count - 1, index + within)
        guard lo <= hi else { return toks[Swift.min(index, toks.count - 1)].start }
        let i = (lo...hi).max { toks[$0].start - toks[$0 - 1].end < toks[$1].start - toks[$1 - 1].end }!
        return (toks[i - 1].end + toks[i].start) / 2
    }

    /// The start in `starts` nearest to `t` (`t` itself when there is none).
    static func snap(_ t: Double, to starts: [Double]) -> Double {
        starts.min { abs($0 - t) < abs($1 - t) } ?? t
    }

    /// Each chapter's most characteristic words (chapters start at `starts`, in order): its three
    /// words of highest tf·idf, the chapters being the documents (idf = ln((1 + N) / df)), ties by
    /// count then by first use; stop words and one-letter words left out; joined by ", " with the
    /// first letter capital; a word in every chapter is left out when there are three or more.
    /// "" for a chapter whose transcript has none.
    public static func titles(_ said: [ChapterMaking.Said], starts: [Double], stopWords: Set<String>, count: Int = 3) -> [String] {
        var docs = [[String]](repeating: [], count: starts.count)
        for t in tokens(said) where !stopWords.contains(t.word) && t.word.count > 1 && !t.word.allSatisfy(\.isNumber) {
            let i = (starts.lastIndex { $0 <= t.time } ?? 0)
            docs[i].append(t.word)
        }
        var df: [String: Int] = [:]
        for d in docs { for w in Set(d.map(term)) { df[w, default: 0] += 1 } }
        let n = Double(starts.count)
        return docs.map { d in
            var tf: [String: Int] = [:], first: [String: Int] = [:], shown: [String: String] = [:]
            for (i, w) in d.enumerated() {
                let t = term(w)
                tf[t, default: 0] += 1
                if first[t] == nil { first[t] = i; shown[t] = w }
            }
            func score(_ t: String) -> Double { Double(tf[t]!) * log((1 + n) / Double(df[t]!)) }
            // A word in every one of three chapters or more characterises none of them (a function
            // word of a language without a stop-word list, a lecture's subject).
            let top = tf.keys.filter { n < 3 || df[$0]! < starts.count }.sorted { (score($0), tf[$0]!, -first[$0]!) > (score($1), tf[$1]!, -first[$1]!) }.prefix(count)
            let text = top.map { shown[$0]! }.joined(separator: ", ")
            return text.prefix(1).uppercased() + text.dropFirst()
        }
    }
}
