import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoCore
import SegnoCoreTestSupport
import SegnoKit
import SegnoTestSupport
import Testing

/// `normalize`: a measuring pass, then one gain. Peak mode is checked exactly here; loudness is
/// checked against ffmpeg's own EBU R128 meter as an independent reference.
@Suite struct NormalizeStageTests {
    /// Runs `x` through normalize the way the runner does (`ChainRecipe`: a measuring pass,
    /// then the real pass, both over the spool) and returns what a tap after it saw.
    func run(_ x: [Float], channels: Int, rate: Int, _ target: NormalizeConfig.Target, passes: ClosedRange<Int> = 2...2,
             split: Bool = false) throws -> [Float] {
        let tap = CollectTap()
        let ctx = RecordingContext(sourcePath: "/m", relativePath: "m", modified: Date(), outputRoot: NSTemporaryDirectory())
        var opened = 0
        var passed = 0
        var recipe = ChainRecipe(items: [.transform(NormalizeConfig(target: target)), .tap(CollectConfig(tap: tap), paths: ["/tmp/m"])])
        recipe.onPass = { _, _ in passed += 1 }
        recipe.pipelined = split
        _ = try recipe.run(open: {
                opened += 1
                return MemoryDecoder(x, channels: channels, rate: rate)
            }, context: ctx, isCancelled: { false }, progress: { _ in })
        #expect(opened == 1, "the source is decoded once (issue 34)")
        #expect(passes.contains(passed), "one measuring pass, limiter trials when needed, and one real pass: \(passed)")
        return tap.samples
    }

    /// Issue 22: progress moves during the measuring pass. `onPass` announces the measuring pass
    /// and the real one (2 passes), and `progress` sees the frames of both.
    @Test func progressSeesTheMeasuringPassToo() throws {
        let x = Signal.sine(rate: 48000, frames: 48000 * 3, amplitude: 0.1)
        let tap = CollectTap()
        let ctx = RecordingContext(sourcePath: "/m", relativePath: "m", modified: Date(), outputRoot: "/tmp")
        var events: [String] = []
        var lastFrames = 0
        var recipe = ChainRecipe(items: [.transform(NormalizeConfig(target: .peak(dbfs: -1))), .tap(CollectConfig(tap: tap), paths: ["/tmp/m"])])
        recipe.onPass = { pass, passes in
            events.append("pass \(pass) of \(passes) after \(lastFrames)")
            lastFrames = 0
        }
        _ = try recipe.run(open: { MemoryDecoder(x, channels: 1, rate: 48000) }, context: ctx, isCancelled: { false },
                           progress: { lastFrames = $0 })
        events.append("end \(lastFrames)")
        #expect(events == ["pass 0 of 2 after 0", "pass 1 of 2 after \(x.count)", "end \(x.count)"])
        // Without `onPass` the old contract holds: `progress` sees the real pass only.
        var seen: [Int] = []
        _ = try ChainRecipe(items: [.transform(NormalizeConfig(target: .peak(dbfs: -1))), .tap(CollectConfig(tap: CollectTap()), paths: ["/tmp/m"])])
            .run(open: { MemoryDecoder(x, channels: 1, rate: 48000) }, context: ctx, isCancelled: { false }, progress: { seen.append($0) })
        #expect(seen.last == x.count && zip(seen, seen.dropFirst()).allSatisfy { $0 < $1 }, "one rising count: \(seen.count) calls")
    }

    @Test func peakModeBringsTheSamplePeakToTheTarget() throws {
        let x = Signal.sine(frequency: 440, rate: 48000, frames: 48000, channels: 2, amplitude: 0.1)
        let y = try run(x, channels: 2, rate: 48000, .peak(dbfs: -1))
        let peak = y.map(abs).max() ?? 0
        #expect(abs(Double(peak) - pow(10, -1.0 / 20)) < 1e-5)
        // One gain for the whole recording: the ratio is constant.
        #expect(abs(Double(y[1000] / x[1000]) - Double(y[30001] / x[30001])) < 1e-4)
    }

    @Test func tooShortForLoudnessIsAClearError() throws {
        let x = Signal.sine(rate: 48000, frames: 9600, amplitude: 0.1)  // 0.2 s
        #expect(throws: StageStartError.self) { _ = try run(x, channels: 1, rate: 48000, .loudness(lufs: -16, truePeak: -1)) }
        do { _ = try run(x, channels: 1, rate: 48000, .loudness(lufs: -16, truePeak: -1)) } catch {
            #expect("\(error)".contains("too short to measure loudness"))
        }
    }

    @Test func silencePassesUnchanged() throws {
        let x = [Float](repeating: 0, count: 48000)
        #expect(try run(x, channels: 1, rate: 48000, .loudness(lufs: -16, truePeak: -1)) == x)
    }

    /// ffmpeg's EBU R128 meter on `path`: integrated loudness (LUFS) and true peak (dBTP).
    static func ffmpegMeter(_ path: String) throws -> (lufs: Double, truePeak: Double) {
        let r = try Tool.run("ffmpeg", ["-hide_banner", "-nostats", "-i", path, "-af", "ebur128=peak=true", "-f", "null", "-"])
        let lines = r.stderrText.split(separator: "\n")
        func value(_ label: String) -> Double? {
            // The summary's "    I:         -20.0 LUFS" and "    Peak:       -1.3 dBFS" lines.
            lines.last { $0.trimmingCharacters(in: .whitespaces).hasPrefix(label) }
                .flatMap { l in l.split(separator: " ").compactMap { Double($0) }.first }
        }
        guard let i = value("I:"), let p = value("Peak:") else { throw FixtureError("no loudness in ffmpeg's output: \(r.stderrText)") }
        return (i, p)
    }

    /// Runs `convert` with `normalize` from `input` to a float WAV and meters it with ffmpeg.
    func normalizeAndMeter(_ input: String, in dir: TempDir, _ target: NormalizeConfig.Target) throws -> (lufs: Double, truePeak: Double, frames: Int, samples: [Float]) {
        let out = dir["out-\(UUID().uuidString).wav"]
        _ = try Convert.run(input: input, output: out, tools: .forTests, transforms: [NormalizeConfig(target: target)],
                            encode: EncodeConfig(path: try PathTemplate("out.wav"), format: nil, bits: .float, quality: nil, searchPath: AudioTools.forTests.searchPath))
        let m = try Self.ffmpegMeter(out)
        let d = try Fixtures.decode(out)
        return (m.lufs, m.truePeak, d.info.frames, d.samples)
    }

    /// A quiet tone with short loud bursts twice a second: reaching −16 LUFS puts the bursts
    /// about 5 dB over the ceiling, so only a limiter gets there.
    static func toneBursts(rate: Int = 48000, seconds: Int = 10) -> [Float] {
        var x = [Float](repeating: 0, count: rate * seconds * 2)
        for f in 0..<(rate * seconds) {
            let t = Double(f) / Double(rate)
            let inBurst = f % (rate / 2) >= rate / 2 - rate / 200  // the last 5 ms of each half second
            let v = inBurst ? 0.95 * sin(2 * .pi * 2000 * t) : 0.05 * sin(2 * .pi * 440 * t)
            x[2 * f] = Float(v)
            x[2 * f + 1] = Float(v)
        }
        return x
    }

    /// Loudness lands within ±0.5 LU of the target with the true peak under the ceiling, by
    /// ffmpeg's meter (independent of libebur128), on espeak-ng speech and on tone bursts;
    /// without the limiter the same targets are missed (the behaviour before issue 12).
    @Test(.enabled(if: Tool.find("ffmpeg") != nil && Tool.find("espeak-ng") != nil))
    func loudnessReachesTheTargetWithTheTruePeakUnderTheCeiling() throws {
        let dir = try TempDir()
        let speech = dir["speech.wav"]
        let r = try Tool.run("espeak-ng", ["-w", speech, "Minutes of the Tuesday meeting. We went through the budget for the autumn season, agreed to move the rehearsal to Thursday evening, and asked Maria to collect quotes for two new condenser microphones."])
        try #require(r.status == 0, "\(r.stderrText)")
        let bursts = try Fixtures.write(Self.toneBursts(), channels: 2, rate: 48000, to: dir["bursts.wav"], bits: .float)
        for (input, lufs) in [(speech, -16.0), (bursts, -16.0), (bursts, -10.0)] {
            let frames = try Fixtures.decode(input).info.frames
            let limited = try normalizeAndMeter(input, in: dir, .loudness(lufs: lufs, truePeak: -1))
            #expect(abs(limited.lufs - lufs) <= 0.5, "\(input) to \(lufs): ffmpeg measured \(limited.lufs) LUFS")
            #expect(limited.truePeak <= -1.0, "\(input): true peak \(limited.truePeak) dBTP")
            #expect(limited.frames == frames, "the limiter's latency is compensated: same length")
            let gainOnly = try normalizeAndMeter(input, in: dir, .loudness(lufs: lufs, truePeak: -1, limit: false))
            #expect(gainOnly.lufs < lufs - 1, "\(input): gain only reaches \(gainOnly.lufs) LUFS")
            #expect(gainOnly.truePeak <= -1.0)
        }
    }

    /// The output is aligned with the input: where the limiter does not act, every sample is the
    /// input's times one gain, at the same index; where it acts, the bursts start where they did.
    @Test func theLimiterKeepsLengthAndAlignment() throws {
        // Far under the ceiling after the gain: one gain, sample for sample.
        let x = Signal.sine(frequency: 440, rate: 48000, frames: 48000 * 2, channels: 2, amplitude: 0.01)
        let y = try run(x, channels: 2, rate: 48000, .loudness(lufs: -30, truePeak: -1))
        #expect(y.count == x.count)
        let ratio = y[2001] / x[2001]
        #expect(ratio > 1)
        var worst: Float = 0
        for i in 0..<x.count { worst = max(worst, abs(y[i] - x[i] * ratio)) }
        #expect(worst < 1e-5)
        // Bursts that need limiting: trials, then the burst onsets sit at the same frames.
        let b = Self.toneBursts(seconds: 4)
        let z = try run(b, channels: 2, rate: 48000, .loudness(lufs: -16, truePeak: -1), passes: 3...(2 + NormalizeConfig.maxTrials))
        #expect(z.count == b.count)
        let onset = 48000 / 2 - 240  // the first burst
        #expect(abs(z[2 * (onset - 2)]) < 0.6 && abs(z[2 * (onset + 40)]) > 0)
        let peak = z.map(abs).max() ?? 0
        #expect(Double(peak) <= pow(10, -1.0 / 20))
    }

    /// Split, the loudness meter runs on the taps' thread (decision 0097) in the measuring pass
    /// and every limiter trial: the trials land where they land on one thread, and the output is
    /// the same bit for bit. Stereo, so a block's channels stay in order across the hand-off.
    @Test func theMeterOnItsOwnThreadFindsTheSameGain() throws {
        let b = Self.toneBursts(seconds: 6)
        let one = try run(b, channels: 2, rate: 48000, .loudness(lufs: -14, truePeak: -1), passes: 4...(2 + NormalizeConfig.maxTrials))
        let split = try run(b, channels: 2, rate: 48000, .loudness(lufs: -14, truePeak: -1), passes: 4...(2 + NormalizeConfig.maxTrials), split: true)
        #expect(one.count == b.count && split.count == b.count)
        #expect(one.map(\.bitPattern) == split.map(\.bitPattern))
    }

    /// `segno convert` splits a recording the length `SplitRule` asks for (lowered here to 1 s),
    /// with the meter on its own thread, and writes the very bytes of the one-thread conversion.
    @Test func convertSplitsALongRecordingWithTheSameBytes() throws {
        let dir = try TempDir()
        let input = try Fixtures.write(Self.toneBursts(seconds: 5), channels: 2, rate: 48000, to: dir["bursts.wav"], bits: .b16)
        let chain: [any TransformConfig] = [FilterConfig(filter: .highpass, frequency: 80), NormalizeConfig(target: .loudness(lufs: -14, truePeak: -1))]
        func convert(_ rule: SplitRule, _ name: String) throws -> (split: Bool, bytes: Data) {
            let out = dir[name]
            let r = try Convert.run(input: input, output: out, tools: .forTests, transforms: chain,
                                    encode: EncodeConfig(path: try PathTemplate(name), format: nil, bits: .b16, quality: nil, searchPath: AudioTools.forTests.searchPath),
                                    split: rule)
            return (r.split, try Data(contentsOf: URL(fileURLWithPath: out)))
        }
        let split = try convert(SplitRule(mode: .auto, cores: 2, minimumSeconds: 1), "split.flac")
        let one = try convert(SplitRule(mode: .auto, cores: 2, minimumSeconds: 10), "one.flac")
        let off = try convert(SplitRule(mode: .off, cores: 2, minimumSeconds: 1), "off.flac")
        #expect(split.split && !one.split && !off.split)
        #expect(split.bytes.count > 10_000)
        #expect(split.bytes == one.bytes && split.bytes == off.bytes)
    }

    @Test func shorthandAndLimitOptionParse() throws {
        func target(_ stage: String) throws -> NormalizeConfig.Target? {
            let yaml = "version: 1\ninput:\n  root: in\noutput:\n  root: out\nstages:\n  - \(stage)\n  - encode: { path: x.flac }\n"
            let spec = try SpecLoader.parse(yaml, file: "spec.yaml", baseDirectory: "/base", registry: .forTests)
            return (spec.stages[0].config as? NormalizeConfig)?.target
        }
        #expect(try target("normalize: -16") == .loudness(lufs: -16, truePeak: -1, limit: true))
        #expect(try target("normalize: { loudness: -20, limit: false }") == .loudness(lufs: -20, truePeak: -1, limit: false))
        #expect(throws: SpecError.self) { _ = try target("normalize: { peak: -1, limit: false }") }
    }
}

/// Hands a `CollectTap` to a `ChainRecipe` (tests only; the tap is used by one thread).
struct CollectConfig: TapConfig, @unchecked Sendable {
    let tap: CollectTap
    var name: String { "collect" }
    var version: Int { 1 }
    var options: [(String, String)] { [] }
    var pathTemplate: PathTemplate { try! PathTemplate("m") }
    func makeTap(paths: [String], context: RecordingContext) throws -> any Tap { tap }
}
