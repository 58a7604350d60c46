import Foundation
import SegnoDSP

/// `TruePeakLimiter` as it was before its peak search was vectorised (one frame at a time, every
/// tap in scalar order): the reference the vectorised one must equal bit for bit.
struct ReferenceLimiter {
    /// Frames by which the output lags the input.
    let latency: Int
    /// The threshold actually used: the ceiling minus a margin for what 4× oversampling misses.
    let threshold: Float
    /// The lowest gain applied so far, as a linear factor (1 = the limiter never acted).
    private(set) var deepestGain: Float = 1

    /// Half the interpolator's length: it looks `half` frames ahead.
    static let half = 8
    /// Margin under the ceiling, in dB, for inter-sample peaks finer than 4× (lower sample
    /// rates, content near Nyquist) and for the gain moving within one sample period.

    private let channels: Int
    private let window: Int
    /// In Double: a Float gain creeping back to 1 stalls ~1e-4 short (its steps fall under an ulp).
    private let releaseCoefficient: Double
    /// Interpolator taps for the fractions 1/4, 2/4, 3/4 between two samples: 3 × 2·half.
    private var taps: [Float]
    /// The last 2·half input samples per channel, each channel's ring stored twice in a row
    /// (4·half floats) so the window is always one contiguous run: no index wraps per tap.
    private var history: [Float]
    /// The largest Σ|tap| over the three phases: an interpolated value is at most this times
    /// the largest sample magnitude in the window, so a quiet window skips the interpolation.
    private let tapBound: Float
    private var historyPosition = 0
    /// The audio delay line: `latency` frames, interleaved, a ring at `delayPosition`.
    private var delay: [Float]
    private var delayPosition = 0
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

    /// A limiter for `channels` channels at `sampleRate` Hz keeping the true peak at or under
    /// `ceiling` dBTP. `lookahead` (seconds) is both the hold and the attack; `release` (seconds)
    /// is the time constant with which the gain comes back up.
    init(ceiling: Double, channels: Int, sampleRate: Int, lookahead: Double = 0.005, release: Double = 0.1) {
        precondition(channels > 0 && sampleRate > 0)
        self.channels = channels
        threshold = Float(Gain.linear(fromDecibels: ceiling - TruePeakLimiter.marginDecibels))
        window = max(1, Int((lookahead * Double(sampleRate)).rounded()))
        releaseCoefficient = 1 - exp(-1 / (release * Double(sampleRate)))
        latency = Self.half + window - 1
        let length = 2 * Self.half
        var t = [Float](repeating: 0, count: 3 * length)
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
            for i in 0..<length { t[phase * length + i] = Float(row[i] / sum) }
        }
        taps = t
        tapBound = (0..<3).map { p in (0..<length).reduce(Float(0)) { $0 + abs(t[p * length + $1]) } }.max() ?? 1
        history = [Float](repeating: 0, count: 2 * length * channels)
        delay = [Float](repeating: 0, count: max(1, latency) * channels)
        minFrames = [Int](repeating: 0, count: window + 1)
        minGains = [Float](repeating: 1, count: window + 1)
        averageRing = [Float](repeating: 1, count: window)
        averageSum = Double(window)
    }

    /// Limits the valid frames of `block` in place; each output frame is the input from `latency`
    /// frames earlier (zeros at first). Called once per block.
    mutating func process(_ block: inout AudioBlock) {
        precondition(block.channels == channels)
        let n = block.frames
        block.samples.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            for f in 0..<n { processFrame(base + f * channels) }
        }
    }

    private mutating func processFrame(_ frame: UnsafeMutablePointer<Float>) {
        let length = 2 * Self.half
        // 1. The peak between samples m and m+1, where m is `half` frames back.
        var peak: Float = 0
        let quiet = threshold / tapBound
        history.withUnsafeMutableBufferPointer { h in
            taps.withUnsafeBufferPointer { t in
                for c in 0..<channels {
                    let ring = h.baseAddress! + c * 2 * length
                    ring[historyPosition] = frame[c]
                    ring[historyPosition + length] = frame[c]
                    // Oldest sample first: the window starts just after the newest.
                    let window = ring + historyPosition + 1
                    var loudest: Float = 0
                    for i in 0..<length { loudest = max(loudest, abs(window[i])) }
                    peak = max(peak, abs(window[Self.half - 1]), abs(window[Self.half]))
                    // Under `quiet` no interpolated value can reach the threshold.
                    if loudest < quiet { continue }
                    for phase in 0..<3 {
                        var acc: Float = 0
                        let row = t.baseAddress! + phase * length
                        for i in 0..<length { acc += row[i] * window[i] }
                        peak = max(peak, abs(acc))
                    }
                }
            }
        }
        historyPosition = (historyPosition + 1) % length
        // 2. The gain that peak needs, and the least such gain over the last `window` frames.
        let needed: Float = peak > threshold ? threshold / peak : 1
        let capacity = window + 1
        while minCount > 0 && minGains[(minHead + minCount - 1) % capacity] >= needed { minCount -= 1 }
        minFrames[(minHead + minCount) % capacity] = frameNumber
        minGains[(minHead + minCount) % capacity] = needed
        minCount += 1
        while minFrames[minHead] <= frameNumber - window {
            minHead = (minHead + 1) % capacity
            minCount -= 1
        }
        let held = minGains[minHead]
        // 3. Down at once, up with the release time constant; then averaged over `window`.
        let target = Double(held)
        released = target < released ? target : released + (target - released) * releaseCoefficient
        // Close enough to 1 to be 1: the gain then leaves the audio bit for bit as it came.
        if held == 1 && released > 1 - 1e-6 { released = 1 }
        let stored = Float(released)
        averageSum += Double(stored) - Double(averageRing[averagePosition])
        averageRing[averagePosition] = stored
        averagePosition = (averagePosition + 1) % window
        if averagePosition == 0 {
            // Recompute now and then so rounding in the running sum cannot drift.
            averageSum = averageRing.reduce(0) { $0 + Double($1) }
        }
        let gain = min(1, Float(averageSum / Double(window)))
        deepestGain = min(deepestGain, gain)
        frameNumber += 1
        // 4. Out goes the frame from `latency` frames back, times the gain; in goes this one.
        if latency == 0 {
            for c in 0..<channels { frame[c] *= gain }
            return
        }
        let at = delayPosition * channels
        for c in 0..<channels {
            let incoming = frame[c]
            frame[c] = delay[at + c] * gain
            delay[at + c] = incoming
        }
        delayPosition = (delayPosition + 1) % latency
    }
}
