import Foundation
import SegnoCore
import SegnoDSP
import Testing

/// `normalize`: a measuring pass, then one gain. Peak mode is checked exactly here; loudness is
/// checked against ffmpeg's own EBU R128 meter as an independent reference.
@Suite struct NormalizeStageTests {
    /// Runs `x` through normalize the way the runner does (`ChainRecipe`: a measuring pass,
    /// then the real pass) and returns what a tap after it saw.
    func run(_ x: [Float], channels: Int, rate: Int, _ target: NormalizeConfig.Target) throws -> [Float] {
        let tap = CollectTap()
        let ctx = RecordingContext(sourcePath: "/m", relativePath: "m", modified: Date(), outputRoot: "/tmp")
        var opened = 0
        _ = try ChainRecipe(items: [.transform(NormalizeConfig(target: target)), .tap(CollectConfig(tap: tap), paths: ["/tmp/m"])])
            .run(open: {
                opened += 1
                return MemoryDecoder(x, channels: channels, rate: rate)
            }, context: ctx, isCancelled: { false }, progress: { _ in })
        #expect(opened == 2, "one measuring pass and one real pass")
        return tap.samples
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

    /// The CLI's loudness result, measured by ffmpeg's ebur128 filter (skipped without ffmpeg).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg")))
    func loudnessModeHitsTheTargetByAnIndependentMeter() throws {
        let dir = try TempDir()
        let x = Signal.noise(frames: 48000 * 5, channels: 2, amplitude: 0.05)
        _ = try Fixtures.write(x, channels: 2, rate: 48000, to: dir["in.wav"], bits: .float)
        _ = try Convert.run(input: dir["in.wav"], output: dir["out.wav"],
                            transforms: [NormalizeConfig(target: .loudness(lufs: -20, truePeak: -1))],
                            encode: EncodeConfig(path: try PathTemplate("out.wav"), format: nil, bits: .float, quality: nil))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = ["-hide_banner", "-nostats", "-i", dir["out.wav"], "-af", "ebur128=peak=true", "-f", "null", "-"]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        // The summary's "I:  -20.0 LUFS" line.
        let line = text.split(separator: "\n").last { $0.contains("I:") && $0.contains("LUFS") }
        let value = line.flatMap { l in l.split(separator: " ").compactMap { Double($0) }.first }
        let lufs = try #require(value, "no integrated loudness in ffmpeg's output")
        #expect(abs(lufs - -20) <= 0.2, "ffmpeg measured \(lufs) LUFS")
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
