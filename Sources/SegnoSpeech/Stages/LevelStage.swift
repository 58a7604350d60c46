import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP

/// `level: { loudness: -16, true_peak: -1, max_gain: 20, vad: silero }` (shorthand `level: -16`):
/// an adaptive leveler for speech. Voice segments (found by `pauses`' detectors) each get a slow
/// gain that brings them to the loudness of the speech as a whole, within ±`max_gain` dB, so a
/// quiet speaker and a loud one come out alike (`LevelRider`); pauses keep the lowest gain of the
/// voice around them and are never lifted more than the recording as a whole. Then one gain and
/// `normalize`'s look-ahead true-peak limiter bring the result to `loudness` LUFS with the true
/// peak at or under `true_peak` dBTP, found by trial as `normalize` does (decision 0081).
///
/// It measures a spool (decision 0053): the first pass measures the speech, the second rides
/// and measures the result, limiter trials follow when the peaks need them, and the last pass
/// writes. Memory is bounded by the detector's latency (at most 10 s of audio), not the length.
/// The output has exactly the input's frames. A silent recording passes through unchanged; one
/// shorter than 0.4 s fails with "too short to measure loudness".
public struct LevelConfig: TransformConfig {
    public var setsLevel: Bool { true }
    public let loudness: Double
    public let truePeak: Double
    public let maxGain: Double
    public let engine: VoiceActivityEngine
    package let locator: SpeechLocator
    /// Loaded voice detectors, kept between recordings.
    package let detectors = VoiceDetectorPool()
    public var name: String { "level" }
    public var version: Int { 1 }
    public var options: [(String, String)] {
        [("loudness", canonicalNumber(loudness)), ("true_peak", canonicalNumber(truePeak)),
         ("max_gain", canonicalNumber(maxGain)), ("vad", engine.rawValue)]
    }
    /// The loudness target when none is given, in LUFS (speech podcasts).
    public static let standardLoudness = -16.0
    /// The most a voice segment is raised or lowered from the speech as a whole, by default (dB).
    public static let standardMaxGain = 20.0
    public static let maxGainRange: ClosedRange<Double> = 0 ... 40

    public static let declaration = StageDeclaration(
        key: "level", kind: .transform,
        summary: "Evens out speakers and passages (slow gain on voice segments), then brings the recording to a loudness with a true-peak limiter.",
        options: [
            .init("loudness", .number, unit: "LUFS", default: canonicalNumber(standardLoudness), .within(NormalizeConfig.loudnessRange),
                  help: "Integrated loudness target (EBU R128) of the levelled recording."),
            .init("true_peak", .number, unit: "dBTP", default: canonicalNumber(NormalizeConfig.standardTruePeak), .within(NormalizeConfig.truePeakRange),
                  help: "The ceiling the true peak stays at or under (look-ahead limiter)."),
            .init("max_gain", .number, unit: "dB", default: canonicalNumber(standardMaxGain), .within(maxGainRange),
                  help: "The most a voice segment is raised or lowered from the speech as a whole."),
            .init("vad", .choice, default: VoiceActivityEngine.standard.rawValue, .oneOf(VoiceActivityEngine.self),
                  help: "The voice activity detector that finds the speech (as in pauses)."),
        ],
        shorthand: "`level: -16` is `{ loudness: -16 }`", example: "level: { loudness: -16, true_peak: -1, max_gain: 20 }",
        capabilities: [.setsLevel, .usesHelper])

    public init(loudness: Double, truePeak: Double = NormalizeConfig.standardTruePeak, maxGain: Double = LevelConfig.standardMaxGain,
                engine: VoiceActivityEngine = .standard, locator: SpeechLocator = .standard) {
        self.loudness = loudness
        self.truePeak = truePeak
        self.maxGain = maxGain
        self.engine = engine
        self.locator = locator
    }

    public func makeTransform() throws -> any Transform { try LevelTransform(config: self) }
}

extension LevelConfig: NeedsInstalledParts {
    /// The same parts as `pauses` with this detector.
    public func missingParts() -> [String] {
        PausesConfig(rules: PauseRules(trim: true, longerThan: nil, to: PausesConfig.standardTo), engine: engine,
                     cuts: PausesConfig.standardCuts, locator: locator).missingParts()
    }
}

/// One recording's levelling: a measuring pass, a riding pass measured without the limiter,
/// limiter trials when the peaks need them, then the real pass (rider, gain, limiter).
final package class LevelTransform: AnalysingTransform {
    package let config: LevelConfig
    private var format = AudioFormat(sampleRate: 48000, channels: 1)
    private var frames = 0
    /// From the measuring pass; nil until it ended.
    private(set) package var input: SpeechLoudness?
    private var silent = false
    /// The offset (dB) and whether the limiter runs in the pass under way or the real one.
    private var offset = 0.0, limiting = false, decided = false
    private var rider: LevelRider?
    private var limited: LimitedGain?
    private var meter: LoudnessMeter?
    private var out = AudioBlock(channels: 1)
    private var tail = AudioBlock(channels: 1)
    /// (offset dB, measured LUFS) of each limiter trial.
    private(set) package var trials: [(gain: Double, lufs: Double)] = []
    private(set) package var wantsAnotherPass = false
    private(set) package var note: String?

    /// The detector of the first pass, made with the transform so that a missing engine or model
    /// fails at once, as an environment failure (`SpeechError`), as in `pauses`.
    private var firstDetector: (any VoiceDetector)?
    /// The voice segments the measuring pass found; every later pass rides on them (decision 0093).
    private var voice: [Range<Int>]?

    package init(config: LevelConfig) throws {
        self.config = config
        firstDetector = try config.detectors.take(config.engine, locator: config.locator)
    }

    /// The rider for a pass: measuring only, with the detector, before `input` is known; riding on
    /// the measuring pass's voice segments after.
    private func makeRider() throws -> LevelRider {
        let reference = input.map { $0.speech ?? $0.integrated }
        let cap = input.map { ($0.speech ?? $0.integrated) - $0.integrated } ?? 0
        let source: LevelRider.Voice
        if let voice { source = .known(voice) } else {
            source = .detect(try firstDetector ?? config.detectors.take(config.engine, locator: config.locator))
            firstDetector = nil
        }
        let r = LevelRider(voice: source, reference: reference, maxGain: config.maxGain, pauseCap: cap, offset: offset)
        try r.start(format)
        return r
    }

    package func startAnalysis(_ format: AudioFormat) throws {
        self.format = format
        wantsAnotherPass = false
        rider = try makeRider()
        limited = limiting ? LimitedGain(decibels: 0, ceiling: config.truePeak, format: format) : nil
        meter = nil
        if input != nil { meter = try LoudnessMeter(format: format, truePeak: !limiting, stage: "level") }
        out = AudioBlock(channels: format.channels, capacity: 8192)
    }

    package func analyse(_ block: AudioBlock) throws {
        if input == nil { frames += block.frames }
        out.frames = 0
        try rider!.feed(block, into: &out)
        try pass(&out)
    }

    /// The limiter (in a trial) and the output meter, on what the rider gave.
    private func pass(_ block: inout AudioBlock) throws {
        if limited != nil { limited!.process(&block) }
        try meter?.add(block)
    }

    package func endAnalysis() throws {
        out.frames = 0
        try rider!.finish(into: &out)
        try pass(&out)
        if limited != nil {
            tail.reset(channels: format.channels, capacity: 0)
            limited!.flush(&tail)
            try meter?.add(tail)
        }
        let measured = rider!.measured
        if input == nil { voice = rider!.voiceSegments }
        rider = nil
        guard input != nil else { return try endMeasuring(measured) }
        let lufs = meter!.integrated
        if !limiting {
            // The ride without the limiter: one gain reaches the target; peaks decide the rest.
            offset = config.loudness - lufs
            let peak = meter!.truePeak(channels: format.channels)
            let peakAfter = peak > 0 ? Gain.decibels(fromLinear: peak) + offset : -Double.infinity
            limiting = true
            decided = peakAfter <= config.truePeak - TruePeakLimiter.marginDecibels - 0.5
            wantsAnotherPass = !decided
            return
        }
        trials.append((offset, lufs))
        if abs(lufs - config.loudness) <= NormalizeConfig.tolerance || trials.count >= NormalizeConfig.maxTrials { return keepBest() }
        var slope = 1.0
        if trials.count >= 2 {
            let a = trials[trials.count - 2], b = trials[trials.count - 1]
            if b.gain != a.gain { slope = min(1, max(0.1, (b.lufs - a.lufs) / (b.gain - a.gain))) }
        }
        let next = min(trials[0].gain + 24, offset + (config.loudness - lufs) / slope)
        if abs(next - offset) < 0.01 { return keepBest() }
        offset = next
        wantsAnotherPass = true
    }

    /// End of the measuring pass: the speech's loudness; a ride follows unless silent.
    private func endMeasuring(_ m: SpeechLoudness) throws {
        if Double(frames) < 0.4 * Double(format.sampleRate) {
            throw StageStartError(stage: "level", String(format: "too short to measure loudness (%.3f s; EBU R128 needs at least 0.4 s)", Double(frames) / Double(format.sampleRate)))
        }
        input = m
        silent = !(m.integrated.isFinite && m.integrated > -70)
        wantsAnotherPass = !silent
    }

    /// Keeps the trial that landed closest to the target.
    private func keepBest() {
        guard let best = trials.min(by: { abs($0.lufs - config.loudness) < abs($1.lufs - config.loudness) }) else { return }
        offset = best.gain
        decided = true
        wantsAnotherPass = false
        if abs(best.lufs - config.loudness) > 0.5 {
            note = String(format: "level: %.1f LUFS, not %@ — the limiter cannot get closer with the true peak at %@ dBTP (lower the target)",
                          best.lufs, canonicalNumber(config.loudness), canonicalNumber(config.truePeak))
        }
    }

    package func start(_ input: AudioFormat) throws -> AudioFormat {
        format = input
        guard decided, !silent else { return input }
        rider = try makeRider()
        limited = LimitedGain(decibels: 0, ceiling: config.truePeak, format: input)
        out = AudioBlock(channels: input.channels, capacity: 8192)
        return input
    }

    package func process(_ block: inout AudioBlock) throws {
        guard rider != nil else { return }
        out.frames = 0
        try rider!.feed(block, into: &out)
        limited!.process(&out)
        swap(&block, &out)
    }

    package func finish(_ block: inout AudioBlock) throws {
        block.frames = 0
        guard rider != nil else { return }
        try rider!.finish(into: &block)
        limited!.process(&block)
        tail.reset(channels: format.channels, capacity: 0)
        limited!.flush(&tail)
        let start = block.frames, n = tail.frames * format.channels
        block.reserve(frames: start + tail.frames)
        block.samples.withUnsafeMutableBufferPointer { d in
            tail.samples.withUnsafeBufferPointer { s in (d.baseAddress! + start * format.channels).update(from: s.baseAddress!, count: n) }
        }
        block.frames = start + tail.frames
    }
}

extension LevelConfig {
    /// The spec's options for this stage: every check, before any audio flows (SoX's getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        if v.isScalar {
            return LevelConfig(loudness: try v.double(in: NormalizeConfig.loudnessRange, unit: "LUFS"))
        }
        let o = try v.options(declaredBy: declaration)
        return LevelConfig(
            loudness: try o["loudness"]?.double(in: NormalizeConfig.loudnessRange, unit: "LUFS") ?? standardLoudness,
            truePeak: try o["true_peak"]?.double(in: NormalizeConfig.truePeakRange, unit: "dBTP") ?? NormalizeConfig.standardTruePeak,
            maxGain: try o["max_gain"]?.double(in: maxGainRange, unit: "dB") ?? standardMaxGain,
            engine: try o["vad"]?.choice(VoiceActivityEngine.self) ?? .standard)
    }
}
