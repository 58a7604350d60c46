import Foundation
import SegnoCore
import Synchronization

/// The voices one `speakers` stage names during a run (decision 0075): the prints enrolled in the
/// state, and one centroid per archive-wide label (the seconds-weighted mean of the centroids of
/// every recording's voice that carries it). Prepared once per pass by the runner
/// (`SpeakersConfig.prepareVoices`); each tap then asks for the names and labels of its voices
/// and keeps its own in the state. Shared by the stage's taps on every worker, behind a lock.
public final class VoiceBook: Sendable {
    /// Cosine similarity from which a recording's voice (its centroid) is the enrolled voice or the
    /// labelled voice of other recordings; measured with `tools/speakers_quality.py` (decision 0075).
    static package let threshold: Float = 0.77
    /// Cosine similarity from which a recording's voice is the enrolled voice by one of its prints
    /// made from the enrolled speech mixed with noise (decision 0086): higher than `threshold`,
    /// because noise brings every voice nearer to those prints; measured with
    /// `tools/speakers_quality.py`.
    static package let noisyThreshold: Float = 0.82

    private struct Book {
        var store: any VoiceStore
        var stage: String
        var prints: [VoicePrint]
        var digest: String
        /// Per label: the sum of its voices' centroids, each weighted by its seconds.
        var sums: [Int: [Float]]
        var next: Int
    }
    private let book = Mutex<Book?>(nil)

    public init() {}

    /// Loads the prints and the voices kept. Called once per pass, before any tap is made.
    package func prepare(store: any VoiceStore, stage: String, prints: [VoicePrint], kept: [KeptSpeakers]) {
        var sums: [Int: [Float]] = [:]
        for k in kept { for v in k.voices { Self.add(v.centroid, weight: v.seconds, to: &sums[v.label]) } }
        let next = (sums.keys.max() ?? 0) + 1
        book.withLock { $0 = Book(store: store, stage: stage, prints: prints, digest: Self.digest(prints),
                                  sums: sums, next: next) }
    }

    /// The digest of `prints` and both thresholds (`VoicePrint.digest`): changing either names the
    /// archive again, as changing the prints does.
    static package func digest(_ prints: [VoicePrint]) -> String {
        VoicePrint.digest(prints, threshold: threshold, noisyThreshold: noisyThreshold)
    }

    /// The digest of the prints loaded; nil before `prepare`.
    package var digest: String? { book.withLock { $0?.digest } }

    private static func add(_ v: [Float], weight: Double, to sum: inout [Float]?) {
        guard !v.isEmpty else { return }
        var s = sum ?? [Float](repeating: 0, count: v.count)
        let w = Float(max(weight, 0.1))
        for i in 0..<min(s.count, v.count) { s[i] += w * v[i] }
        sum = s
    }

    /// The candidate each of `voices` is most similar to (cosine), when that is at least
    /// `threshold`; nil for a voice like none. Several voices of a recording may take one
    /// candidate: the clustering split a voice that the print (or label) says is one.
    static package func match(_ voices: [[Float]], _ candidates: [[Float]], threshold: Float = VoiceBook.threshold) -> [Int?] {
        voices.map { a in
            guard !a.isEmpty else { return nil }
            var best: (sim: Float, c: Int)? = nil
            for (c, b) in candidates.enumerated() where !b.isEmpty {
                let s = Diarizer.cosine(a, b)
                if s >= threshold && s > (best?.sim ?? -.infinity) { best = (s, c) }
            }
            return best?.c
        }
    }

    /// The enrolled names of a recording's voices (centroids), nil for a voice that matches none.
    /// A print's first vector (the speech as enrolled) counts from `threshold`, its others (the
    /// speech mixed with noise, decision 0086) from `noisyThreshold`; each voice takes the name
    /// whose vector it is most similar to among those that count.
    static package func names(_ centroids: [[Float]], prints: [VoicePrint],
                              threshold: Float = VoiceBook.threshold, noisyThreshold: Float = VoiceBook.noisyThreshold) -> [String?] {
        let vectors = prints.map(\.vectors)
        return centroids.map { a in
            guard !a.isEmpty else { return nil }
            var best: (sim: Float, p: Int)? = nil
            for (p, vs) in vectors.enumerated() {
                for (k, b) in vs.enumerated() where !b.isEmpty {
                    let s = Diarizer.cosine(a, b)
                    if s >= (k == 0 ? threshold : noisyThreshold) && s > (best?.sim ?? -.infinity) { best = (s, p) }
                }
            }
            return best.map { prints[$0.p].name }
        }
    }

    /// The archive-wide label number and the name of each of a recording's voices (centroids, with
    /// their seconds): a voice like a labelled one takes its label, another gets the next number;
    /// the labels' centroids learn the voices. Nil before `prepare`. Called once per recording.
    package func assign(_ voices: [(centroid: [Float], seconds: Double)]) -> (labels: [Int], names: [String?], digest: String)? {
        book.withLock { b -> (labels: [Int], names: [String?], digest: String)? in
            guard var book = b else { return nil }
            let labels = book.sums.keys.sorted()
            let matched = Self.match(voices.map(\.centroid), labels.map { Diarizer.centroid([book.sums[$0]!]) })
            var out: [Int] = []
            for (i, v) in voices.enumerated() {
                let label: Int
                if let m = matched[i] { label = labels[m] } else { label = book.next; book.next += 1 }
                Self.add(v.centroid, weight: v.seconds, to: &book.sums[label])
                out.append(label)
            }
            let names = Self.names(voices.map(\.centroid), prints: book.prints)
            b = book
            return (out, names, book.digest)
        }
    }

    /// Keeps what the tap heard in one recording (decision 0075). Called by the tap once its files
    /// are in place; does nothing before `prepare`.
    package func keep(path: String, voices: [KeptVoice], turns: String, digest: String) throws {
        guard let target = book.withLock({ b -> (store: any VoiceStore, stage: String)? in b.map { ($0.store, $0.stage) } }) else { return }
        try target.store.keep(KeptSpeakers(path: path, stage: target.stage, voices: voices, turns: turns, digest: digest))
    }
}
