import Foundation

/// One writer's copy of a `speakers` tap's archive-wide labels (decision 0075 item 4): per label,
/// the seconds-weighted sum of the centroids of every voice kept with it, learnt from the rows the
/// state keeps, and the position of the last row learnt. The state decides: a recording's labels
/// are given inside the transaction that stores it (`VoiceStore.keep(path:stage:voices:…)`),
/// against these sums plus the rows other writers stored since (decision 0094).
public struct ArchiveLabels: Sendable {
    /// Per label: the sum of its voices' centroids, each weighted by its seconds (at least 0.1 s).
    private var sums: [Int: [Float]] = [:]
    /// The position (`VoiceStore.keep`) of the last row learnt.
    public private(set) var position: Int64
    /// Cosine similarity from which a voice is a labelled voice.
    public let threshold: Float

    /// The labels of the rows of `ledger` (read once per pass).
    public init(_ ledger: KeptLedger, threshold: Float) {
        self.threshold = threshold
        position = ledger.position
        learn(ledger.kept)
    }

    /// The highest label learnt; 0 when none.
    public var highest: Int { sums.keys.max() ?? 0 }

    private mutating func learn(_ rows: [KeptSpeakers]) {
        for k in rows {
            for v in k.voices where !v.centroid.isEmpty {
                var s = sums[v.label] ?? [Float](repeating: 0, count: v.centroid.count)
                let w = Float(max(v.seconds, 0.1))
                for i in 0..<min(s.count, v.centroid.count) { s[i] += w * v.centroid[i] }
                sums[v.label] = s
            }
        }
    }

    /// Learns `rows`, stored up to `position`. Called once a row is stored, with the rows the
    /// transaction read and the row itself.
    public mutating func learn(_ rows: [KeptSpeakers], upTo position: Int64) {
        learn(rows)
        self.position = max(self.position, position)
    }

    /// The label of each of a recording's voices (centroids): a voice like a labelled one (of the
    /// rows learnt and of `since`, the rows stored after `position`) takes its label, each other
    /// voice the next number from `next` (the state's lowest number never given) or above every
    /// label known, whichever is higher. Several voices may take one label (the clustering split
    /// a voice). Pure: called inside the transaction that stores the recording, maybe twice.
    public func labels(of voices: [[Float]], since: [KeptSpeakers], next: Int) -> [Int] {
        var now = self
        now.learn(since)
        let known = now.sums.keys.sorted()
        let matched = Self.match(voices, known.map { now.sums[$0]! }, threshold: threshold)
        var fresh = max(next, now.highest + 1)
        return matched.map { m in
            if let m { return known[m] }
            defer { fresh += 1 }
            return fresh
        }
    }

    /// The candidate each of `voices` is most similar to (cosine), when that is at least
    /// `threshold`; nil for a voice like none. Several voices of a recording may take one
    /// candidate: the clustering split a voice that the print (or label) says is one.
    public static func match(_ voices: [[Float]], _ candidates: [[Float]], threshold: Float) -> [Int?] {
        voices.map { a in
            guard !a.isEmpty else { return nil }
            var best: (sim: Float, c: Int)? = nil
            for (c, b) in candidates.enumerated() where !b.isEmpty {
                let s = VoiceVectors.cosine(a, b)
                if s >= threshold && s > (best?.sim ?? -.infinity) { best = (s, c) }
            }
            return best?.c
        }
    }
}

extension VoiceStore {
    /// Stores what a `speakers` tap heard in the recording `path` (decision 0094): in the
    /// transaction that stores the row, each voice (centroid and seconds) is matched against
    /// `labels` and the rows other writers stored since it learnt, and a voice like none gets a
    /// number no other writer can be given. `turns(labels)` makes the row's turns (and may write
    /// the tap's files: a throw stores nothing). Returns the labels; `labels` learns them.
    public func keep(path: String, stage: String, voices: [(centroid: [Float], seconds: Double)], digest: String,
                     labels: inout ArchiveLabels, turns: ([Int]) throws -> String) throws -> [Int] {
        let book = labels
        var decided: (labels: [Int], since: [KeptSpeakers], row: KeptSpeakers?) = ([], [], nil)
        let position = try keep(stage: stage, after: book.position) { since, next in
            let given = book.labels(of: voices.map(\.centroid), since: since, next: next)
            let kept = zip(given, voices).map { KeptVoice(label: $0, seconds: $1.seconds, centroid: $1.centroid) }
            let row = KeptSpeakers(path: path, stage: stage, voices: kept, turns: try turns(given), digest: digest)
            decided = (given, since, row)
            return row
        }
        labels.learn(decided.since + (decided.row.map { [$0] } ?? []), upTo: position)
        return decided.labels
    }
}
