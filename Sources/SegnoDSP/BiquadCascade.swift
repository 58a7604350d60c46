/// A chain of biquad sections run over interleaved Float32 audio, with one independent filter
/// state per channel that carries over from one call to the next.
///
/// Create one per recording (or call `reset()` between recordings), then call `process` for each
/// block in order. The output does not depend on how the stream is cut into blocks: 1, 7 or 4096
/// frames at a time give bit-identical results.
///
/// Arithmetic: each section is a direct form I in Double precision (state and coefficients); the
/// Float32 samples are widened on the way in and rounded once on the way out. Double state keeps
/// low-frequency designs exact (an 80 Hz high-pass at 48 kHz in Float32 state has its noise floor
/// near −100 dBFS; in Double it is far below 24-bit resolution) at no measurable cost, as scalar
/// Double and Float arithmetic run at the same speed.
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

    /// Per channel, per section: x[n−1], x[n−2], y[n−1], y[n−2].
    private var state: [Double]
    /// Coefficients laid out flat (b0 b1 b2 a1 a2 per section) for the inner loops.
    private let coefficients: [Double]
    /// One channel of one segment, widened to Double (at most `flushInterval` frames).
    private var scratch: [Double]
    /// Frames processed since the last flush point, in 0..<flushInterval.
    private var phase: Int

    /// Frames between two flushes of tiny state values (stream time, not block time).
    static let flushInterval = 64
    /// State values smaller than this in magnitude are flushed to 0 (−400 dBFS).
    static let flushThreshold = 1e-20

    /// A cascade of `sections` for audio with `channels` interleaved channels (≥ 1).
    /// An empty `sections` array passes audio through unchanged.
    public init(sections: [Biquad], channels: Int) {
        precondition(channels >= 1, "a filter needs at least one channel")
        self.sections = sections
        self.channels = channels
        self.state = [Double](repeating: 0, count: 4 * sections.count * channels)
        self.coefficients = sections.flatMap { [$0.b0, $0.b1, $0.b2, $0.a1, $0.a2] }
        self.scratch = [Double](repeating: 0, count: Self.flushInterval)
        self.phase = 0
    }

    /// Clears the state of every channel, as at the start of a new recording.
    public mutating func reset() {
        for i in state.indices { state[i] = 0 }
        phase = 0
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
                            let channelState = s + channel * 4 * sectionCount
                            Self.widen(io, stride: channels, into: w, count: n)
                            var k = 0
                            while k + 1 < sectionCount {
                                Self.runPair(w, count: n, coefficients: c + 5 * k, state: channelState + 4 * k)
                                k += 2
                            }
                            if k < sectionCount {
                                Self.runOne(w, count: n, coefficients: c + 5 * k, state: channelState + 4 * k)
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

    /// A copy of the filter state (x[n−1], x[n−2], y[n−1], y[n−2] per section, per channel), for
    /// tests and diagnostics only: it allocates.
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

    /// One direct-form-I section over `count` Double samples in place. The feedback term with the
    /// longest dependency chain (a1·y[n−1]) is added last so each sample waits on one multiply-add.
    @inline(__always)
    private static func runOne(_ x: UnsafeMutablePointer<Double>, count: Int,
                               coefficients c: UnsafePointer<Double>, state s: UnsafeMutablePointer<Double>) {
        let b0 = c[0], b1 = c[1], b2 = c[2], a1 = c[3], a2 = c[4]
        var x1 = s[0], x2 = s[1], y1 = s[2], y2 = s[3]
        for i in 0..<count {
            let xn = x[i]
            let partial = b0 * xn + b1 * x1 + b2 * x2 - a2 * y2
            let yn = partial - a1 * y1
            x2 = x1; x1 = xn
            y2 = y1; y1 = yn
            x[i] = yn
        }
        s[0] = x1; s[1] = x2; s[2] = y1; s[3] = y2
    }

    /// Two consecutive sections fused into one loop, so the processor overlaps their independent
    /// feedback chains (about twice the throughput of two separate passes).
    @inline(__always)
    private static func runPair(_ x: UnsafeMutablePointer<Double>, count: Int,
                                coefficients c: UnsafePointer<Double>, state s: UnsafeMutablePointer<Double>) {
        let b0 = c[0], b1 = c[1], b2 = c[2], a1 = c[3], a2 = c[4]
        let d0 = c[5], d1 = c[6], d2 = c[7], e1 = c[8], e2 = c[9]
        var x1 = s[0], x2 = s[1], y1 = s[2], y2 = s[3]
        var u1 = s[6], u2 = s[7]  // second section: its input history is the first one's output (y)
        for i in 0..<count {
            let xn = x[i]
            let partial = b0 * xn + b1 * x1 + b2 * x2 - a2 * y2
            let yn = partial - a1 * y1
            let partial2 = d0 * yn + d1 * y1 + d2 * y2 - e2 * u2
            let un = partial2 - e1 * u1
            x2 = x1; x1 = xn
            y2 = y1; y1 = yn
            u2 = u1; u1 = un
            x[i] = un
        }
        s[0] = x1; s[1] = x2; s[2] = y1; s[3] = y2
        s[4] = y1; s[5] = y2; s[6] = u1; s[7] = u2
    }

    /// Sets state values below `flushThreshold` in magnitude to exactly 0.
    private static func flushTiny(_ state: UnsafeMutableBufferPointer<Double>) {
        for i in state.indices where abs(state[i]) < flushThreshold {
            state[i] = 0
        }
    }
}
