import CEbur128
import Foundation
import SegnoDSP

/// `normalize: { loudness: -16, true_peak: -1 }` (EBU R128 / ITU-R BS.1770 integrated loudness
/// in LUFS, measured with libebur128, then one linear gain, lowered if needed so the true peak
/// stays at or under `true_peak` dBTP) or `normalize: { peak: -1 }` (sample peak to dBFS).
///
/// Needs the whole recording before the first block can go out: the chain runs a measuring
/// pass first (streaming, constant memory), then applies the gain in the real pass.
/// A silent recording is passed through unchanged; one shorter than 0.4 s cannot be measured
/// for loudness and fails with "too short to measure loudness".
public struct NormalizeConfig: TransformConfig {
    public enum Target: Sendable, Equatable {
        /// Integrated loudness in LUFS, with a true-peak ceiling in dBTP.
        case loudness(lufs: Double, truePeak: Double)
        /// Sample peak in dBFS.
        case peak(dbfs: Double)
    }
    public let target: Target
    public var name: String { "normalize" }
    public var version: Int { 1 }
    public var options: [(String, String)] {
        switch target {
        case .loudness(let l, let tp): return [("loudness", canonicalNumber(l)), ("true_peak", canonicalNumber(tp))]
        case .peak(let p): return [("peak", canonicalNumber(p))]
        }
    }
    public static let loudnessRange: ClosedRange<Double> = -70 ... -5
    public static let peakRange: ClosedRange<Double> = -60 ... 0

    public init(target: Target) { self.target = target }
    public func makeTransform() throws -> any Transform { NormalizeTransform(target: target) }
}

final class NormalizeTransform: AnalysingTransform {
    let target: NormalizeConfig.Target
    private var meter: UnsafeMutablePointer<ebur128_state>?
    private var channels = 1
    private var rate = 48000
    private var frames = 0
    private var samplePeak: Float = 0
    /// Gain applied in the real pass; set by `endAnalysis`.
    private(set) var gain = Gain(decibels: 0)

    init(target: NormalizeConfig.Target) { self.target = target }
    deinit { if meter != nil { ebur128_destroy(&meter) } }

    func startAnalysis(_ format: AudioFormat) throws {
        channels = format.channels
        rate = format.sampleRate
        if case .loudness = target {
            meter = ebur128_init(UInt32(channels), UInt(rate), Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_TRUE_PEAK.rawValue))
            if meter == nil { throw StageStartError(stage: "normalize", "libebur128 cannot measure \(channels) channels at \(rate) Hz") }
        }
    }

    func analyse(_ block: AudioBlock) throws {
        frames += block.frames
        if let meter {
            let rc = block.samples.withUnsafeBufferPointer { ebur128_add_frames_float(meter, $0.baseAddress, block.frames) }
            if rc != 0 { throw StageStartError(stage: "normalize", "libebur128 failed (\(rc))") }
        } else {
            var peak = samplePeak
            block.samples.withUnsafeBufferPointer { p in
                for i in 0..<(block.frames * block.channels) { peak = max(peak, abs(p[i])) }
            }
            samplePeak = peak
        }
    }

    func endAnalysis() throws {
        switch target {
        case .peak(let dbfs):
            gain = Gain(decibels: samplePeak > 0 ? dbfs - Gain.decibels(fromLinear: Double(samplePeak)) : 0)
        case .loudness(let lufs, let ceiling):
            if Double(frames) < 0.4 * Double(rate) {
                throw StageStartError(stage: "normalize", String(format: "too short to measure loudness (%.3f s; EBU R128 needs at least 0.4 s)", Double(frames) / Double(rate)))
            }
            var measured = 0.0
            ebur128_loudness_global(meter, &measured)
            guard measured.isFinite, measured > -70 else { return }  // silence: leave as is
            var tp = 0.0
            for ch in 0..<channels {
                var v = 0.0
                ebur128_true_peak(meter, UInt32(ch), &v)
                tp = max(tp, v)
            }
            var db = lufs - measured
            // Lower the gain so the true peak stays at or under the ceiling.
            if tp > 0 { db = min(db, ceiling - Gain.decibels(fromLinear: tp)) }
            gain = Gain(decibels: db)
        }
        if meter != nil { ebur128_destroy(&meter) }
        meter = nil
    }

    func start(_ input: AudioFormat) throws -> AudioFormat { input }

    func process(_ block: inout AudioBlock) throws {
        if !gain.isIdentity { gain.apply(to: &block) }
    }
}

extension NormalizeConfig {
    /// The spec\'s options for this stage: every check, before any audio flows (SoX\'s getopts).
    static func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(allowed: ["loudness", "true_peak", "peak"])
        switch (o["loudness"], o["peak"]) {
        case (let l?, nil):
            let lufs = try l.double(in: NormalizeConfig.loudnessRange, unit: "LUFS")
            let tp = try o["true_peak"]?.double(in: -20...0, unit: "dBTP") ?? -1
            return NormalizeConfig(target: .loudness(lufs: lufs, truePeak: tp))
        case (nil, let p?):
            if let tp = o["true_peak"] { throw tp.error("true_peak goes with loudness, not peak") }
            return NormalizeConfig(target: .peak(dbfs: try p.double(in: NormalizeConfig.peakRange, unit: "dBFS")))
        case (nil, nil): throw v.error("give loudness (LUFS) or peak (dBFS)")
        default: throw v.error("give either loudness or peak, not both")
        }
    }
}
