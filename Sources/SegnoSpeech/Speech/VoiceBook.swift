import Foundation
import SegnoCore
import Synchronization

/// The voices one `speakers` stage names during a run (decision 0075): the prints enrolled in the
/// state, and one centroid per archive-wide label (the seconds-weighted mean of the centroids of
/// every recording's voice that carries it, `ArchiveLabels`). Prepared once per pass by the runner
/// (`SpeakersConfig.prepareVoices`); each tap then keeps its voices in the state, which gives
/// their labels in the same transaction (decision 0094), and names them. Shared by the stage's
/// taps on every worker, behind a lock.
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
        var labels: ArchiveLabels
    }
    private let book = Mutex<Book?>(nil)

    public init() {}

    /// Loads the prints and the voices kept (`ledger`, with the position it was read at). Called
    /// once per pass, before any tap is made.
    package func prepare(store: any VoiceStore, stage: String, prints: [VoicePrint], ledger: KeptLedger) {
        let labels = ArchiveLabels(ledger, threshold: Self.threshold)
        book.withLock { $0 = Book(store: store, stage: stage, prints: prints, digest: Self.digest(prints), labels: labels) }
    }

    /// The digest of `prints` and both thresholds (`VoicePrint.digest`): changing either names the
    /// archive again, as changing the prints does.
    static package func digest(_ prints: [VoicePrint]) -> String {
        VoicePrint.digest(prints, threshold: threshold, noisyThreshold: noisyThreshold)
    }

    /// The digest of the prints loaded; nil before `prepare`.
    package var digest: String? { book.withLock { $0?.digest } }

    /// The candidate each of `voices` is most similar to (cosine), when that is at least
    /// `threshold`; nil for a voice like none. Several voices of a recording may take one
    /// candidate: the clustering split a voice that the print (or label) says is one.
    static package func match(_ voices: [[Float]], _ candidates: [[Float]], threshold: Float = VoiceBook.threshold) -> [Int?] {
        ArchiveLabels.match(voices, candidates, threshold: threshold)
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

    /// Stores what the tap heard in the recording `path` (decision 0075) and gives its voices
    /// (centroids, with their seconds) their archive-wide label numbers and names: the labels are
    /// decided in the state's transaction that stores the row (decision 0094), so a voice another
    /// writer labelled since this pass began takes that label, and a new number is never given
    /// twice. `write(labels, names)` writes the tap's files and returns the turns the state keeps;
    /// it runs inside that transaction, so the row is stored only once the files are in place.
    /// Nil (and nothing called) before `prepare`. Called once per recording, by the tap's `finish`.
    package func keep(path: String, voices: [(centroid: [Float], seconds: Double)],
                      write: (_ labels: [Int], _ names: [String?]) throws -> String) throws -> (labels: [Int], names: [String?], digest: String)? {
        // Held across the transaction: the stage's taps on this machine store one at a time, as the
        // state makes every writer do, and each learns from the rows stored before it.
        try book.withLock { b throws -> (labels: [Int], names: [String?], digest: String)? in
            guard var book = b else { return nil }
            let names = Self.names(voices.map(\.centroid), prints: book.prints)
            let labels = try book.store.keep(path: path, stage: book.stage, voices: voices, digest: book.digest,
                                             labels: &book.labels, turns: { try write($0, names) })
            b = book
            return (labels, names, book.digest)
        }
    }
}
