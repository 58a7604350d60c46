#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A look-ahead limiter that keeps the true peak (4× oversampled, as in ITU-R BS.1770 annex 2)
/// at or under a ceiling, with one gain for all channels so the stereo image does not move.
///
/// How it works, per frame: an interpolating FIR estimates the peak between this sample and the
/// next; the gain that peak needs is held for `window` frames (a sliding minimum), released
/// smoothly, and averaged over `window` frames again. Because every value in that average is at
/// most the gain the peak needs, the peak leaves at or under the ceiling, and the gain never jumps.
/// The audio is delayed by `latency` frames so the gain is already down when a peak arrives.
///
/// The peak search runs eight frames at a time in SIMD lanes, each lane summing its taps in the
/// order one frame alone would, so the output is the same bit for bit whatever the block size.
/// Memory is fixed by the window and `step`; `process` allocates only when a block is larger than
/// every block before it, up to `step` frames.
public struct TruePeakLimiter {
    /// Frames by which the output lags the input.
    public let latency: Int
    /// The threshold actually used: the ceiling minus a margin for what 4× oversampling misses.
    public let threshold: Float
    /// The lowest gain applied so far, as a linear factor (1 = the limiter never acted).
    public private(set) var deepestGain: Float = 1

    /// Half the interpolator's length: it looks `half` frames ahead.
    static let half = 8
    /// Margin under the ceiling, in dB, for inter-sample peaks finer than 4× (lower sample
    /// rates, content near Nyquist) and for the gain moving within one sample period.
    public static let marginDecibels = 0.3

    private let channels: Int
    private let window: Int
    /// In Double: a Float gain creeping back to 1 stalls ~1e-4 short (its steps fall under an ulp).
    private let releaseCoefficient: Double
    /// Interpolator taps for the fractions 1/4, 2/4, 3/4 between two samples: 3 × 2·half, each
    /// tap repeated across the eight lanes that compute eight frames at once.
    private let taps: [SIMD8<Float>]
    /// Per channel, a run of `reach` + `capacity` + 8 samples: the `reach` samples before the
    /// block (the peak search's history), the block's samples, and eight zeros the last lanes read.
    private var lanes: [Float]
    /// Frames a block may have before the buffers grow (they grow only for a larger block, up to `step`).
    private var capacity = 0
    /// Per frame of the block: its peak (the largest over the channels), then the gain that peak
    /// needs, then the gain applied (see `applyGain`).
    private var peaks: [Float] = []
    /// Per frame of the block, the running sum of the last `window` released gains.
    private var sums: [Double] = []
    /// The audio delay line, interleaved: the last `latency` frames in, oldest first, then room
    /// for a block behind them.
    private var delay: [Float]
    /// Sliding minimum over `window` gains: a monotonic queue of (frame number, gain).
    private var minFrames: [Int]
    private var minGains: [Float]
    private var minHead = 0
    private var minCount = 0
    /// The released gain, and the running average over the last `window` of them.
    private var released: Double = 1
    private var averageRing: [Float]
    private var averagePosition = 0
    private var averageSum: Double
    private var frameNumber = 0
    /// Gains of exactly 1 stored in a row: at `window` or more, the averaging ring holds only 1s.
    private var onesInARow = 0

    /// Samples before a frame that its peak search reads (the interpolator's length less one).
    private static let reach = 2 * half - 1

    /// A limiter for `channels` channels at `sampleRate` Hz keeping the true peak at or under
    /// `ceiling` dBTP. `lookahead` (seconds) is both the hold and the attack; `release` (seconds)
    /// is the time constant with which the gain comes back up.
    public init(ceiling: Double, channels: Int, sampleRate: Int, lookahead: Double = 0.005, release: Double = 0.1) {
        precondition(channels > 0 && sampleRate > 0)
        self.channels = channels
        threshold = Float(Gain.linear(fromDecibels: ceiling - Self.marginDecibels))
        window = max(1, Int((lookahead * Double(sampleRate)).rounded()))
        releaseCoefficient = 1 - exp(-1 / (release * Double(sampleRate)))
        latency = Self.half + window - 1
        let length = 2 * Self.half
        var t: [SIMD8<Float>] = []
        for phase in 0..<3 {
            let fraction = Double(phase + 1) / 4
            var sum = 0.0
            var row = [Double](repeating: 0, count: length)
            for i in 0..<length {
                // Tap i holds sample (m − half + 1 + i); the point wanted is m + fraction.
                let d = fraction + Double(Self.half - 1 - i)
                let sinc = d == 0 ? 1 : sin(Double.pi * d) / (Double.pi * d)
                let hann = 0.5 + 0.5 * cos(Double.pi * d / Double(Self.half))
                row[i] = sinc * hann
                sum += row[i]
            }
            for i in 0..<length { t.append(SIMD8(repeating: Float(row[i] / sum))) }
        }
        taps = t
        lanes = []
        delay = [Float](repeating: 0, count: max(1, latency) * channels)
        minFrames = [Int](repeating: 0, count: window + 1)
        minGains = [Float](repeating: 1, count: window + 1)
        averageRing = [Float](repeating: 1, count: window)
        averageSum = Double(window)
    }

    /// Limits the valid frames of `block` in place; each output frame is the input from `latency`
    /// frames earlier (zeros at first). Called once per block; a block longer than `step` frames
    /// is limited `step` frames at a time, so the buffers stay small (and in cache) whatever the
    /// block, and they are allocated only while no block has yet reached `step` frames.
    public mutating func process(_ block: inout AudioBlock) {
        precondition(block.channels == channels)
        let n = block.frames
        guard n > 0 else { return }
        if min(n, Self.step) > capacity { grow(to: min(n, Self.step)) }
        block.samples.withUnsafeMutableBufferPointer { b in
            var start = 0
            while start < n {
                let m = min(Self.step, n - start), at = b.baseAddress! + start * channels
                findPeaks(in: at, frames: m)
                applyGain(to: at, frames: m)
                start += m
            }
        }
    }

    /// The most frames limited in one go: the buffers hold this many frames at most.
    public static let step = 4096

    /// Makes room for blocks of `frames` frames, keeping each channel's history.
    private mutating func grow(to frames: Int) {
        let reach = Self.reach
        let old = lanes, oldStride = reach + capacity + 8
        capacity = frames
        let stride = reach + capacity + 8
        lanes = [Float](repeating: 0, count: channels * stride)
        if !old.isEmpty {
            for c in 0..<channels {
                for i in 0..<reach { lanes[c * stride + i] = old[c * oldStride + i] }
            }
        }
        peaks = [Float](repeating: 0, count: capacity + 8)
        sums = [Double](repeating: 0, count: capacity + 8)
        delay = Array(delay[0..<(latency * channels)]) + [Float](repeating: 0, count: capacity * channels)
    }

    /// 1. The peak between samples m and m+1 (m being `half` frames back) for every frame, eight
    /// frames at a time. Each lane sums its taps in the same order as one frame alone would, so
    /// the peaks do not depend on the block size.
    private mutating func findPeaks(in samples: UnsafePointer<Float>, frames n: Int) {
        let reach = Self.reach, length = 2 * Self.half, channels = channels
        let stride = reach + capacity + 8
        taps.withUnsafeBufferPointer { t in
            lanes.withUnsafeMutableBufferPointer { l in
                peaks.withUnsafeMutableBufferPointer { p in
                    let tap = t.baseAddress!, peak = p.baseAddress!
                    for c in 0..<channels {
                        let lane = l.baseAddress! + c * stride
                        for f in 0..<n { lane[reach + f] = samples[f * channels + c] }
                        for f in n..<(n + 8) { lane[reach + f] = 0 }
                        var f = 0
                        while f < n {
                            let at = UnsafeRawPointer(lane + f)
                            var a0 = SIMD8<Float>(), a1 = SIMD8<Float>(), a2 = SIMD8<Float>()
                            for i in 0..<length {
                                let v = at.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
                                a0 += tap[i] * v
                                a1 += tap[length + i] * v
                                a2 += tap[2 * length + i] * v
                            }
                            let s7 = at.loadUnaligned(fromByteOffset: (Self.half - 1) * 4, as: SIMD8<Float>.self)
                            let s8 = at.loadUnaligned(fromByteOffset: Self.half * 4, as: SIMD8<Float>.self)
                            var m = Self.larger(Self.larger(Self.magnitude(s7), Self.magnitude(s8)),
                                                Self.larger(Self.larger(Self.magnitude(a0), Self.magnitude(a1)), Self.magnitude(a2)))
                            let out = UnsafeMutableRawPointer(peak + f)
                            if c > 0 { m = Self.larger(m, out.loadUnaligned(as: SIMD8<Float>.self)) }
                            out.storeBytes(of: m, as: SIMD8<Float>.self)
                            f += 8
                        }
                        // The last `reach` samples are the next block's history.
                        lane.update(from: lane + n, count: reach)
                    }
                }
            }
        }
    }

    @inline(__always)
    private static func magnitude(_ v: SIMD8<Float>) -> SIMD8<Float> {
        unsafeBitCast(unsafeBitCast(v, to: SIMD8<UInt32>.self) & SIMD8(repeating: 0x7FFF_FFFF), to: SIMD8<Float>.self)
    }

    /// The larger of each pair of lanes (compare and blend, no per-lane loop).
    @inline(__always)
    private static func larger(_ a: SIMD8<Float>, _ b: SIMD8<Float>) -> SIMD8<Float> {
        a.replacing(with: b, where: a .< b)
    }

    /// 2–4. Per frame, the gain its peak needs, held, released, averaged, applied to the frame
    /// `latency` frames back. Three loops over the block: the first and last run eight or four
    /// frames at a time; the middle one carries the state from frame to frame (the release is a
    /// chain of Float64 operations, each waiting on the last), kept short so the processor can
    /// overlap its frames. Together they compute what one loop per frame did (`ReferenceLimiter`
    /// in the tests), bit for bit.
    private mutating func applyGain(to frames: UnsafeMutablePointer<Float>, frames n: Int) {
        // Out of `self` while the steps (which change `self`) write them: swapped, not copied.
        var gains: [Float] = [], gainSums: [Double] = []
        swap(&gains, &peaks)
        swap(&gainSums, &sums)
        gains.withUnsafeMutableBufferPointer { g in
            gainSums.withUnsafeMutableBufferPointer { s in
                neededGains(g.baseAddress!, n)
                holdReleaseAverage(g.baseAddress!, into: s.baseAddress!, n)
                delayAndApply(frames, sums: s.baseAddress!, gains: g.baseAddress!, n)
            }
        }
        swap(&gains, &peaks)
        swap(&gainSums, &sums)
    }

    /// 2a. In place of each peak, the gain it needs: threshold ÷ peak (below 1) over the
    /// threshold, else 1 (NaN included). Eight frames at a time; `p` has room for `n` + 8.
    private func neededGains(_ p: UnsafeMutablePointer<Float>, _ n: Int) {
        let raw = UnsafeMutableRawPointer(p)
        let t = SIMD8<Float>(repeating: threshold), one = SIMD8<Float>(repeating: 1)
        var f = 0
        while f < n {
            let v = raw.loadUnaligned(fromByteOffset: f * 4, as: SIMD8<Float>.self)
            raw.storeBytes(of: (t / v).replacing(with: one, where: .!(v .> t)), toByteOffset: f * 4, as: SIMD8<Float>.self)
            f += 8
        }
    }

    /// 2b–3. Per frame: the least needed gain over the last `window` frames (a monotonic queue
    /// of (frame number, gain)); released (down at once, up with the release time constant, in
    /// Float64, stored as Float); the running sum of the last `window` of those, into `sums`.
    private mutating func holdReleaseAverage(_ p: UnsafeMutablePointer<Float>, into sums: UnsafeMutablePointer<Double>, _ n: Int) {
        let window = window, capacity = window + 1, coefficient = releaseCoefficient
        var minHead = minHead, minCount = minCount, frameNumber = frameNumber, released = released
        var averageSum = averageSum, averagePosition = averagePosition, onesInARow = onesInARow
        minFrames.withUnsafeMutableBufferPointer { mfb in
            minGains.withUnsafeMutableBufferPointer { mgb in
                averageRing.withUnsafeMutableBufferPointer { rb in
                    let mf = mfb.baseAddress!, mg = mgb.baseAddress!, ring = rb.baseAddress!
                    for f in 0..<n {
                        let needed = p[f]
                        let held: Float
                        if needed == 1 && minCount == 1 && mg[minHead] == 1 {
                            // At rest: the queue's one entry, a 1, gives way to this frame's 1.
                            mf[minHead] = frameNumber
                            held = 1
                        } else {
                            while minCount > 0 {
                                var last = minHead + minCount - 1
                                if last >= capacity { last -= capacity }
                                if mg[last] < needed { break }
                                minCount -= 1
                            }
                            var slot = minHead + minCount
                            if slot >= capacity { slot -= capacity }
                            mf[slot] = frameNumber
                            mg[slot] = needed
                            minCount += 1
                            while mf[minHead] <= frameNumber - window {
                                minHead += 1
                                if minHead == capacity { minHead = 0 }
                                minCount -= 1
                            }
                            held = mg[minHead]
                        }
                        frameNumber += 1
                        let stored: Float
                        if held == 1 && released == 1 {
                            stored = 1  // what the step below leaves a gain at rest at
                        } else {
                            let target = Double(held)
                            released = target < released ? target : released + (target - released) * coefficient
                            // Close enough to 1 to be 1: the gain then leaves the audio bit for bit as it came.
                            if held == 1 && released > 1 - 1e-6 { released = 1 }
                            stored = Float(released)
                        }
                        averageSum += Double(stored) - Double(ring[averagePosition])
                        ring[averagePosition] = stored
                        onesInARow = stored == 1 ? onesInARow + 1 : 0
                        averagePosition += 1
                        if averagePosition == window {
                            averagePosition = 0
                            // Recompute now and then so rounding in the running sum cannot drift
                            // (a ring of 1s sums to `window` exactly).
                            if onesInARow >= window {
                                averageSum = Double(window)
                            } else {
                                var sum = 0.0
                                for i in 0..<window { sum += Double(ring[i]) }
                                averageSum = sum
                            }
                        }
                        sums[f] = averageSum
                    }
                }
            }
        }
        self.minHead = minHead; self.minCount = minCount; self.frameNumber = frameNumber; self.released = released
        self.averageSum = averageSum; self.averagePosition = averagePosition; self.onesInARow = onesInARow
    }

    /// 4. Each frame's gain, min(1, sum ÷ `window`), into `g` (four frames at a time); then out
    /// goes the frame from `latency` frames back times its gain, and in goes this one.
    private mutating func delayAndApply(_ frames: UnsafeMutablePointer<Float>, sums s: UnsafePointer<Double>, gains g: UnsafeMutablePointer<Float>, _ n: Int) {
        let channels = channels, delayed = latency * channels, w = Double(window)
        let w4 = SIMD4<Double>(repeating: w), one = SIMD4<Float>(repeating: 1)
        var least = SIMD4<Float>(repeating: 1)
        var f = 0
        while f + 4 <= n {
            let q = SIMD4<Float>(UnsafeRawPointer(s + f).loadUnaligned(as: SIMD4<Double>.self) / w4)
            let gain = q.replacing(with: one, where: .!(q .< one))  // min(1, q), as `min` picks
            least = least.replacing(with: gain, where: gain .< least)
            UnsafeMutableRawPointer(g + f).storeBytes(of: gain, as: SIMD4<Float>.self)
            f += 4
        }
        var deepest = deepestGain
        for i in 0..<4 { deepest = min(deepest, least[i]) }
        while f < n {
            let gain = min(1, Float(s[f] / w))
            deepest = min(deepest, gain)
            g[f] = gain
            f += 1
        }
        deepestGain = deepest
        delay.withUnsafeMutableBufferPointer { d in
            let line = d.baseAddress!
            (line + delayed).update(from: frames, count: n * channels)
            if channels == 1 {
                for i in 0..<n { frames[i] = line[i] * g[i] }
            } else {
                for f in 0..<n {
                    for c in 0..<channels { frames[f * channels + c] = line[f * channels + c] * g[f] }
                }
            }
            line.update(from: line + n * channels, count: delayed)
        }
    }
}
