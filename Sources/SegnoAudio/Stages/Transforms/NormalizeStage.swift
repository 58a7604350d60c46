import CEbur128
import Foundation
import SegnoCore
import SegnoDSP

/// `normalize: { loudness: -16, true_peak: -1, limit: true }` (EBU R128 / ITU-R BS.1770
/// integrated loudness in LUFS, measured with libebur128; the shorthand `normalize: -16` means
/// the same) or `normalize: { peak: -1 }` (sample peak to dBFS).
///
/// Loudness mode applies one gain that brings the recording to the target, then a look-ahead
/// true-peak limiter (`TruePeakLimiter`) that keeps the true peak at or under `true_peak` dBTP.
/// Limiting lowers the loudness a little, so the gain is found by trial: the first pass measures
/// the input; when the peaks need limiting, further passes run gain and limiter and measure
/// what would come out, until it lands within 0.1 LU of the target (at most `maxTrials`).
/// A recording that cannot reach the target (a square wave asked for −5 LUFS) gets the closest
/// trial. With `limit: false` there is no limiter: the gain is lowered instead so the true peak
/// stays under the ceiling, and the loudness may land below the target.
///
/// Every pass streams in constant memory. The limiter delays the audio by a few milliseconds;
/// the stage drops that many leading frames and flushes the tail at the end, so the output is
/// aligned with the input and has exactly as many frames.
/// A silent recording is passed through unchanged; one shorter than 0.4 s cannot be measured
/// for loudness and fails with "too short to measure loudness".
public struct NormalizeConfig: TransformConfig {
    public var setsLevel: Bool { true }
    public enum Target: Sendable, Equatable {
        /// Integrated loudness in LUFS, with a true-peak ceiling in dBTP; `limit` runs the limiter.
        case loudness(lufs: Double, truePeak: Double, limit: Bool = true)
        /// Sample peak in dBFS.
        case peak(dbfs: Double)
    }
    public let target: Target
    public var name: String { "normalize" }
    public var version: Int { 2 }
    public var options: [(String, String)] {
        switch target {
        case .loudness(let l, let tp, let limit):
            return [("loudness", canonicalNumber(l)), ("true_peak", canonicalNumber(tp)), ("limit", limit ? "true" : "false")]
        case .peak(let p): return [("peak", canonicalNumber(p))]
        }
    }
    public static let loudnessRange: ClosedRange<Double> = -70 ... -5
    public static let peakRange: ClosedRange<Double> = -60 ... 0
    /// The true-peak ceiling a spec may ask for, in dBTP.
    public static let truePeakRange: ClosedRange<Double> = -20 ... 0
    /// The true-peak ceiling when none is given, in dBTP.
    public static let standardTruePeak = -1.0

    public static let declaration = StageDeclaration(
        key: "normalize", kind: .transform,
        summary: "Brings each recording to a loudness (EBU R128, with a true-peak limiter) or a sample peak.",
        options: [
            .init("loudness", .number, unit: "LUFS", default: "none", .within(loudnessRange),
                  help: "Integrated loudness target; give loudness or peak."),
            .init("true_peak", .number, unit: "dBTP", default: canonicalNumber(standardTruePeak), .within(truePeakRange),
                  help: "With loudness: the ceiling the true peak stays at or under."),
            .init("limit", .boolean, default: "true",
                  help: "With loudness: a look-ahead limiter; false lowers the gain instead, so the loudness may land below the target."),
            .init("peak", .number, unit: "dBFS", default: "none", .within(peakRange), help: "Sample peak target (one gain); instead of loudness."),
        ],
        shorthand: "`normalize: -16` is `{ loudness: -16 }`", aliases: ["normalise"], example: "normalize: { loudness: -16, true_peak: -1 }", capabilities: [.setsLevel])
    /// Passes that run gain and limiter to find the gain, after the first measuring pass.
    public static let maxTrials = 5
    /// How close a trial must land to the target to be kept, in LU.
    public static let tolerance = 0.1

    public init(target: Target) { self.target = target }
    public func makeTransform() throws -> any Transform { NormalizeTransform(target: target) }
}

/// Gain, then the limiter, with its latency taken out: the first `latency` output frames are
/// dropped and `flush` emits the held-back tail. Used by the trials and the real pass alike, so
/// a trial measures exactly what the real pass will write.
package struct LimitedGain {
    package let gain: Gain
    package var limiter: TruePeakLimiter
    private var toSkip: Int

    package init(decibels: Double, ceiling: Double, format: AudioFormat) {
        gain = Gain(decibels: decibels)
        limiter = TruePeakLimiter(ceiling: ceiling, channels: format.channels, sampleRate: format.sampleRate)
        toSkip = limiter.latency
    }

    mutating package func process(_ block: inout AudioBlock) {
        gain.apply(to: &block)
        limiter.process(&block)
        guard toSkip > 0 else { return }
        let skip = min(toSkip, block.frames)
        toSkip -= skip
        let keep = block.frames - skip
        if keep > 0 {
            let ch = block.channels
            block.samples.withUnsafeMutableBufferPointer { b in
                let base = b.baseAddress!
                base.update(from: base + skip * ch, count: keep * ch)
            }
        }
        block.frames = keep
    }

    /// Puts the held-back tail into `block` (empty, in the stream's format).
    mutating package func flush(_ block: inout AudioBlock) {
        let n = limiter.latency
        block.reserve(frames: n)
        block.samples.withUnsafeMutableBufferPointer { b in
            for i in 0..<(n * block.channels) { b[i] = 0 }
        }
        block.frames = n
        // Zeros through the gain stay zeros; only the limiter's delay line matters here.
        limiter.process(&block)
        let skip = min(toSkip, n)
        toSkip -= skip
        let keep = n - skip
        if skip > 0 && keep > 0 {
            let ch = block.channels
            block.samples.withUnsafeMutableBufferPointer { b in
                let base = b.baseAddress!
                base.update(from: base + skip * ch, count: keep * ch)
            }
        }
        block.frames = keep
    }
}

final package class NormalizeTransform: MeteringTransform {
    package let target: NormalizeConfig.Target
    private var meter: UnsafeMutablePointer<ebur128_state>?
    /// The measuring pass's true peak (libebur128's, decision 0101), beside `meter`.
    private var truePeaks: TruePeakMeter?
    private var format = AudioFormat(sampleRate: 48000, channels: 1)
    private var frames = 0
    private var samplePeak: Float = 0
    /// Gain applied in the real pass; set by `endAnalysis`.
    private(set) package var gain = Gain(decibels: 0)
    /// Set when the limiter runs in the real pass.
    private var limited: LimitedGain?
    /// The trial running in this pass (nil in the first, measuring pass).
    private var trial: LimitedGain?
    private var scratch = AudioBlock(channels: 1)
    /// (gain dB, measured output LUFS) of each finished trial.
    private(set) package var trials: [(gain: Double, lufs: Double)] = []
    /// Input loudness from the first pass, and the gain that would reach the target without limiting.
    private var inputLoudness = 0.0
    private var nextGain: Double?
    private(set) package var wantsAnotherPass = false
    /// Set when the loudness lands more than 0.5 LU from the target (see `AnalysingTransform.note`).
    private(set) package var note: String?
    /// In a split recording, the thread the loudness meter runs on (decision 0097).
    private var lane: MeterLane?

    package init(target: NormalizeConfig.Target) { self.target = target }
    deinit { if meter != nil { ebur128_destroy(&meter) } }

    package func startAnalysis(_ format: AudioFormat) throws {
        self.format = format
        frames = 0
        wantsAnotherPass = false
        if meter != nil { ebur128_destroy(&meter) }
        if case .loudness(_, let ceiling, _) = target {
            // The first pass measures the input's loudness and true peak; a trial, its output's loudness.
            meter = ebur128_init(UInt32(format.channels), UInt(format.sampleRate), Int32(EBUR128_MODE_I.rawValue))
            truePeaks = nextGain == nil ? TruePeakMeter(channels: format.channels, sampleRate: format.sampleRate) : nil
            if meter == nil { throw StageStartError(stage: "normalize", "libebur128 cannot measure \(format.channels) channels at \(format.sampleRate) Hz") }
            if let g = nextGain { trial = LimitedGain(decibels: g, ceiling: ceiling, format: format) }
        }
    }

    package func analyse(_ block: AudioBlock) throws {
        frames += block.frames
        if trial != nil {
            scratch.reset(channels: block.channels, capacity: block.frames)
            block.samples.withUnsafeBufferPointer { src in
                scratch.samples.withUnsafeMutableBufferPointer { dst in
                    dst.baseAddress!.update(from: src.baseAddress!, count: block.frames * block.channels)
                }
            }
            scratch.frames = block.frames
            // In place: a copy of the trial would copy the limiter's buffers on every block.
            trial!.process(&scratch)
            try measure(scratch)
        } else if meter != nil {
            try measure(block)
        } else {
            var peak = samplePeak
            block.samples.withUnsafeBufferPointer { p in
                for i in 0..<(block.frames * block.channels) { peak = max(peak, abs(p[i])) }
            }
            samplePeak = peak
        }
    }

    package func measure(on lane: MeterLane) { self.lane = lane }

    /// Hands `block` to the meter: on the lane when there is one (it copies the block), else now.
    private func measure(_ block: AudioBlock) throws {
        guard block.frames > 0 else { return }
        if let lane { try lane.submit(block) } else { try meter(block) }
    }

    /// Adds `block` to libebur128's measurement; on the lane's thread in a split recording.
    package func meter(_ block: AudioBlock) throws {
        let rc = block.samples.withUnsafeBufferPointer { ebur128_add_frames_float(meter, $0.baseAddress, block.frames) }
        if rc != 0 { throw StageStartError(stage: "normalize", "libebur128 failed (\(rc))") }
        truePeaks?.add(block)
    }

    package func endAnalysis() throws {
        defer {
            if meter != nil { ebur128_destroy(&meter) }
            meter = nil
        }
        defer { try? lane?.drain() }  // the lane is done with the meter before it goes
        switch target {
        case .peak(let dbfs):
            gain = Gain(decibels: samplePeak > 0 ? dbfs - Gain.decibels(fromLinear: Double(samplePeak)) : 0)
        case .loudness(let lufs, let ceiling, let limit):
            if var t = trial {
                // A trial ends: measure its tail too, then keep it or try again.
                scratch.reset(channels: format.channels, capacity: 0)
                t.flush(&scratch)
                try measure(scratch)
                try lane?.drain()
                trial = nil
                var measured = -Double.infinity
                ebur128_loudness_global(meter, &measured)
                let g = nextGain!
                trials.append((g, measured))
                if abs(measured - lufs) <= NormalizeConfig.tolerance || trials.count >= NormalizeConfig.maxTrials {
                    return finish(ceiling: ceiling)
                }
                // Secant on (gain → output loudness), the slope kept between 0.1 and 1: limiting
                // takes away at most what the gain adds.
                var slope = 1.0
                if trials.count >= 2 {
                    let a = trials[trials.count - 2], b = trials[trials.count - 1]
                    if b.gain != a.gain { slope = min(1, max(0.1, (b.lufs - a.lufs) / (b.gain - a.gain))) }
                }
                let ceilingGain = (lufs - inputLoudness) + 24
                let next = min(ceilingGain, g + (lufs - measured) / slope)
                if abs(next - g) < 0.01 { return finish(ceiling: ceiling) }
                nextGain = next
                wantsAnotherPass = true
                return
            }
            try lane?.drain()
            if Double(frames) < 0.4 * Double(format.sampleRate) {
                throw StageStartError(stage: "normalize", String(format: "too short to measure loudness (%.3f s; EBU R128 needs at least 0.4 s)", Double(frames) / Double(format.sampleRate)))
            }
            var measured = 0.0
            ebur128_loudness_global(meter, &measured)
            guard measured.isFinite, measured > -70 else { return }  // silence: leave as is
            let tp = truePeaks?.truePeak ?? 0
            inputLoudness = measured
            let db = lufs - measured
            let peakAfter = tp > 0 ? Gain.decibels(fromLinear: tp) + db : -Double.infinity
            if !limit {
                // Gain only: lower it so the true peak stays at or under the ceiling.
                let lowered = min(db, ceiling - (peakAfter - db))
                gain = Gain(decibels: lowered)
                if db - lowered > 0.5 {
                    note = String(format: "normalize: %.1f LUFS, not %@ — the gain was lowered %.1f dB to keep the true peak at %@ dBTP (limit: true would reach the target)",
                                  measured + lowered, canonicalNumber(lufs), db - lowered, canonicalNumber(ceiling))
                }
                return
            }
            gain = Gain(decibels: db)
            if peakAfter <= ceiling - TruePeakLimiter.marginDecibels - 0.5 {
                // Far from the ceiling: the limiter stays (it guards the ceiling) but will not act.
                limited = LimitedGain(decibels: db, ceiling: ceiling, format: format)
                return
            }
            nextGain = db
            wantsAnotherPass = true
        }
    }

    /// Keeps the trial that landed closest to the target.
    private func finish(ceiling: Double) {
        guard case .loudness(let lufs, _, _) = target, let best = trials.min(by: { abs($0.lufs - lufs) < abs($1.lufs - lufs) }) else { return }
        gain = Gain(decibels: best.gain)
        limited = LimitedGain(decibels: best.gain, ceiling: ceiling, format: format)
        wantsAnotherPass = false
        if abs(best.lufs - lufs) > 0.5 {
            note = String(format: "normalize: %.1f LUFS, not %@ — the limiter cannot get closer with the true peak at %@ dBTP (lower the target)",
                          best.lufs, canonicalNumber(lufs), canonicalNumber(ceiling))
        }
    }

    package func start(_ input: AudioFormat) throws -> AudioFormat { input }

    package func process(_ block: inout AudioBlock) throws {
        if limited != nil { limited!.process(&block) } else if !gain.isIdentity { gain.apply(to: &block) }
    }

    package func finish(_ block: inout AudioBlock) throws {
        if limited != nil { limited!.flush(&block) } else { block.frames = 0 }
    }
}

extension NormalizeConfig {
    /// The spec\'s options for this stage: every check, before any audio flows (SoX\'s getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        if v.isScalar {
            // `normalize: -16`: loudness in LUFS with the default ceiling and limiter.
            return NormalizeConfig(target: .loudness(lufs: try v.double(in: NormalizeConfig.loudnessRange, unit: "LUFS"), truePeak: NormalizeConfig.standardTruePeak))
        }
        let o = try v.options(declaredBy: declaration)
        switch (o["loudness"], o["peak"]) {
        case (let l?, nil):
            let lufs = try l.double(in: NormalizeConfig.loudnessRange, unit: "LUFS")
            let tp = try o["true_peak"]?.double(in: NormalizeConfig.truePeakRange, unit: "dBTP") ?? NormalizeConfig.standardTruePeak
            let limit = try o["limit"]?.bool() ?? true
            return NormalizeConfig(target: .loudness(lufs: lufs, truePeak: tp, limit: limit))
        case (nil, let p?):
            if let tp = o["true_peak"] { throw tp.error("true_peak goes with loudness, not peak") }
            if let l = o["limit"] { throw l.error("limit goes with loudness, not peak") }
            return NormalizeConfig(target: .peak(dbfs: try p.double(in: NormalizeConfig.peakRange, unit: "dBFS")))
        case (nil, nil): throw v.error("give loudness (LUFS) or peak (dBFS)")
        default: throw v.error("give either loudness or peak, not both")
        }
    }
}
