#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The true peak of a stream (ITU-R BS.1770 annex 2) as libebur128 1.2 measures it, bit for bit,
/// eight frames at a time (decision 0101).
///
/// libebur128 interpolates each channel 4× below 96 kHz and 2× below 192 kHz with a 49-tap
/// Hann-windowed sinc (taps it finds to be zero left out), accumulates each interpolated value in
/// Float64 from 0 in tap order, rounds it to Float32 (flush-to-zero on: a subnormal result is 0),
/// and keeps the largest magnitude; from 192 kHz on it keeps the sample peak only. It reports the
/// larger of that and the sample peak. This meter makes the same taps the same way and sums them
/// in the same order, one frame per SIMD lane, so every interpolated value, and so the peak, is
/// libebur128's (`TruePeakMeterTests` holds it to the library). It costs about a fifth of
/// libebur128's true-peak mode, which interpolates one value at a time through a ring.
///
/// Streaming, in fixed memory: each channel keeps the last `delay` − 1 samples (12 at 4×).
public struct TruePeakMeter {
    private let channels: Int
    /// Interpolated values per input frame: 4, 2, or 0 (from 192 kHz on: the sample peak only).
    public let factor: Int
    /// Input samples a phase reaches back: (taps + factor − 1) / factor.
    private let delay: Int
    /// Per phase, its taps as (how many frames back, coefficient), in libebur128's order.
    private let phases: [[(back: Int, coefficient: Double)]]
    /// Per channel, a run of `delay` − 1 samples of history, then the block's samples, then 8
    /// zeros for the last lanes: `history + capacity + 8` values.
    private var runs: [Float] = []
    private var capacity = 0
    private var interpolatedPeak: [Float]
    private var samplePeak: [Float]

    /// libebur128's interpolator length.
    static let taps = 49

    /// A meter for interleaved blocks of `channels` channels at `sampleRate` Hz.
    public init(channels: Int, sampleRate: Int) {
        precondition(channels > 0 && sampleRate > 0)
        self.channels = channels
        factor = sampleRate < 96000 ? 4 : (sampleRate < 192000 ? 2 : 0)
        interpolatedPeak = [Float](repeating: 0, count: channels)
        samplePeak = [Float](repeating: 0, count: channels)
        guard factor > 0 else {
            delay = 1
            phases = []
            return
        }
        let taps = Self.taps
        delay = (taps + factor - 1) / factor
        // As libebur128's interp_create computes them, in the same expressions and order.
        var made = [[(back: Int, coefficient: Double)]](repeating: [], count: factor)
        for j in 0..<taps {
            let m = Double(j) - Double(taps - 1) / 2.0
            var c = 1.0
            if abs(m) > 0.000001 { c = sin(m * Double.pi / Double(factor)) / (m * Double.pi / Double(factor)) }
            c *= 0.5 * (1 - cos(2 * Double.pi * Double(j) / Double(taps - 1)))
            if abs(c) > 0.000001 { made[j % factor].append((back: j / factor, coefficient: c)) }
        }
        phases = made
    }

    /// Adds the valid frames of `block` (interleaved, `channels` channels). Called once per block,
    /// in order; allocates only when a block is larger than every block before it.
    public mutating func add(_ block: AudioBlock) {
        precondition(block.channels == channels)
        block.samples.withUnsafeBufferPointer { add($0.baseAddress!, frames: block.frames) }
    }

    /// Adds `frames` interleaved frames at `samples`.
    public mutating func add(_ samples: UnsafePointer<Float>, frames n: Int) {
        guard n > 0 else { return }
        let channels = channels
        for c in 0..<channels {
            // libebur128: `if (cur > max) max = cur; else if (-cur > max) max = -cur` (NaN never wins).
            var m = samplePeak[c]
            for f in 0..<n {
                let v = abs(samples[f * channels + c])
                if v > m { m = v }
            }
            samplePeak[c] = m
        }
        guard factor > 0 else { return }
        let history = delay - 1
        if n > capacity {
            let old = runs, oldStride = history + capacity + 8
            capacity = n
            runs = [Float](repeating: 0, count: channels * (history + capacity + 8))
            if !old.isEmpty {
                for c in 0..<channels {
                    for i in 0..<history { runs[c * (history + capacity + 8) + i] = old[c * oldStride + i] }
                }
            }
        }
        let stride = history + capacity + 8
        let phases = phases
        // Swapped out, not copied: the array stays unique, so no block allocates.
        var peaks: [Float] = []
        swap(&peaks, &interpolatedPeak)
        runs.withUnsafeMutableBufferPointer { r in
            for c in 0..<channels {
                let run = r.baseAddress! + c * stride
                for f in 0..<n { run[history + f] = samples[f * channels + c] }
                peaks[c] = Self.peak(of: run, history: history, frames: n, phases: phases, from: peaks[c])
                // The last `history` samples are the next block's.
                run.update(from: run + n, count: history)
            }
        }
        swap(&peaks, &interpolatedPeak)
    }

    /// The largest interpolated magnitude of `n` frames after `history` samples in `run`, and `start`.
    private static func peak(of run: UnsafeMutablePointer<Float>, history: Int, frames n: Int,
                             phases: [[(back: Int, coefficient: Double)]], from start: Float) -> Float {
        var best = SIMD8<Float>(repeating: start)
        var f = 0
        while f + 8 <= n {
            for taps in phases {
                var acc = SIMD8<Double>()
                for (back, coefficient) in taps {
                    let v = UnsafeRawPointer(run + history + f - back).loadUnaligned(as: SIMD8<Float>.self)
                    acc += SIMD8<Double>(v) * SIMD8<Double>(repeating: coefficient)
                }
                var value = SIMD8<Float>(acc)
                let magnitude = unsafeBitCast(unsafeBitCast(value, to: SIMD8<UInt32>.self) & SIMD8(repeating: 0x7FFF_FFFF), to: SIMD8<Float>.self)
                // Flush to zero, as libebur128 runs: a subnormal Float result is 0.
                value = magnitude.replacing(with: 0, where: magnitude .< Float.leastNormalMagnitude)
                best = best.replacing(with: value, where: value .> best)
            }
            f += 8
        }
        var peak = best.max()
        while f < n {
            for taps in phases {
                var acc = 0.0
                for (back, coefficient) in taps { acc += Double(run[history + f - back]) * coefficient }
                var value = abs(Float(acc))
                if value < Float.leastNormalMagnitude { value = 0 }
                if value > peak { peak = value }
            }
            f += 1
        }
        return peak
    }

    /// The true peak of channel `channel` so far, linear: what `ebur128_true_peak` reports (the
    /// larger of the interpolated peak and the sample peak).
    public func truePeak(channel: Int) -> Double {
        let t = Double(interpolatedPeak[channel]), s = Double(samplePeak[channel])
        return t > s ? t : s
    }

    /// The largest true peak of any channel so far, linear.
    public var truePeak: Double { (0..<channels).map(truePeak(channel:)).max() ?? 0 }
}
