import SegnoCore

/// Where a long recording's transcription is cut into chunks (decision 0098). Each chunk goes to
/// the helper as a recording of its own, so its memory stays flat with the recording's length and,
/// in a split recording, Whisper works on one chunk while the next arrives. A cut falls at the
/// quietest `quietSeconds` window of the `lookBackSeconds` before a chunk reaches
/// `seconds`, and is made only once `tailSeconds` of audio follow it, so no chunk but the first is
/// shorter than that. Samples at 16 kHz (`VoiceActivityEngine.rate`).
package struct TranscriptChunking: Sendable, Equatable {
    /// Two minutes: four of Whisper's 30 s windows; what is left to transcribe after a split
    /// recording's stream has ended (at most 2 min 20 s; 5-minute chunks left 72 s of a 20-minute
    /// run's 368 s to the helper alone). 7.7 MB at 16 kHz float.
    static package let standard = TranscriptChunking(seconds: 120, lookBackSeconds: 20, tailSeconds: 20)
    /// Chunks a split recording's tap lets each lane's helper hold, ended and not yet answered,
    /// before it waits for the oldest: the helper's pace varies with the speech (a window it
    /// decodes badly is decoded again), and the stream should not stop for it.
    static package let queued = 2
    /// Helpers a recording's chunks take turns on: chunk k goes to lane k mod `lanes`, split or
    /// not, so a transcript does not depend on the cores (each helper's sampler carries from
    /// chunk to chunk). Split, the lanes transcribe side by side, each on one thread: Whisper is
    /// the slowest stage of a spoken-word chain, and on two threads of one helper it cost about
    /// 19 % more CPU for the same words (decision 0098). Not split, they take turns: the second
    /// lane's helper costs its memory and its model's load, once a second chunk begins.
    static package let lanes = 2
    /// The length of the window whose energy finds the quiet point (0.2 s): a pause between words.
    static package let quietSeconds = 0.2
    /// The step between the windows tried (10 ms).
    static package let stepSeconds = 0.01

    /// A chunk's length before its cut is looked for, in seconds.
    package var seconds: Double
    /// The cut is the quietest point of this many seconds before `seconds`.
    package var lookBackSeconds: Double
    /// A cut is made only when at least this many seconds follow it; a recording that ends sooner
    /// leaves its last chunk a little longer.
    package var tailSeconds: Double

    package init(seconds: Double, lookBackSeconds: Double, tailSeconds: Double) {
        precondition(seconds > lookBackSeconds && lookBackSeconds > Self.quietSeconds && tailSeconds > 0)
        self.seconds = seconds
        self.lookBackSeconds = lookBackSeconds
        self.tailSeconds = tailSeconds
    }
}

/// Cuts one recording's 16 kHz samples into chunks as they arrive. Holds at most `lookBackSeconds`
/// plus `tailSeconds` of samples (1.3 MB each at the standard rule); sends the rest on at once.
/// `feed` once per block, `finish` once after the last.
package final class TranscriptChunker {
    package let rule: TranscriptChunking
    /// The first sample of each chunk, from 0: where each chunk's times begin in the recording.
    package private(set) var starts: [Int] = [0]
    private let rate = Double(VoiceActivityEngine.rate)
    /// Samples of the current chunk sent before any are held (`seconds − lookBackSeconds`).
    private let direct: Int
    private let lookBack: Int
    private let tail: Int
    private let window: Int
    private let step: Int
    /// Samples of the current chunk already sent.
    private var sent = 0
    /// Samples of the current chunk (and, after a chosen cut, of the next) not yet sent.
    private var held: [Float] = []
    /// Where in `held` the current chunk ends, once chosen; the cut waits for `tail` samples after it.
    private var cutAt: Int?
    /// The energy of each step of the look-back (reused from cut to cut).
    private var energies: [Double] = []

    package init(_ rule: TranscriptChunking = .standard) {
        self.rule = rule
        lookBack = Int((rule.lookBackSeconds * rate).rounded())
        direct = Int((rule.seconds * rate).rounded()) - lookBack
        tail = Int((rule.tailSeconds * rate).rounded())
        window = Int((TranscriptChunking.quietSeconds * rate).rounded())
        step = Int((TranscriptChunking.stepSeconds * rate).rounded())
        held.reserveCapacity(lookBack + tail + 8192)
    }

    /// Takes the next samples: `send` gets the ones that belong to the current chunk, in order,
    /// and `cut` is called where a chunk ends (the samples after it go to `send` afterwards, as
    /// the next chunk's beginning). Called once per block.
    package func feed(_ samples: UnsafeBufferPointer<Float>, send: (UnsafeBufferPointer<Float>) throws -> Void,
                      cut: () throws -> Void) throws {
        var from = 0
        if cutAt == nil && held.isEmpty && sent < direct {
            let n = min(direct - sent, samples.count)
            try send(UnsafeBufferPointer(rebasing: samples[0..<n]))
            sent += n
            from = n
        }
        guard from < samples.count else { return }
        held.append(contentsOf: samples[from...])
        try settle(send: send, cut: cut)
    }

    /// Sends what is held: the recording ended, so its last chunk ends here (a cut waiting for
    /// its tail is dropped). Called once after the last `feed`.
    package func finish(send: (UnsafeBufferPointer<Float>) throws -> Void) throws {
        try held.withUnsafeBufferPointer { try send($0) }
        sent += held.count
        held.removeAll(keepingCapacity: true)
        cutAt = nil
    }

    /// Chooses the cut once the look-back is held, and makes it once its tail is.
    private func settle(send: (UnsafeBufferPointer<Float>) throws -> Void, cut: () throws -> Void) throws {
        while true {
            if cutAt == nil {
                guard held.count >= lookBack else { return }
                cutAt = quietest()
            }
            let c = cutAt!
            guard held.count - c >= tail else { return }
            try held.withUnsafeBufferPointer { try send(UnsafeBufferPointer(rebasing: $0[0..<c])) }
            try cut()
            starts.append(starts.last! + sent + c)
            cutAt = nil
            // The next chunk begins with what followed the cut.
            let n = min(direct, held.count - c)
            try held.withUnsafeBufferPointer { try send(UnsafeBufferPointer(rebasing: $0[c..<(c + n)])) }
            sent = n
            held.removeSubrange(0..<(c + n))
        }
    }

    /// The middle of the quietest `window` of the look-back (the first `lookBack` held samples),
    /// windows `step` apart; the latest of equally quiet ones (a chunk as long as it may be).
    private func quietest() -> Int {
        let steps = lookBack / step
        if energies.count != steps { energies = [Double](repeating: 0, count: steps) }
        held.withUnsafeBufferPointer { h in
            for j in 0..<steps {
                var e = 0.0
                for i in (j * step)..<((j + 1) * step) { e += Double(h[i]) * Double(h[i]) }
                energies[j] = e
            }
        }
        let per = window / step
        var best = 0, bestSum = Double.infinity
        for j in 0...(steps - per) {
            var sum = 0.0
            for k in j..<(j + per) { sum += energies[k] }
            if sum <= bestSum { best = j; bestSum = sum }
        }
        return best * step + window / 2
    }
}

extension Transcript {
    /// One recording's transcript from the transcripts of its chunks: each chunk's times moved
    /// by where it starts (seconds), segments in order, the first chunk's language.
    static package func joined(_ pieces: [Transcript], starts: [Double]) -> Transcript {
        precondition(pieces.count == starts.count && !pieces.isEmpty)
        var all = pieces[0]
        all.segments = []
        for (piece, offset) in zip(pieces, starts) {
            for var s in piece.segments {
                s.start += offset
                s.end += offset
                for i in s.words.indices {
                    s.words[i].start += offset
                    s.words[i].end += offset
                }
                all.segments.append(s)
            }
        }
        all.duration = starts.last! + pieces.last!.duration
        return all
    }
}
