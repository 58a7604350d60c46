import Foundation
import SegnoCore

/// One speaker turn: [start, end) in seconds of the stream the tap heard, the speaker's index
/// (0, 1, … in order of first appearance) and how close its windows' voice is to its speaker's
/// (the mean cosine similarity of the turn's embeddings to the speaker's centroid, 0…1). `label`
/// is the speaker's archive-wide label (`speaker-7`) and `name` the enrolled voice it matched
/// (decision 0075), when the tap ran with a state that keeps voices.
package struct SpeakerTurn: Sendable, Equatable {
    package var start: Double
    package var end: Double
    package var speaker: Int
    package var confidence: Double
    package var label: String?
    package var name: String?

    package init(start: Double, end: Double, speaker: Int, confidence: Double, label: String? = nil, name: String? = nil) {
        self.start = start
        self.end = end
        self.speaker = speaker
        self.confidence = confidence
        self.label = label
        self.name = name
    }
}

/// The d-vector diarization of decision 0073 (Wang et al. 2018, "Speaker Diarization with
/// LSTM"), without a segmentation model: speech regions from the voice activity detector →
/// windows of 1.5 s every 0.75 s inside them → GE2E embeddings → agglomerative clustering
/// (average linkage on cosine similarity, stopped at `threshold` or at a given speaker count) →
/// each stretch of speech goes to the window whose centre is nearest → turns.
package enum Diarizer {
    /// Window length and hop, in seconds.
    static package let window = 1.5
    static package let hop = 0.75
    /// Speech shorter than this gets no window of its own (it takes its nearest window's speaker).
    static package let shortestWindow = 0.5
    /// Average-linkage similarity below which two clusters stay apart, measured on conversations
    /// of four real voices, clean and with brown noise at 10 dB SNR (decision 0073): the last merge
    /// inside one voice came at 0.70–0.74, the first merge of two voices at 0.48–0.62.
    static package let threshold: Float = 0.66
    /// Windows shorter than this (speech regions of 0.5–1 s) are not clustered: they go to the
    /// nearest centroid afterwards. Measured (decision 0073): clustered, such a window often made
    /// a speaker of its own (the count right in 70 % of the conversations, 90 % without them).
    static package let shortestClustered = 1.0
    /// At most this many windows are clustered (every k-th); the rest go to the nearest centroid.
    /// Average linkage is O(n²) memory and O(n³) time in the number of windows.
    static package let clusteredWindows = 600

    /// The windows to embed in the speech regions `speech` (sample ranges at `rate`).
    package static func windows(speech: [Range<Int>], rate: Int) -> [Range<Int>] {
        let w = Int(window * Double(rate)), h = Int(hop * Double(rate)), shortest = Int(shortestWindow * Double(rate))
        var out: [Range<Int>] = []
        for s in speech {
            if s.count < shortest { continue }
            if s.count <= w { out.append(s); continue }
            var a = s.lowerBound
            while a + w <= s.upperBound {
                out.append(a..<(a + w))
                a += h
            }
            // The tail: one more window ending with the segment when the last leaves over a third uncovered.
            if let last = out.last, s.upperBound - last.upperBound > h / 2 { out.append((s.upperBound - w)..<s.upperBound) }
        }
        return out
    }

    /// The cosine similarity of two embeddings (`VoiceVectors.cosine`).
    package static func cosine(_ a: [Float], _ b: [Float]) -> Float { VoiceVectors.cosine(a, b) }

    /// L2-normed mean of `vectors`.
    package static func centroid(_ vectors: [[Float]]) -> [Float] {
        guard let first = vectors.first else { return [] }
        var c = [Float](repeating: 0, count: first.count)
        for v in vectors { for i in 0..<c.count { c[i] += v[i] } }
        let n = c.reduce(0) { $0 + $1 * $1 }.squareRoot()
        return n > 0 ? c.map { $0 / n } : c
    }

    /// Cluster labels for `embeddings` (0, 1, … in order of first appearance): average linkage,
    /// merging until `count` clusters remain when given, else while two clusters' average
    /// similarity is at least `threshold`. Only the windows `clusterable` marks (all when nil) are
    /// clustered; the others go to the nearest cluster's centroid.
    package static func cluster(_ embeddings: [[Float]], count: Int?, threshold: Float = Diarizer.threshold,
                                clusterable: [Bool]? = nil) -> [Int] {
        let n = embeddings.count
        guard n > 1 else { return Array(repeating: 0, count: n) }
        var candidates = (0..<n).filter { clusterable?[$0] ?? true }
        if candidates.count < 2 { candidates = Array(0..<n) }
        let stride = max(1, (candidates.count + clusteredWindows - 1) / clusteredWindows)
        let picked = Swift.stride(from: 0, to: candidates.count, by: stride).map { candidates[$0] }
        let m = picked.count
        var sim = [Float](repeating: 0, count: m * m)
        for i in 0..<m { for j in (i + 1)..<m {
            let s = cosine(embeddings[picked[i]], embeddings[picked[j]])
            sim[i * m + j] = s; sim[j * m + i] = s
        } }
        var size = [Int](repeating: 1, count: m)
        var alive = [Bool](repeating: true, count: m)
        var owner = Array(0..<m)   // the cluster each picked window is in (its representative)
        var clusters = m
        let target = count.map { max(1, min($0, m)) }
        while clusters > (target ?? 1) {
            var best: Float = -.infinity, bi = -1, bj = -1
            for i in 0..<m where alive[i] {
                for j in (i + 1)..<m where alive[j] && sim[i * m + j] > best {
                    best = sim[i * m + j]; bi = i; bj = j
                }
            }
            if target == nil && best < threshold { break }
            // Lance–Williams for average linkage: sim(k, i∪j) = (nᵢ·sim(k,i) + nⱼ·sim(k,j)) / (nᵢ + nⱼ).
            let ni = Float(size[bi]), nj = Float(size[bj])
            for k in 0..<m where alive[k] && k != bi && k != bj {
                let s = (ni * sim[k * m + bi] + nj * sim[k * m + bj]) / (ni + nj)
                sim[k * m + bi] = s; sim[bi * m + k] = s
            }
            size[bi] += size[bj]
            alive[bj] = false
            for k in 0..<m where owner[k] == bj { owner[k] = bi }
            clusters -= 1
        }
        // Centroids of the clusters, then every window (picked or not) to its nearest centroid
        // when it was not clustered itself.
        let reps = (0..<m).filter { alive[$0] }
        let centroids = reps.map { r in centroid((0..<m).filter { owner[$0] == r }.map { embeddings[picked[$0]] }) }
        var labels = [Int](repeating: 0, count: n)
        var pickedLabel = [Int: Int]()
        for (k, p) in picked.enumerated() { pickedLabel[p] = reps.firstIndex(of: owner[k])! }
        for i in 0..<n {
            if let l = pickedLabel[i] { labels[i] = l; continue }
            labels[i] = centroids.indices.max { cosine(embeddings[i], centroids[$0]) < cosine(embeddings[i], centroids[$1]) } ?? 0
        }
        // Renumber in order of first appearance.
        var order: [Int: Int] = [:]
        return labels.map { l in
            if let o = order[l] { return o }
            order[l] = order.count
            return order[l]!
        }
    }

    /// Turns from the speech regions, the windows in them and each window's label: each stretch
    /// of speech goes to the speaker of the window whose centre is nearest; neighbouring stretches
    /// of one speaker less than `join` apart are one turn; a turn shorter than `minTurn` between
    /// (or beside) another speaker's turns within `join` goes to the longer neighbour.
    package static func turns(speech: [Range<Int>], windows: [Range<Int>], labels: [Int], embeddings: [[Float]],
                              rate: Int, minTurn: Double, join: Double = 0.5) -> [SpeakerTurn] {
        guard !windows.isEmpty else { return [] }
        let r = Double(rate)
        let centres = windows.map { Double($0.lowerBound + $0.upperBound) / 2 }
        func nearest(_ t: Double) -> Int {
            var lo = 0, hi = centres.count - 1
            while lo < hi { let mid = (lo + hi) / 2; if centres[mid] < t { lo = mid + 1 } else { hi = mid } }
            if lo > 0 && abs(centres[lo - 1] - t) <= abs(centres[lo] - t) { return lo - 1 }
            return lo
        }
        // Pieces: speech split at the midpoints between neighbouring window centres.
        var pieces: [(start: Double, end: Double, window: Int)] = []
        for s in speech {
            var a = Double(s.lowerBound)
            let e = Double(s.upperBound)
            while a < e {
                let w = nearest(a)
                let boundary = w + 1 < centres.count ? (centres[w] + centres[w + 1]) / 2 : e
                let b = min(e, max(boundary, a + 1))
                pieces.append((a, b, w))
                a = b
            }
        }
        // Joined into turns of one speaker, with the windows that made each.
        var turns: [(start: Double, end: Double, speaker: Int, windows: Set<Int>)] = []
        for p in pieces {
            let label = labels[p.window]
            if let last = turns.last, last.speaker == label, p.start - last.end < join * r {
                turns[turns.count - 1].end = p.end
                turns[turns.count - 1].windows.insert(p.window)
            } else {
                turns.append((p.start, p.end, label, [p.window]))
            }
        }
        // Short turns go to their longer neighbour (when it is near), then neighbours join again.
        var changed = true
        while changed {
            changed = false
            for i in turns.indices where (turns[i].end - turns[i].start) < minTurn * r {
                let before = i > 0 && turns[i].start - turns[i - 1].end < join * r ? i - 1 : nil
                let after = i + 1 < turns.count && turns[i + 1].start - turns[i].end < join * r ? i + 1 : nil
                let pick = [before, after].compactMap { $0 }.max { (turns[$0].end - turns[$0].start) < (turns[$1].end - turns[$1].start) }
                if let pick, turns[pick].speaker != turns[i].speaker {
                    turns[i].speaker = turns[pick].speaker
                    changed = true
                }
            }
            var merged: [(start: Double, end: Double, speaker: Int, windows: Set<Int>)] = []
            for t in turns {
                if let last = merged.last, last.speaker == t.speaker, t.start - last.end < join * r {
                    merged[merged.count - 1].end = t.end
                    merged[merged.count - 1].windows.formUnion(t.windows)
                } else { merged.append(t) }
            }
            turns = merged
        }
        // Speakers renumbered by first appearance; confidence against the speaker's centroid.
        var order: [Int: Int] = [:]
        for t in turns where order[t.speaker] == nil { order[t.speaker] = order.count }
        var centroids: [Int: [Float]] = [:]
        for l in Set(turns.map(\.speaker)) {
            centroids[l] = centroid(labels.indices.filter { labels[$0] == l }.map { embeddings[$0] })
        }
        return turns.map { t in
            let sims = t.windows.map { Double(cosine(embeddings[$0], centroids[t.speaker] ?? [])) }
            let conf = sims.isEmpty ? 0 : max(0, min(1, sims.reduce(0, +) / Double(sims.count)))
            return SpeakerTurn(start: t.start / r, end: t.end / r, speaker: order[t.speaker]!, confidence: conf)
        }
    }

    /// Each speaker's centroid (L2-normed mean of the embeddings of the windows whose centre lies
    /// in one of its turns) and seconds of turns, indexed by `SpeakerTurn.speaker`. A speaker
    /// with no window centred in its turns gets the windows that overlap them.
    package static func voices(turns: [SpeakerTurn], windows: [Range<Int>], embeddings: [[Float]], rate: Int) -> [(centroid: [Float], seconds: Double)] {
        let count = (turns.map(\.speaker).max() ?? -1) + 1
        let r = Double(rate)
        return (0..<count).map { s in
            let mine = turns.filter { $0.speaker == s }
            let seconds = mine.reduce(0) { $0 + ($1.end - $1.start) }
            var picked = windows.indices.filter { w in
                let c = Double(windows[w].lowerBound + windows[w].upperBound) / 2 / r
                return mine.contains { c >= $0.start && c < $0.end }
            }
            if picked.isEmpty {
                picked = windows.indices.filter { w in
                    mine.contains { Double(windows[w].upperBound) / r > $0.start && Double(windows[w].lowerBound) / r < $0.end }
                }
            }
            return (centroid(picked.map { embeddings[$0] }), seconds)
        }
    }
}
