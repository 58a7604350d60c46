import Foundation

/// Who said a transcript's segment or word: the `speakers` tap's label (`speaker-1`) and the
/// enrolled name when the voice has one.
public struct TranscriptSpeaker: Sendable, Hashable {
    public var label: String
    public var name: String?
    /// What a reader sees: the name, else the label.
    public var shown: String { name ?? label }

    public init(label: String, name: String? = nil) {
        self.label = label
        self.name = name
    }
}

/// One speaker turn as the transcript uses it: seconds of the source (decision 0072).
public struct TranscriptTurn: Sendable, Equatable {
    public var start: Double, end: Double
    public var speaker: TranscriptSpeaker

    public init(start: Double, end: Double, speaker: TranscriptSpeaker) {
        self.start = start
        self.end = end
        self.speaker = speaker
    }
}

extension Transcript {
    /// How far (seconds) a word or segment that overlaps no turn may be from the nearest turn and
    /// still be given its speaker (Whisper's word times and the voice activity's edges differ by
    /// a few hundred milliseconds; speech between turns is rarer than that).
    public static let nearestTurnReach = 1.0

    /// The transcript with each segment and word given its speaker, from the turns of the same
    /// run's `speakers` tap (source seconds); `toSource` maps this transcript's times (the stream
    /// the transcribe tap heard) to the source, nil when they are the source's. Decision 0077:
    /// a word goes to the turn it overlaps most (else the nearest within `nearestTurnReach`,
    /// else none); a segment whose words change speaker is split at those words, each part
    /// keeping its words, their text and their own confidence; a segment without words goes to
    /// the turn it overlaps most. Called once per recording, after both taps finished.
    package func attributed(to turns: [TranscriptTurn], toSource: ((Double) -> Double)?) -> Transcript {
        guard !turns.isEmpty else { return self }
        let sorted = turns.sorted { $0.start < $1.start }
        let src = toSource ?? { $0 }
        func speaker(_ a: Double, _ b: Double) -> TranscriptSpeaker? { Self.speaker(sorted, from: src(a), to: src(b)) }
        var out = self
        out.segments = []
        for var s in segments {
            guard !s.words.isEmpty else {
                s.speaker = speaker(s.start, s.end)
                out.segments.append(s)
                continue
            }
            for i in s.words.indices { s.words[i].speaker = speaker(s.words[i].start, s.words[i].end) }
            // A word no turn reaches says the same as the word before it (or, first, the next one that says).
            if let firstKnown = s.words.firstIndex(where: { $0.speaker != nil }) {
                for i in s.words.indices where s.words[i].speaker == nil {
                    s.words[i].speaker = i < firstKnown ? s.words[firstKnown].speaker : s.words[i - 1].speaker
                }
            }
            var runs: [[Word]] = []
            for w in s.words {
                if let last = runs.last?.last, last.speaker == w.speaker { runs[runs.count - 1].append(w) } else { runs.append([w]) }
            }
            if runs.count == 1 {
                s.speaker = s.words[0].speaker ?? speaker(s.start, s.end)
                out.segments.append(s)
                continue
            }
            for (k, run) in runs.enumerated() {
                let start = k == 0 ? s.start : run[0].start
                let end = k == runs.count - 1 ? s.end : run[run.count - 1].end
                out.segments.append(Segment(start: start, end: end, text: run.map(\.text).joined(separator: " "),
                                            confidence: Self.segmentConfidence(words: run, windowLogProb: log(max(s.confidence, 1e-6))),
                                            words: run, speaker: run[0].speaker))
            }
        }
        return out
    }

    /// The speaker of the turn that overlaps `a…b` (source seconds) most; when none overlaps, of
    /// the nearest turn within `nearestTurnReach`; nil when none is that near.
    static package func speaker(_ turns: [TranscriptTurn], from a: Double, to b: Double) -> TranscriptSpeaker? {
        var best: (overlap: Double, speaker: TranscriptSpeaker)?
        var nearest: (gap: Double, speaker: TranscriptSpeaker)?
        for t in turns {
            let overlap = min(b, t.end) - max(a, t.start)
            if overlap > 0 || (overlap == 0 && a == b && t.start <= a && a <= t.end) {
                if best == nil || overlap > best!.overlap { best = (overlap, t.speaker) }
            } else {
                let gap = max(t.start - b, a - t.end)
                if gap <= nearestTurnReach, nearest == nil || gap < nearest!.gap { nearest = (gap, t.speaker) }
            }
        }
        return best?.speaker ?? nearest?.speaker
    }
}
