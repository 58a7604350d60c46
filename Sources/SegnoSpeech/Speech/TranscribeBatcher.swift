import Foundation
import SegnoCore
import Synchronization

/// Where short recordings sit in a packed stream (decision 0088): one after another in 30 s
/// Whisper windows, `gap` seconds of silence between two recordings and half of it at a window's
/// edges, so none straddles a multiple of 30 s. The helper transcribes the stream as one
/// recording (seeking on from each window's last word, as in any long recording).
package struct TranscriptPacking: Sendable, Equatable {
    /// Seconds of one Whisper window.
    static package let window = 30.0
    /// Seconds of silence between two recordings of a window (half at either edge).
    static package let gap = 1.0

    /// Each recording's span in the packed stream, seconds (start, end), in the order given.
    package var spans: [(start: Double, end: Double)]
    /// The windows, seconds of the packed stream: consecutive, each at most `window` long.
    package var clips: [(start: Double, end: Double)]
    /// Samples of the packed stream at 16 kHz (silence included).
    package var frames: Int

    /// Packs recordings of `durations` seconds (each at most `window - gap`) in order, a new
    /// window when the next one does not fit in the current one.
    package init(durations: [Double], gap: Double = TranscriptPacking.gap, window: Double = TranscriptPacking.window) {
        spans = []
        clips = []
        var clipStart = 0.0, pos = 0.0, inWindow = 0
        for d in durations {
            if inWindow > 0 && pos + gap + d + gap / 2 - clipStart > window {
                pos += gap / 2
                clips.append((clipStart, pos))
                clipStart = pos
                inWindow = 0
            }
            pos += inWindow == 0 ? gap / 2 : gap
            spans.append((pos, pos + d))
            pos += d
            inWindow += 1
        }
        if inWindow > 0 {
            pos += gap / 2
            clips.append((clipStart, pos))
        }
        frames = Int((pos * 16000).rounded(.up))
    }

    static package func == (a: Self, b: Self) -> Bool {
        a.frames == b.frames && a.spans.elementsEqual(b.spans) { $0 == $1 } && a.clips.elementsEqual(b.clips) { $0 == $1 }
    }

    /// Sample index of `seconds` in the packed stream.
    static package func frame(_ seconds: Double) -> Int { Int((seconds * 16000).rounded()) }

    /// The packed stream: each recording's samples (16 kHz mono) at its span, silence elsewhere.
    package func stream(_ recordings: [[Float]]) -> [Float] {
        var out = [Float](repeating: 0, count: frames)
        for (x, span) in zip(recordings, spans) {
            let at = Self.frame(span.start)
            let n = min(x.count, max(0, frames - at))
            out.withUnsafeMutableBufferPointer { o in
                x.withUnsafeBufferPointer { s in
                    for i in 0..<n { o[at + i] = s[i] }
                }
            }
        }
        return out
    }

    /// Each recording's own transcript out of the packed one: every word goes to the recording
    /// whose span holds its middle (else the nearest span of its window), its times moved back to
    /// that recording's timeline and kept within it; a segment of the packed stream becomes one
    /// segment per recording it covers, made of that recording's words only (a segment without
    /// words goes to the recording its middle falls in). `durations` in seconds, as packed.
    package func split(_ packed: Transcript, durations: [Double]) -> [Transcript] {
        var out = durations.map { Transcript(language: packed.language, languageConfidence: packed.languageConfidence, duration: $0, segments: []) }
        func owner(_ start: Double, _ end: Double) -> Int {
            let mid = (start + end) / 2
            if let i = spans.firstIndex(where: { $0.start <= mid && mid <= $0.end }) { return i }
            let clip = clips.firstIndex { $0.start <= mid && mid < $0.end } ?? (mid < 0 ? 0 : clips.count - 1)
            let inClip = spans.indices.filter { clips.indices.contains(clip) && spans[$0].start >= clips[clip].start && spans[$0].end <= clips[clip].end }
            let candidates = inClip.isEmpty ? Array(spans.indices) : inClip
            return candidates.min { distance(mid, spans[$0]) < distance(mid, spans[$1]) } ?? 0
        }
        func local(_ t: Double, _ i: Int) -> Double { min(max(0, t - spans[i].start), durations[i]) }
        for s in packed.segments {
            guard !s.words.isEmpty else {
                guard !s.text.isEmpty else { continue }
                let i = owner(s.start, s.end)
                var seg = s
                seg.start = local(s.start, i)
                seg.end = local(s.end, i)
                out[i].segments.append(seg)
                continue
            }
            var runs: [(owner: Int, words: [Transcript.Word], text: String)] = []
            let spaced = Self.spacedBefore(s.words.map(\.text), in: s.text)
            for (w, space) in zip(s.words, spaced) {
                let i = owner(w.start, w.end)
                var word = w
                word.start = local(w.start, i)
                word.end = max(word.start, local(w.end, i))
                if runs.last?.owner == i {
                    runs[runs.count - 1].words.append(word)
                    runs[runs.count - 1].text += (space ? " " : "") + word.text
                } else {
                    runs.append((i, [word], word.text))
                }
            }
            for run in runs {
                let text = run.text
                out[run.owner].segments.append(Transcript.Segment(
                    start: run.words.first!.start, end: run.words.last!.end, text: text,
                    confidence: Transcript.segmentConfidence(words: run.words, windowLogProb: log(max(s.confidence, 1e-6))), words: run.words))
            }
        }
        return out
    }

    /// For each word, whether the segment's text has a space before it ("ill-disposed" is the
    /// words "ill" and "-disposed" without one); true for a word not found in the text.
    static package func spacedBefore(_ words: [String], in text: String) -> [Bool] {
        var cursor = text.startIndex
        return words.map { w in
            guard !w.isEmpty, let r = text.range(of: w, range: cursor..<text.endIndex) else { return true }
            defer { cursor = r.upperBound }
            return r.lowerBound == text.startIndex || text[cursor..<r.lowerBound].contains { $0.isWhitespace } || cursor == text.startIndex
        }
    }

    private func distance(_ t: Double, _ span: (start: Double, end: Double)) -> Double {
        t < span.start ? span.start - t : max(0, t - span.end)
    }
}

/// The batch of short recordings that wait for one transcription (decision 0088), kept by a
/// `transcribe` stage for the run: a tap whose recording is short hands its 16 kHz samples here
/// and waits (parked, so the worker pool starts the next recording meanwhile) until the batch is
/// full, nobody else in the pool works, or its first member has waited `maxWait` seconds; the
/// member that finds it so runs it on a helper and hands each member its own transcript. When the
/// batch as a whole fails (the helper died, its answer made no sense), every member is told to
/// try again alone, so a recording that breaks the helper fails by itself.
package final class TranscribeBatcher: Sendable {
    /// What a member gets back.
    package enum Outcome: Sendable {
        case transcript(Transcript)
        /// The batch failed as a whole: transcribe this recording alone.
        case alone
    }

    private struct Batch {
        var id: Int
        var samples: [[Float]] = []
        var firstJoined: Date?
        var packing: TranscriptPacking { TranscriptPacking(durations: samples.map { Double($0.count) / 16000 }) }
        /// No room left for a one-second recording.
        func isFull(windows: Int) -> Bool {
            let clips = packing.clips
            guard clips.count >= windows, let last = clips.last else { return false }
            return TranscriptPacking.window - (last.end - last.start) < TranscriptPacking.gap + 1
        }
    }

    private struct State {
        var open: Batch
        var nextID = 1
        /// Results of batches that ran, by batch id and member index; a member removes its own.
        var results: [Int: [Int: Outcome]] = [:]
    }

    /// Windows (30 s each) one batch fills before it runs: the packed stream is at most this long.
    package let windows: Int
    /// Seconds the first member of a batch waits for others at most.
    package let maxWait: Double
    private let state: Mutex<State>
    private let wake = NSCondition()
    private let ranCount = Mutex(0)

    package init(windows: Int = 4, maxWait: Double = 3) {
        self.windows = max(1, windows)
        self.maxWait = maxWait
        state = Mutex(State(open: Batch(id: 0)))
    }

    private let memberCount = Mutex(0)

    /// Batches run so far (tests).
    package var batchesRun: Int { ranCount.withLock { $0 } }
    /// Recordings that went through a batch so far (tests).
    package var membersBatched: Int { memberCount.withLock { $0 } }

    /// Adds a recording's samples (16 kHz mono, at most `TranscribeConfig.batchSeconds`) to the
    /// open batch and waits for its transcript. `run` transcribes a packed stream (the helper's
    /// batch call); it is called by whichever member runs the batch, on its thread. Called by a
    /// tap's `finish`, on its worker thread; `parking` is the run's worker pool.
    package func transcribe(_ samples: [Float], parking: WorkerParking,
                            run: ([Float], TranscriptPacking) throws(SpeechError) -> Transcript) -> Outcome {
        let (mine, full) = state.withLock { s -> ((batch: Int, index: Int), Batch?) in
            var closed: Batch?
            var trial = s.open
            trial.samples.append(samples)
            if trial.packing.clips.count > windows && !s.open.samples.isEmpty {
                closed = s.open
                s.open = Batch(id: s.nextID)
                s.nextID += 1
            }
            if s.open.samples.isEmpty { s.open.firstJoined = Date() }
            s.open.samples.append(samples)
            let me = (batch: s.open.id, index: s.open.samples.count - 1)
            return (me, closed)
        }
        if let full { runBatch(full, run: run) }
        parking.park()
        var parked = true
        defer { if parked { parking.unpark() } }
        wake.lock()
        while true {
            if let r = takeResult(mine) { wake.unlock(); return r }
            // Still open? Then run it when nothing more can come or it waited long enough.
            let due = state.withLock { s -> Batch? in
                guard s.open.id == mine.batch else { return nil }
                let waited = s.open.firstJoined.map { Date().timeIntervalSince($0) } ?? 0
                guard s.open.isFull(windows: windows) || parking.isStalled || waited >= maxWait else { return nil }
                defer { s.open = Batch(id: s.nextID); s.nextID += 1 }
                return s.open
            }
            if let due {
                wake.unlock()
                parking.unpark()
                parked = false
                runBatch(due, run: run)
                return takeResult(mine) ?? .alone
            }
            _ = wake.wait(until: Date().addingTimeInterval(0.05))
        }
    }

    private func takeResult(_ mine: (batch: Int, index: Int)) -> Outcome? {
        state.withLock { s in
            guard let r = s.results[mine.batch]?.removeValue(forKey: mine.index) else { return nil }
            if s.results[mine.batch]?.isEmpty == true { s.results[mine.batch] = nil }
            return r
        }
    }

    /// Runs a closed batch and posts each member's outcome.
    private func runBatch(_ batch: Batch, run: ([Float], TranscriptPacking) throws(SpeechError) -> Transcript) {
        let packing = batch.packing
        let durations = batch.samples.map { Double($0.count) / 16000 }
        var outcomes: [Int: Outcome] = [:]
        do {
            let packed = try run(packing.stream(batch.samples), packing)
            for (i, t) in packing.split(packed, durations: durations).enumerated() { outcomes[i] = .transcript(t) }
        } catch {
            for i in batch.samples.indices { outcomes[i] = .alone }
        }
        ranCount.withLock { $0 += 1 }
        memberCount.withLock { $0 += batch.samples.count }
        state.withLock { $0.results[batch.id] = outcomes }
        wake.lock()
        wake.broadcast()
        wake.unlock()
    }
}
