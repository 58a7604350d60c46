import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP

/// What the `level` stage's first pass finds: the loudness of the speech as a whole and of the
/// whole recording, in LUFS. The reference every voice segment is brought to.
package struct SpeechLoudness: Sendable, Equatable {
    /// Loudness of the hops inside voice segments (energy mean, −70 LUFS gate); nil without speech.
    package var speech: Double?
    /// Integrated loudness of the recording (EBU R128), LUFS; −∞ for silence.
    package var integrated: Double
}

/// Slow gain riding on voice segments, for `level`. The stream is cut into hops of
/// `LevelRider.hopSeconds`; each hop's K-weighted energy comes from libebur128 and its class
/// (voice or pause) from a voice activity detector (pauses' engines) on a 16 kHz mono copy.
/// Each voice segment gets one gain: the speech reference minus the segment's loudness, within
/// ±`maxGain` (segments shorter than `LevelRider.settleSeconds` lean on the one before). A pause
/// gets the lowest of the segments' gains around it (the next counts within
/// `LevelRider.lookaheadSeconds`) and `pauseCap`, so pause noise is never lifted more than the
/// recording as a whole. The hop targets are averaged over ±`LevelRider.smoothingHops` and the
/// gain glides linearly from hop to hop, plus `offset` dB everywhere.
///
/// Audio is held back until the gains around it are decided: the detector's latency (a segment
/// is reported when it ends, at most 10 s long) plus the look-ahead, so memory is bounded by
/// those lengths, not the recording's. The output has exactly the input's frames. Run without
/// `reference` it only measures (`SpeechLoudness`), giving no audio.
///
/// The voice segments come from a detector (`Voice.detect`), which the measuring pass runs, or
/// from that pass's `voiceSegments` (`Voice.known`): every later pass reads the same stream (a
/// spool, decision 0053), so the detector and its 16 kHz resampler run once per recording, not
/// once per pass (decision 0093). The gains do not depend on when a segment is reported, only on
/// which segments there are, so both give the same output.
final package class LevelRider {
    /// Where a pass's voice segments come from.
    package enum Voice {
        /// A fresh detector (nothing fed yet) on a 16 kHz copy of the stream.
        case detect(any VoiceDetector)
        /// The segments an earlier pass over the same stream found ([start, end) in 16 kHz samples, in order).
        case known([Range<Int>])
    }

    /// The hop, in seconds.
    package static let hopSeconds = 0.1
    /// A pause takes the next segment's gain into account this far ahead, in seconds: a pause
    /// up to this long keeps one gain throughout (as long as `pauses` leaves one by default).
    package static let lookaheadSeconds = PausesConfig.standardLongerThan
    /// Targets are averaged over this many hops on each side (0.7 s in all).
    package static let smoothingHops = 3
    /// A segment shorter than this (s) is measured together with the one before, in proportion.
    package static let settleSeconds = 1.0
    /// Hops quieter than this (LUFS) are not voice, whatever the detector says.
    package static let gate = -70.0

    private struct Segment {
        var hops: ClosedRange<Int>
        /// Segment loudness (LUFS), and its gain (dB), once all its hops are measured.
        var loudness: Double?
        var gain: Double?
    }

    private let detector: (any VoiceDetector)?
    /// Segments given, not yet moved into `segments` (`Voice.known`).
    private var pending: [Range<Int>] = []
    /// Every segment the detector reported, kept for the passes after this one (16 bytes each).
    private(set) package var voiceSegments: [Range<Int>] = []
    private let input = SpeechInput()
    private let reference: Double?
    private let maxGain: Double, pauseCap: Double, offset: Double
    private var meter: LoudnessMeter?
    private var rate = 1, channels = 1, hop = 1, lookahead = 1, settle = 1
    private var inputFrames = 0, hopFill = 0, decided = 0, finished = false
    /// Hop energies (mean square, K-weighted) from hop `energyBase`.
    private var energies: [Double] = [], energyBase = 0
    private var segments: [Segment] = [], found: [Range<Int>] = []
    /// Hop targets (dB) from hop `targetBase`; hops below `targetBase + targets.count` are decided.
    private var targets: [Double] = [], targetBase = 0
    /// Held input, interleaved, from frame `fifoStart`; frames before `emitted` have gone out.
    private var fifo: [Float] = [], fifoStart = 0, emitted = 0
    private var speechSum = 0.0, speechHops = 0

    /// `reference` (LUFS; nil to measure only) is what every voice segment is brought to, within
    /// ±`maxGain` dB; `pauseCap` (dB) bounds a pause's gain; `offset` (dB) is added everywhere.
    package init(voice: Voice, reference: Double?, maxGain: Double, pauseCap: Double, offset: Double) {
        switch voice {
        case .detect(let d): detector = d
        case .known(let s): detector = nil; pending = s
        }
        self.reference = reference
        self.maxGain = maxGain
        self.pauseCap = pauseCap
        self.offset = offset
    }

    /// Called once with the stream's format, before the first block.
    package func start(_ format: AudioFormat) throws {
        rate = format.sampleRate
        channels = format.channels
        hop = max(1, Int(Double(rate) * Self.hopSeconds))
        lookahead = Int((Self.lookaheadSeconds / Self.hopSeconds).rounded())
        settle = Int((Self.settleSeconds / Self.hopSeconds).rounded())
        meter = try LoudnessMeter(format: format, truePeak: false, stage: "level")
        if detector != nil { try input.start(sampleRate: rate) }
    }

    /// Takes one block; appends the frames now decided, with their gain, to `out` (riding only).
    package func feed(_ block: AudioBlock, into out: inout AudioBlock) throws {
        let n = block.frames
        if reference != nil {
            compactFifo()
            fifo.append(contentsOf: block.samples[0..<(n * channels)])
        }
        try block.samples.withUnsafeBufferPointer { try measure($0.baseAddress!, frames: n) }
        inputFrames += n
        if let detector { try input.feed(block) { detector.accept($0.baseAddress!, count: $0.count) } }
        collect()
        advance(into: &out)
    }

    /// Called once after the last block: decides the rest and gives out every held frame.
    package func finish(into out: inout AudioBlock) throws {
        if hopFill > 0 { closeHop(milliseconds: max(1, hopFill * 1000 / rate)) }
        if let detector {
            try input.finish { detector.accept($0.baseAddress!, count: $0.count) }
            detector.flush()
        }
        finished = true
        collect()
        advance(into: &out)
    }

    /// After `finish` of a measuring run: the loudness of the speech and of the whole recording.
    package var measured: SpeechLoudness {
        SpeechLoudness(speech: speechHops > 0 ? 10 * log10(speechSum / Double(speechHops)) - 0.691 : nil,
                       integrated: meter?.integrated ?? -.infinity)
    }

    /// Input frames held back, not yet given out (bounded by the detector's latency and the look-ahead).
    package var heldFrames: Int { inputFrames - emitted }
    /// Hop energies, targets and segments kept (bounded, whatever the length).
    package var bookkeeping: Int { energies.count + targets.count + segments.count }

    /// Feeds the meter hop by hop, so each hop's energy is that of its own frames.
    private func measure(_ p: UnsafePointer<Float>, frames: Int) throws {
        var i = 0
        while i < frames {
            let k = min(hop - hopFill, frames - i)
            try meter!.add(p + i * channels, frames: k)
            hopFill += k
            i += k
            if hopFill == hop { closeHop(milliseconds: Int((Self.hopSeconds * 1000).rounded())) }
        }
    }

    private func closeHop(milliseconds: Int) {
        let l = meter!.loudness(lastMilliseconds: milliseconds)
        energies.append(l.isFinite && l > Self.gate ? pow(10, (l + 0.691) / 10) : 0)
        hopFill = 0
    }

    private var measuredHops: Int { energyBase + energies.count }
    private func energy(_ j: Int) -> Double { energies[j - energyBase] }

    /// Moves the detector's new segments into `segments`, as the hops whose centres they hold.
    private func collect() {
        if let detector {
            detector.takeSegments(into: &found)
            voiceSegments += found
        } else if !pending.isEmpty {
            swap(&found, &pending)
        }
        let scale = Double(rate) / Double(VoiceActivityEngine.rate)
        for s in found {
            let lo = Double(s.lowerBound) * scale, hi = Double(s.upperBound) * scale
            var first = Int((lo / Double(hop) - 0.5).rounded(.up)), last = Int((hi / Double(hop) - 0.5).rounded(.up)) - 1
            if first > last { first = Int((lo + hi) / 2) / hop; last = first }
            if let prev = segments.last { first = max(first, prev.hops.upperBound + 1) }
            if first <= last { segments.append(Segment(hops: first...last)) }
        }
        found.removeAll(keepingCapacity: true)
        let d = detector?.decided ?? Int.max
        // Hops wholly before the detector's decided sample, less 5 ms for the resampler.
        decided = d == Int.max ? Int.max : max(0, Int(Double(d) * scale) - rate / 200) / hop
    }

    /// Decides what can be decided, and gives out the frames whose gains are known.
    private func advance(into out: inout AudioBlock) {
        while let t = nextTarget() {
            targets.append(t)
        }
        guard reference != nil else {
            emitted = min(inputFrames, (targetBase + targets.count) * hop)
            return trim()
        }
        let decidedHops = targetBase + targets.count
        while emitted < inputFrames {
            let k = emitted / hop
            guard finished || k + 1 + Self.smoothingHops < decidedHops else { break }
            let end = min((k + 1) * hop, inputFrames)
            emit(hop: k, frames: emitted..<end, into: &out)
            emitted = end
        }
        trim()
    }

    /// The target of the next undecided hop, or nil when it cannot be decided yet.
    private func nextTarget() -> Double? {
        let j = targetBase + targets.count
        guard j < measuredHops, finished || j + lookahead < decided else { return nil }
        // The segment holding j, or the next one.
        let s = segments.firstIndex { $0.hops.upperBound >= j }
        var t = pauseCap
        if let s, segments[s].hops.lowerBound <= j + lookahead {
            guard let g = segmentGain(s) else { return nil }
            if let g, segments[s].hops.contains(j) { return g }
            if let g { t = min(t, g) }
        }
        // A pause (or a segment too quiet to be speech): no higher than the voice around it.
        let before = (s ?? segments.count) - 1
        if before >= 0, let g = segmentGain(before) ?? nil { t = min(t, g) }
        return reference == nil ? 0 : t
    }

    /// The gain of segment `s` (dB; 0 when only measuring): nil while its hops are not all
    /// measured, .some(nil) when it is too quiet to be speech.
    private func segmentGain(_ s: Int) -> Double?? {
        if let g = segments[s].gain { return .some(g) }
        if let l = segments[s].loudness, l <= Self.gate { return .some(nil) }
        let hops = segments[s].hops
        if finished && hops.lowerBound >= measuredHops { return .some(nil) }
        guard hops.upperBound < measuredHops || finished else { return nil }
        let last = min(hops.upperBound, measuredHops - 1)
        var sum = 0.0
        for j in hops.lowerBound...last { sum += energy(j) }
        let count = last - hops.lowerBound + 1
        speechSum += sum
        speechHops += count
        var loudness = sum > 0 ? 10 * log10(sum / Double(count)) - 0.691 : -Double.infinity
        segments[s].loudness = loudness
        guard loudness > Self.gate else { return .some(nil) }
        if count < settle, s > 0, let before = segments[s - 1].loudness, before > Self.gate {
            let w = Double(count) / Double(settle)
            loudness = w * loudness + (1 - w) * before
            segments[s].loudness = loudness
        }
        let g = reference.map { min(maxGain, max(-maxGain, $0 - loudness)) } ?? 0
        segments[s].gain = g
        return .some(g)
    }

    /// The smoothed gain (linear) at the start of hop `k`.
    private func gain(atHop k: Int) -> Float {
        let lastDecided = targetBase + targets.count - 1
        var sum = 0.0
        for i in (k - Self.smoothingHops)...(k + Self.smoothingHops) {
            sum += targets[max(targetBase, min(lastDecided, i)) - targetBase]
        }
        return Float(Gain.linear(fromDecibels: offset + sum / Double(2 * Self.smoothingHops + 1)))
    }

    /// Gives out input frames `range` (inside hop `k`), the gain gliding to the next hop's.
    private func emit(hop k: Int, frames range: Range<Int>, into out: inout AudioBlock) {
        let a = gain(atHop: k), b = gain(atHop: k + 1)
        let step = (b - a) / Float(hop)
        let start = out.frames, count = range.count, ch = channels
        out.reserve(frames: start + count)
        fifo.withUnsafeBufferPointer { src in
            out.samples.withUnsafeMutableBufferPointer { dst in
                var g = a + step * Float(range.lowerBound - k * hop)
                var s = (range.lowerBound - fifoStart) * ch, d = start * ch
                for _ in 0..<count {
                    for _ in 0..<ch { dst[d] = src[s] * g; d += 1; s += 1 }
                    g += step
                }
            }
        }
        out.frames = start + count
    }

    /// Drops what no later hop needs: emitted frames, old hop energies, targets and segments.
    private func trim() {
        let k = emitted / hop
        let keepTargets = max(targetBase, k - Self.smoothingHops - 1)
        if keepTargets - targetBase > 256 { targets.removeFirst(keepTargets - targetBase); targetBase = keepTargets }
        let used = segments.firstIndex { $0.hops.upperBound >= targetBase } ?? segments.count
        if used > 64 { segments.removeFirst(used - 1) }
        let keepEnergy = min(targetBase + targets.count, segments.first(where: { $0.loudness == nil })?.hops.lowerBound ?? Int.max)
        if keepEnergy - energyBase > 256 { energies.removeFirst(keepEnergy - energyBase); energyBase = keepEnergy }
    }

    /// Drops emitted frames from the front of the FIFO once they are the larger part.
    private func compactFifo() {
        let gone = emitted - fifoStart
        if gone > 0 && gone * channels >= fifo.count / 2 {
            fifo.removeFirst(gone * channels)
            fifoStart = emitted
        }
    }
}
