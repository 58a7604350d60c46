import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP

/// What `pauses` does with silence, in seconds.
public struct PauseRules: Sendable, Equatable {
    /// Cut the silence before the first and after the last speech.
    public var trim: Bool
    /// Pauses longer than this are shortened to `to` (nil: pauses are kept).
    public var longerThan: Double?
    public var to: Double
    /// Kept before and after every stretch of speech the detector reports, so no word is clipped
    /// (the detectors report an onset up to 0.3 s after a soft first consonant begins).
    public static let padBefore = 0.4
    public static let padAfter = 0.25
    /// Length of the fades at a cut inside the recording.
    public static let fade = 0.01

    public init(trim: Bool, longerThan: Double?, to: Double) {
        self.trim = trim
        self.longerThan = longerThan
        self.to = to
    }
}

/// A stretch of the source that `pauses` removed: source frames `source`, removed at output frame `at`.
public struct PauseCut: Sendable, Equatable {
    public var source: Range<Int>
    public var at: Int
}

/// One recording's pause editing. A voice detector runs on a 16 kHz mono copy of the stream;
/// each stretch of speech it reports is widened by `PauseRules.padBefore` and `padAfter`, and what lies
/// between is a pause. Audio is held back until its frames are classified (the detector's
/// latency, at most its 10 s longest segment), and a pause only as long as `longerThan`: past
/// that it will be shortened, so its first `to/2` goes out (fading out) and only its last `to/2`
/// is kept (fading in when speech resumes). Memory is bounded by those lengths, not the recording's.
/// The `pauses` transform runs one with audio; its cut-list tap runs one without (`keepsAudio`
/// false), over the same stream, so the cut list describes exactly what the transform did.
final package class PauseEditor {
    package let rules: PauseRules
    package let keepsAudio: Bool
    private let detector: any VoiceDetector
    private let input = SpeechInput()
    private(set) package var rate = 1
    private var channels = 1
    private var padBefore = 0, padAfter = 0, half = 0, fade = 1, longest = Int.max
    /// Input frames fed, classified (`position`), and given out.
    private(set) package var inputFrames = 0
    private var position = 0
    private(set) package var outputFrames = 0
    /// Widened speech stretches in input frames, merged, in order; consumed from `next`.
    private var speech: [Range<Int>] = []
    private var next = 0
    private var found: [Range<Int>] = []
    /// Held input: frames `held.lowerBound…` interleaved in `fifo` from `fifoStart`.
    private var fifo: [Float] = []
    private var fifoStart = 0
    private var heldFrom = 0
    private var pauseStart: Int?
    private var pauseIsLong = false
    private var pauseIsLeading = false
    private var heardSpeech = false
    private var fadeInLeft = 0
    private(set) package var cuts: [PauseCut] = []

    /// The pauses between two stretches of speech (the widened stretches this editor keeps), in
    /// input frames, in order; complete after `finish`. The silence before the first and after the
    /// last stretch is not a pause. What the cut-list tap finds as `.pauses` (decision 0082).
    package var pauses: [Range<Int>] { prunedPauses + Self.gaps(speech[...]) }
    /// The pauses between stretches already dropped from `speech`.
    private var prunedPauses: [Range<Int>] = []

    private static func gaps(_ s: ArraySlice<Range<Int>>) -> [Range<Int>] {
        zip(s, s.dropFirst()).compactMap { a, b in a.upperBound < b.lowerBound ? a.upperBound..<b.lowerBound : nil }
    }

    package init(rules: PauseRules, detector: any VoiceDetector, keepsAudio: Bool) {
        self.rules = rules
        self.keepsAudio = keepsAudio
        self.detector = detector
    }

    /// Called once with the stream's format, before the first block.
    package func start(_ format: AudioFormat) throws {
        rate = format.sampleRate
        channels = format.channels
        try input.start(sampleRate: rate)
        padBefore = Int(PauseRules.padBefore * Double(rate))
        padAfter = Int(PauseRules.padAfter * Double(rate))
        half = Int(rules.to / 2 * Double(rate))
        fade = max(1, Int(PauseRules.fade * Double(rate)))
        if let l = rules.longerThan { longest = Int(l * Double(rate)) }
    }

    /// Takes one block of input; appends the frames now decided to `out` (when keeping audio).
    package func feed(_ block: AudioBlock, into out: inout AudioBlock) throws {
        let n = block.frames
        if keepsAudio {
            compactFifo()
            fifo.append(contentsOf: block.samples[0..<(n * channels)])
        }
        inputFrames += n
        try input.feed(block) { detector.accept($0.baseAddress!, count: $0.count) }
        collect()
        let decided = detector.decided == Int.max ? inputFrames
            : Int(Double(detector.decided) * Double(rate) / Double(VoiceActivityEngine.rate)) - padBefore - rate / 200
        advance(to: min(inputFrames, max(position, decided)), into: &out)
    }

    /// Called once after the last block: classifies the rest and ends a final pause.
    package func finish(into out: inout AudioBlock) throws {
        try input.finish { detector.accept($0.baseAddress!, count: $0.count) }
        detector.flush()
        collect()
        advance(to: inputFrames, into: &out)
        guard let p = pauseStart else { return }
        if rules.trim {
            cut(from: pauseIsLong ? p + half : p, to: inputFrames)
            pauseStart = nil
        } else {
            endPause(at: inputFrames, into: &out)
        }
    }

    /// Moves the detector's new segments (16 kHz) into `speech`, widened and in input frames.
    private func collect() {
        detector.takeSegments(into: &found)
        let scale = Double(rate) / Double(VoiceActivityEngine.rate)
        for s in found {
            let lo = max(0, Int((Double(s.lowerBound) * scale).rounded(.down)) - padBefore)
            let hi = Int((Double(s.upperBound) * scale).rounded(.up)) + padAfter
            if let last = speech.last, lo <= last.upperBound {
                speech[speech.count - 1] = last.lowerBound..<max(last.upperBound, hi)
            } else {
                speech.append(lo..<hi)
            }
        }
        found.removeAll(keepingCapacity: true)
    }

    /// Classifies frames up to `end` (every speech stretch starting before it is known).
    private func advance(to end: Int, into out: inout AudioBlock) {
        while position < end {
            while next < speech.count && speech[next].upperBound <= position { next += 1 }
            if next < speech.count && speech[next].lowerBound <= position {
                if pauseStart != nil { endPause(at: position, into: &out) }
                heardSpeech = true
                let stop = min(speech[next].upperBound, end)
                emit(position..<stop, fadeOut: false, into: &out)
                position = stop
            } else {
                if pauseStart == nil {
                    pauseStart = position
                    pauseIsLong = false
                    pauseIsLeading = !heardSpeech
                }
                position = min(next < speech.count ? speech[next].lowerBound : Int.max, end)
                let p = pauseStart!
                if pauseIsLeading && rules.trim {
                    heldFrom = position
                } else if !pauseIsLong && position - p > longest {
                    pauseIsLong = true
                    emit(p..<(p + half), fadeOut: true, into: &out)
                }
                if pauseIsLong { heldFrom = max(heldFrom, position - half) }
            }
        }
        if next > 64 {
            prunedPauses += Self.gaps(speech[...next])
            speech.removeFirst(next)
            next = 0
        }
    }

    /// The pause that began at `pauseStart` ends at `end`, where speech starts.
    private func endPause(at end: Int, into out: inout AudioBlock) {
        guard let p = pauseStart else { return }
        pauseStart = nil
        if pauseIsLeading && rules.trim {
            cut(from: p, to: end)
        } else if pauseIsLong {
            cut(from: p + half, to: end - half)
            emit((end - half)..<end, fadeOut: false, into: &out)
        } else {
            emit(p..<end, fadeOut: false, into: &out)
        }
    }

    private func cut(from: Int, to: Int) {
        guard to > from else { return }
        cuts.append(PauseCut(source: from..<to, at: outputFrames))
        fadeInLeft = fade
        heldFrom = max(heldFrom, to)
    }

    /// Gives out source frames `range` (held in the FIFO), fading in after a cut and, with
    /// `fadeOut`, fading out over their last frames.
    private func emit(_ range: Range<Int>, fadeOut: Bool, into out: inout AudioBlock) {
        let n = range.count
        guard n > 0 else { return }
        outputFrames += n
        heldFrom = max(heldFrom, range.upperBound)
        guard keepsAudio else { fadeInLeft = max(0, fadeInLeft - n); return }
        let ch = channels
        let base = out.frames
        out.reserve(frames: base + n)
        let offset = (range.lowerBound - fifoStart) * ch
        out.samples.withUnsafeMutableBufferPointer { o in
            fifo.withUnsafeBufferPointer { f in
                for i in 0..<n {
                    var g: Float = 1
                    if fadeInLeft > 0 { g = Float(fade - fadeInLeft) / Float(fade); fadeInLeft -= 1 }
                    if fadeOut && n - i <= fade { g *= Float(n - i - 1) / Float(fade) }
                    for c in 0..<ch { o[(base + i) * ch + c] = f[offset + i * ch + c] * g }
                }
            }
        }
        out.frames = base + n
    }

    /// Drops FIFO frames before `heldFrom` once they are a large share of it (amortised, no per-block allocation).
    private func compactFifo() {
        let drop = min(heldFrom - fifoStart, fifo.count / channels)
        guard drop > 0, drop * channels * 2 >= fifo.count else { return }
        fifo.removeFirst(drop * channels)
        fifoStart += drop
    }
}
