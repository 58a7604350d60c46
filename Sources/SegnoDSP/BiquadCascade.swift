/// A chain of biquad sections run over interleaved Float32 audio, with one independent filter
/// state per channel that carries over from one call to the next.
///
/// Create one per recording (or call `reset()` between recordings), then call `process` for each
/// block in order. The output does not depend on how the stream is cut into blocks: 1, 7 or 4096
/// frames at a time give bit-identical results.
///
/// Arithmetic: each section runs in Double precision (state and coefficients), four frames at a
/// time in a look-ahead form of direct form I (see `BiquadGroupKernel`); the Float32 samples are
/// widened on the way in and rounded once on the way out. Double was chosen by measurement: on white
/// noise through an 80 Hz high-pass at 48 kHz, a Float32-state direct form I is off by −83 dB
/// relative to the signal (transposed form II: −89 dB), worse than 16-bit audio, while Double state
/// is off by −152 dB, the Float32 output rounding itself; scalar Double runs as fast as Float here.
///
/// Denormals: every 64 frames of stream time (counted from the start or the last `reset()`, so
/// independent of block boundaries) state values below 1e-20 in magnitude are set to exactly 0, and
/// an output that would round to a subnormal Float32 is written as 0. A long silence after a signal
/// therefore ends with all state exactly 0 and never runs through slow subnormal arithmetic.
public struct BiquadCascade: Sendable {
    /// The sections, applied in order.
    public let sections: [Biquad]
    /// Interleaved channels per frame.
    public let channels: Int

    private typealias Kernel = BiquadGroupKernel
    /// Per channel, per section: `BiquadGroupKernel.stateCount` doubles.
    private var state: [Double]
    /// Per section: `BiquadGroupKernel.coefficientCount` precomputed doubles.
    private let coefficients: [Double]
    /// One channel of one segment, widened to Double (at most `flushInterval` frames).
    private var scratch: [Double]
    /// Frames processed since the last flush point, in 0..<flushInterval.
    private var phase: Int

    /// Frames between two flushes of tiny state values (stream time, not block time); a multiple
    /// of 4 so that flushes fall on the kernel's group boundaries.
    static let flushInterval = 64
    /// State values smaller than this in magnitude are flushed to 0 (−400 dBFS).
    static let flushThreshold = 1e-20

    /// A cascade of `sections` for audio with `channels` interleaved channels (≥ 1).
    /// An empty `sections` array passes audio through unchanged.
    public init(sections: [Biquad], channels: Int) {
        precondition(channels >= 1, "a filter needs at least one channel")
        self.sections = sections
        self.channels = channels
        self.state = [Double](repeating: 0, count: BiquadGroupKernel.stateCount * sections.count * channels)
        self.coefficients = sections.flatMap(BiquadGroupKernel.coefficients(for:))
        self.scratch = [Double](repeating: 0, count: Self.flushInterval)
        self.phase = 0
    }

    /// Clears the state of every channel, as at the start of a new recording.
    public mutating func reset() {
        for i in state.indices { state[i] = 0 }
        phase = 0
    }

    /// Writes the running state (every channel's section state, the flush phase) after the last
    /// block processed. Called between two blocks, for a checkpoint (decision 0095).
    public func save(into w: inout StateBytes.Writer) {
        w.doubles(state)
        w.int(phase)
    }

    /// Takes the state `save` wrote from a cascade of the same sections and channels. Called on a
    /// fresh cascade before its first block.
    public mutating func restore(from r: inout StateBytes.Reader) throws(StateBytes.Mismatch) {
        let s = try r.doubles("filter state", count: state.count)
        let p = try r.int("filter phase")
        guard (0..<Self.flushInterval).contains(p) else { throw StateBytes.Mismatch("filter phase \(p)") }
        state = s
        phase = p
    }

    /// Filters `block.frames` frames of `block` in place. `block.channels` must equal `channels`.
    /// Called once per block, in stream order; allocates nothing.
    public mutating func process(_ block: inout AudioBlock) {
        precondition(block.channels == channels, "block has \(block.channels) channels, filter \(channels)")
        let frames = block.frames
        precondition(frames * channels <= block.samples.count)
        block.samples.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            process(base, frames: frames)
        }
    }

    /// Filters `frames` interleaved frames (`frames × channels` samples) at `samples` in place.
    /// Called once per block, in stream order; allocates nothing.
    public mutating func process(_ samples: UnsafeMutablePointer<Float>, frames: Int) {
        if sections.isEmpty || frames <= 0 { return }
        let channels = self.channels
        let sectionCount = sections.count
        var phase = self.phase
        coefficients.withUnsafeBufferPointer { coefficients in
            state.withUnsafeMutableBufferPointer { state in
                scratch.withUnsafeMutableBufferPointer { scratch in
                    let c = coefficients.baseAddress!, s = state.baseAddress!, w = scratch.baseAddress!
                    var done = 0
                    while done < frames {
                        let n = min(frames - done, Self.flushInterval - phase)
                        for channel in 0..<channels {
                            let io = samples + done * channels + channel
                            let channelState = s + channel * Kernel.stateCount * sectionCount
                            Self.widen(io, stride: channels, into: w, count: n)
                            var k = 0
                            while k + 1 < sectionCount {
                                Kernel.runPair(w, count: n, offset: phase & 3,
                                               coefficients: c + Kernel.coefficientCount * k,
                                               state: channelState + Kernel.stateCount * k)
                                k += 2
                            }
                            if k < sectionCount {
                                Kernel.run(w, count: n, offset: phase & 3,
                                           coefficients: c + Kernel.coefficientCount * k,
                                           state: channelState + Kernel.stateCount * k)
                            }
                            Self.narrow(w, into: io, stride: channels, count: n)
                        }
                        phase += n
                        done += n
                        if phase == Self.flushInterval {
                            Self.flushTiny(state)
                            phase = 0
                        }
                    }
                }
            }
        }
        self.phase = phase
    }

    /// The exact complex response of the whole cascade at `frequency` Hz for `sampleRate` Hz.
    public func response(at frequency: Double, sampleRate: Double) -> (re: Double, im: Double) {
        var re = 1.0, im = 0.0
        for section in sections {
            let h = section.response(at: frequency, sampleRate: sampleRate)
            (re, im) = (re * h.re - im * h.im, re * h.im + im * h.re)
        }
        return (re, im)
    }

    /// The exact magnitude response of the whole cascade in dB at `frequency` Hz for `sampleRate` Hz.
    public func magnitudeDB(at frequency: Double, sampleRate: Double) -> Double {
        sections.reduce(0) { $0 + $1.magnitudeDB(at: frequency, sampleRate: sampleRate) }
    }

    /// A copy of the filter state (per channel and section: x[n−1], x[n−2], y[n−1], y[n−2] and up
    /// to three inputs of an unfinished group of four frames), for tests and diagnostics only: it
    /// allocates.
    public func stateSnapshot() -> [Double] { state }

    // MARK: - Kernels

    @inline(__always)
    private static func widen(_ source: UnsafeMutablePointer<Float>, stride: Int,
                              into destination: UnsafeMutablePointer<Double>, count: Int) {
        if stride == 1 {
            for i in 0..<count { destination[i] = Double(source[i]) }
        } else {
            for i in 0..<count { destination[i] = Double(source[i * stride]) }
        }
    }

    /// Rounds to Float32, writing 0 for anything that would be a subnormal Float32.
    @inline(__always)
    private static func narrow(_ source: UnsafeMutablePointer<Double>, into destination: UnsafeMutablePointer<Float>,
                               stride: Int, count: Int) {
        let least = Float.leastNormalMagnitude
        if stride == 1 {
            for i in 0..<count {
                let v = Float(source[i])
                destination[i] = abs(v) < least ? 0 : v
            }
        } else {
            for i in 0..<count {
                let v = Float(source[i])
                destination[i * stride] = abs(v) < least ? 0 : v
            }
        }
    }

    /// Sets state values below `flushThreshold` in magnitude to exactly 0.
    private static func flushTiny(_ state: UnsafeMutableBufferPointer<Double>) {
        for i in state.indices where abs(state[i]) < flushThreshold {
            state[i] = 0
        }
    }
}
