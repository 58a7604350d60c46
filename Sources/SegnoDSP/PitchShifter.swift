import Foundation

/// Errors from `PitchShifter.init`.
public enum PitchShifterError: Error, Equatable, CustomStringConvertible {
    /// The shift is outside −24…+24 semitones (or not finite).
    case semitonesOutOfRange(Double)
    /// The tempo is outside 0.25…4 (or not finite).
    case tempoOutOfRange(Double)
    /// The sample rate is not positive.
    case invalidSampleRate(Int)
    /// The channel count is not positive.
    case invalidChannels(Int)

    public var description: String {
        switch self {
        case .semitonesOutOfRange(let s): "pitch shift \(s) semitones is outside −24…+24"
        case .tempoOutOfRange(let t): "tempo \(t) is outside 0.25…4"
        case .invalidSampleRate(let r): "sample rate \(r) Hz is not positive"
        case .invalidChannels(let c): "channel count \(c) is not positive"
        }
    }
}

/// A streaming pitch shifter with an optional tempo change, for the `pitch` stage.
///
/// The pitch moves by `semitones` (frequencies scale by `2^(semitones/12)`) and the speed by
/// `tempo` (output duration = input duration / tempo) independently. It is a phase vocoder
/// time-stretch (identity phase locking, transients copied, not smeared; see `PhaseVocoder`) by
/// `ratio / tempo` combined with a windowed-sinc resampler by `ratio`: for a shift up the
/// resampler runs first (fewer frames for the vocoder), for a shift down it runs last.
///
/// Output frame `n` corresponds to input time `n · tempo`: the stages' latency is
/// compensated, so the output is aligned with the input, and `finish` flushes the tail so
/// that exactly `round(inputFrames / tempo)` frames come out in all. Output values depend only
/// on the input samples, never on how they were split into blocks. With 0 semitones and tempo
/// 1 the input is copied unchanged.
///
/// A value is used by one thread at a time; copying a fresh value gives an independent
/// shifter (its buffers are copied on first use).
public struct PitchShifter: Sendable {
    /// Frames per second, in Hz.
    public let sampleRate: Int
    /// Interleaved channels per frame.
    public let channels: Int
    /// Pitch shift in semitones (−24…+24).
    public let semitones: Double
    /// Speed factor (0.25…4); output duration is input duration / tempo.
    public let tempo: Double
    /// Frequency ratio applied: `2^(semitones/12)`, or the nearest fraction with a
    /// denominator up to 1024 when that is within 0.035 cent of it.
    public let ratio: Double

    private enum Layout: Sendable {
        /// Exact copy (0 semitones, tempo 1).
        case passThrough
        /// Resample, then stretch (shift up).
        case resampleFirst
        /// Stretch, then resample (shift down).
        case stretchFirst
        /// Resample only (the stretch factor is exactly 1).
        case resampleOnly
        /// Stretch only (no pitch change).
        case stretchOnly
    }

    private let layout: Layout
    private var resampler: SincResampler?
    private var vocoder: PhaseVocoder?
    /// Stage input, between stages, and the aligned output (absolute index 0 = first frame out).
    private var input: PlanarFIFO
    private var middle: PlanarFIFO
    private var output: PlanarFIFO
    /// Input frames received so far.
    private var framesIn = 0
    /// Output frames handed out so far.
    private var framesOut = 0
    private var finished = false

    /// Frames handed to the stages per step; bounds the internal buffers.
    private static let chunk = 2048

    /// Makes a shifter for `channels` interleaved channels at `sampleRate` Hz, moving the
    /// pitch by `semitones` (−24…+24) and the speed by `tempo` (0.25…4). Called once per
    /// recording; throws `PitchShifterError` on a value out of range.
    public init(sampleRate: Int, channels: Int, semitones: Double, tempo: Double = 1.0) throws {
        guard sampleRate > 0 else { throw PitchShifterError.invalidSampleRate(sampleRate) }
        guard channels > 0 else { throw PitchShifterError.invalidChannels(channels) }
        guard semitones.isFinite, (-24.0...24.0).contains(semitones) else {
            throw PitchShifterError.semitonesOutOfRange(semitones)
        }
        guard tempo.isFinite, (0.25...4.0).contains(tempo) else {
            throw PitchShifterError.tempoOutOfRange(tempo)
        }
        self.sampleRate = sampleRate
        self.channels = channels
        self.semitones = semitones
        self.tempo = tempo
        // The ratio is taken as the nearest small fraction when one is within 0.035 cent,
        // so the resampler has exact phases; time alignment stays exact either way.
        var ratio = semitones == 0 ? 1.0 : pow(2.0, semitones / 12.0)
        if let f = SincResampler.rational(near: ratio) { ratio = Double(f.p) / Double(f.q) }
        self.ratio = ratio
        let stretch = ratio / tempo
        // The vocoder runs at the input rate, or at the input rate / ratio after a resampler
        // that shortens; its frame is about 85 ms long at the rate it runs at.
        let size = Self.frameSize(sampleRate: ratio > 1 && stretch != 1 ? Int(Double(sampleRate) / ratio) : sampleRate)
        let cap = 2 * size + 2 * Self.chunk
        // The FIFO the vocoder reads holds its whole reach (about five frames) plus room for
        // many chunks, so the held frames move to the front of the storage only now and then.
        let vocoderCap = { (pv: PhaseVocoder) in pv.inputSpan + 16 * Self.chunk }
        if ratio == 1 && tempo == 1 {
            layout = .passThrough
            input = PlanarFIFO(channels: channels, capacity: 16, start: 0)
            middle = input
            output = input
        } else if ratio == 1 || stretch == 1 {
            let pv: PhaseVocoder? = ratio == 1 ? PhaseVocoder(size: size, stretch: stretch, channels: channels) : nil
            layout = ratio == 1 ? .stretchOnly : .resampleOnly
            vocoder = pv
            if let pv {
                input = PlanarFIFO(channels: channels, capacity: vocoderCap(pv), start: pv.firstInput)
                input.appendZeros(-pv.firstInput)
                output = PlanarFIFO(channels: channels, capacity: cap, start: 0)
            } else {
                let rs = SincResampler(step: ratio, sampleRate: sampleRate, firstOutput: 0)
                resampler = rs
                input = PlanarFIFO(channels: channels, capacity: cap, start: rs.firstInput(for: 0))
                input.appendZeros(-rs.firstInput(for: 0))
                output = PlanarFIFO(channels: channels, capacity: cap, start: 0)
            }
            middle = PlanarFIFO(channels: channels, capacity: 16, start: 0)
        } else if ratio > 1 {
            layout = .resampleFirst
            let pv = PhaseVocoder(size: size, stretch: stretch, channels: channels)
            let rs = SincResampler(step: ratio, sampleRate: sampleRate, firstOutput: pv.firstInput)
            vocoder = pv
            resampler = rs
            let first = rs.firstInput(for: pv.firstInput)
            input = PlanarFIFO(channels: channels, capacity: cap, start: first)
            input.appendZeros(-first)
            middle = PlanarFIFO(channels: channels, capacity: vocoderCap(pv), start: pv.firstInput)
            output = PlanarFIFO(channels: channels, capacity: cap, start: 0)
        } else {
            layout = .stretchFirst
            let pv = PhaseVocoder(size: size, stretch: stretch, channels: channels)
            let rs = SincResampler(step: ratio, sampleRate: sampleRate, firstOutput: 0)
            vocoder = pv
            resampler = rs
            input = PlanarFIFO(channels: channels, capacity: vocoderCap(pv), start: pv.firstInput)
            input.appendZeros(-pv.firstInput)
            middle = PlanarFIFO(channels: channels, capacity: cap, start: rs.firstInput(for: 0))
            output = PlanarFIFO(channels: channels, capacity: cap, start: 0)
        }
    }

    /// The vocoder frame length for a sample rate: the power of two nearest 85 ms
    /// (4096 frames at 44.1 and 48 kHz).
    static func frameSize(sampleRate: Int) -> Int {
        let exponent = (log2(Double(sampleRate) * 0.085)).rounded()
        return 1 << Int(min(15, max(8, exponent)))
    }

    /// Takes `frames` interleaved frames from `input` and writes every output frame now ready
    /// into `output` (replacing its contents; `output.frames` may be smaller or larger than
    /// `frames`, and 0 while the shifter fills up). Called once per block, before `finish`.
    public mutating func process(_ input: UnsafePointer<Float>, frames: Int, into output: inout AudioBlock) {
        precondition(!finished, "PitchShifter.process after finish")
        output.reset(channels: channels, capacity: 0)
        if layout == .passThrough {
            output.reserve(frames: frames)
            output.samples.withUnsafeMutableBufferPointer { $0.baseAddress!.update(from: input, count: frames * channels) }
            output.frames = frames
            framesIn += frames
            framesOut += frames
            return
        }
        var done = 0
        while done < frames {
            let n = min(Self.chunk, frames - done)
            self.input.appendInterleaved(input + done * channels, frames: n, at: framesIn)
            framesIn += n
            done += n
            runStages()
            drain(into: &output, limit: Int.max)
        }
    }

    /// `process(_:frames:into:)` for a whole block; `input.channels` must be `channels`.
    public mutating func process(_ input: AudioBlock, into output: inout AudioBlock) {
        precondition(input.channels == channels, "PitchShifter: block has \(input.channels) channels, expected \(channels)")
        guard input.frames > 0 else {
            precondition(!finished, "PitchShifter.process after finish")
            output.reset(channels: channels, capacity: 0)
            return
        }
        input.samples.withUnsafeBufferPointer { process($0.baseAddress!, frames: input.frames, into: &output) }
    }

    /// Flushes the tail: writes the remaining output frames into `output` (replacing its
    /// contents), so that the total is exactly `round(inputFrames / tempo)`. Called once,
    /// after the last `process`.
    public mutating func finish(into output: inout AudioBlock) {
        precondition(!finished, "PitchShifter.finish called twice")
        finished = true
        output.reset(channels: channels, capacity: 0)
        let total = Int((Double(framesIn) / tempo).rounded())
        if layout == .passThrough { return }
        while framesOut + self.output.count < total {
            self.input.appendZeros(Self.chunk)
            runStages()
        }
        drain(into: &output, limit: total - framesOut)
    }

    /// Writes the running state for a checkpoint (decision 0095): what the shifter was made for
    /// (channels, ratio, tempo: a restore checks them), the resampler's position, the vocoder,
    /// the three FIFOs and the frame counts. Called between two blocks.
    public func save(into w: inout StateBytes.Writer) {
        w.int(channels)
        w.double(ratio)
        w.double(tempo)
        w.int(resampler?.next ?? 0)
        vocoder?.save(into: &w)
        input.save(into: &w)
        middle.save(into: &w)
        output.save(into: &w)
        w.int(framesIn)
        w.int(framesOut)
    }

    /// Takes the state `save` wrote from a shifter of the same rate, channels, shift and tempo.
    /// Called on a fresh shifter before its first block.
    public mutating func restore(from r: inout StateBytes.Reader) throws(StateBytes.Mismatch) {
        let ch = try r.int("channels"), ratio = try r.double("pitch ratio"), tempo = try r.double("tempo")
        guard ch == channels, ratio == self.ratio, tempo == self.tempo else {
            throw StateBytes.Mismatch("a pitch shift of ratio \(ratio), tempo \(tempo), \(ch) channels, not \(self.ratio), \(self.tempo), \(channels)")
        }
        let next = try r.int("pitch resampler position")
        try vocoder?.restore(from: &r)
        try input.restore(from: &r)
        try middle.restore(from: &r)
        try output.restore(from: &r)
        framesIn = try r.int("frames in")
        framesOut = try r.int("frames out")
        resampler?.next = next
    }

    /// Runs every stage on what its input holds.
    private mutating func runStages() {
        switch layout {
        case .passThrough:
            break
        case .resampleFirst:
            resampler!.run(&input, &middle)
            vocoder!.run(&middle, &output)
        case .stretchFirst:
            vocoder!.run(&input, &middle)
            resampler!.run(&middle, &output)
        case .resampleOnly:
            resampler!.run(&input, &output)
        case .stretchOnly:
            vocoder!.run(&input, &output)
        }
    }

    /// Moves up to `limit` finished frames from the output FIFO to the end of `block`.
    private mutating func drain(into block: inout AudioBlock, limit: Int) {
        framesOut += output.pop(into: &block, limit: limit)
    }
}
