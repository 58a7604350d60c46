import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoCoreTestSupport
import SegnoAudioTestSupport
import SegnoTestSupport
import Testing

/// The `stats` tap against independent measurements: SoX's `stats` effect for sample peak, RMS
/// and DC offset, FFmpeg's `ebur128` filter for true peak and loudness range.
@Suite struct StatsStageTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    static let rate = 48000

    /// 20 s, mono: a 997 Hz tone at three levels (for a loudness range), a burst at a quarter of
    /// the rate whose samples miss its crests (true peak 0.7 above sample peaks of 0.495), and a
    /// DC offset of 0.02 throughout.
    static func signal() -> [Float] {
        let frames = 20 * rate
        return (0..<frames).map { i in
            let t = Double(i) / Double(rate)
            let level = t < 8 ? 0.1 : t < 16 ? 0.5 : 0.25
            var x = level * sin(2 * Double.pi * 997 * t)
            if t >= 17, t < 17.5 { x = 0.7 * sin(Double.pi / 2 * Double(i) + Double.pi / 4) }
            return Float(x + 0.02)
        }
    }

    /// The tap's values for `x` (mono unless said), streamed in blocks of `blockFrames`.
    func measure(_ x: [Float], channels: Int = 1, blockFrames: Int = 4096, clipLevel: Double = StatsConfig.defaultClipLevel) throws -> [String: String] {
        let config = StatsConfig(path: try PathTemplate("{stem}.stats.json"), clipLevel: clipLevel)
        let context = RecordingContext(sourcePath: "/in/m.wav", relativePath: "m.wav", modified: Date(), outputRoot: dir.path)
        let tap = try config.makeTap(paths: [dir["m.stats.json"]], context: context)
        let produced = try StageChain(elements: [.tap(tap)], blockFrames: blockFrames)
            .run(decoder: MemoryDecoder(x, channels: channels, rate: Self.rate))
        let file = try #require(produced.flatMap { $0 }.first)
        #expect(file.stage == "stats" && file.path == dir["m.stats.json"])
        return file.values
    }

    /// `x` as a 32-bit float WAV (exact), written by sox.
    func wav(_ x: [Float]) throws -> String {
        let path = dir["m.wav"]
        let data = x.withUnsafeBufferPointer { Data(buffer: $0) }
        let r = try ProcessRunner.tool("sox", ["-t", "f32", "-r", String(Self.rate), "-c", "1", "-", "-e", "floating-point", "-b", "32", path], stdin: data)
        #expect(r.status == 0, "\(r.stderr)")
        return path
    }

    /// The number after `label` on a line of `text`.
    static func figure(_ label: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") {
            let l = line.trimmingCharacters(in: .whitespaces)
            if l.hasPrefix(label) { return Double(l.dropFirst(label.count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") }
        }
        return nil
    }

    @Test func samplePeakRMSAndDCMatchSoX() throws {
        let x = Self.signal()
        let v = try measure(x)
        let sox = try ProcessRunner.tool("sox", [try wav(x), "-n", "stats"])
        #expect(sox.status == 0, "\(sox.stderr)")
        // SoX prints dB with 2 decimals and the offset with 6: the tolerances are half a unit of
        // its last digit plus our own rounding.
        let peak = try #require(Self.figure("Pk lev dB", in: sox.stderr)), rms = try #require(Self.figure("RMS lev dB", in: sox.stderr))
        let dc = try #require(Self.figure("DC offset", in: sox.stderr))
        #expect(abs(try #require(v["peak_dbfs"].flatMap(Double.init)) - peak) <= 0.011, "\(v) vs \(sox.stderr)")
        #expect(abs(try #require(v["rms_dbfs"].flatMap(Double.init)) - rms) <= 0.011, "\(v) vs \(sox.stderr)")
        #expect(abs(try #require(v["dc_offset"].flatMap(Double.init)) - dc) <= 2e-6, "\(v) vs \(sox.stderr)")
        #expect(v["clipped"] == "0")
    }

    @Test func truePeakAndLoudnessRangeMatchFFmpeg() throws {
        let x = Self.signal()
        let v = try measure(x)
        let ff = try ProcessRunner.tool("ffmpeg", ["-nostdin", "-hide_banner", "-i", "file:" + (try wav(x)), "-af", "ebur128=peak=true", "-f", "null", "-"])
        #expect(ff.status == 0, "\(ff.stderr)")
        // The summary comes last; FFmpeg prints one decimal and oversamples with its own filter.
        let summary = String(ff.stderr[(ff.stderr.range(of: "Summary:")?.upperBound ?? ff.stderr.startIndex)...])
        let lra = try #require(Self.figure("LRA:", in: summary)), truePeak = try #require(Self.figure("Peak:", in: summary))
        let ourPeak = try #require(v["true_peak_dbtp"].flatMap(Double.init))
        #expect(abs(ourPeak - truePeak) <= 0.2, "\(v) vs \(summary)")
        #expect(abs(try #require(v["loudness_range_lu"].flatMap(Double.init)) - lra) <= 0.5, "\(v) vs \(summary)")
        // The burst's crests fall between samples: the true peak is above the sample peak.
        #expect(ourPeak > (try #require(v["peak_dbfs"].flatMap(Double.init))) + 2)
    }

    @Test func clippedSamplesAreCountedAtTheClipLevel() throws {
        var x = Signal.sine(frequency: 440, rate: Self.rate, frames: Self.rate, amplitude: 0.5)
        for i in [100, 2000, 30000] { x[i] = 1 }
        for i in [500, 40000] { x[i] = -1 }
        x[7000] = 0.9
        #expect(try measure(x)["clipped"] == "5")
        // At −1 dBFS (0.891) the sample at 0.9 counts too.
        #expect(try measure(x, clipLevel: -1)["clipped"] == "6")
    }

    @Test func figuresDoNotDependOnTheBlockSize() throws {
        let x = Signal.noise(frames: 3 * Self.rate, channels: 2, amplitude: 0.4)
        let each = try StageHarness.blockSizes.map { try measure(x, channels: 2, blockFrames: $0) }
        #expect(each.allSatisfy { $0 == each[0] }, "\(each)")
        #expect(each[0].keys.sorted() == ["clipped", "dc_offset", "loudness_range_lu", "peak_dbfs", "rms_dbfs", "true_peak_dbtp"])
    }

    @Test func silenceHasNoLevels() throws {
        let v = try measure([Float](repeating: 0, count: Self.rate))
        #expect(v["peak_dbfs"] == nil && v["rms_dbfs"] == nil && v["true_peak_dbtp"] == nil)
        #expect(v["clipped"] == "0" && v["dc_offset"] == "0.000000")
        let json = try String(contentsOfFile: dir["m.stats.json"], encoding: .utf8)
        #expect(json.contains("\"peak_dbfs\":null") && json.contains("\"frames\":48000"), "\(json)")
    }

    @Test func theReportShowsItsMeasuresThroughItsDeclaration() throws {
        let spec = try SpecLoader.parseForTests("""
            version: 1
            name: stats
            input: { root: /in }
            output: { root: /out }
            stages:
              - stats: { path: "{stem}.stats.json" }
            """)
        let values = ["peak_dbfs": "-3.50", "rms_dbfs": "-20.25", "true_peak_dbtp": "-3.10", "loudness_range_lu": "6.40",
                      "dc_offset": "0.000100", "clipped": "2"]
        let detail = String(decoding: try JSONSerialization.data(withJSONObject: values, options: [.sortedKeys]), as: UTF8.self)
        let row = ReportData.recording(path: "m.wav", mtimeNs: 0, duration: 1, status: "done", error: nil, failureClass: nil,
                                       steps: [(stage: "stats:{stem}.stats.json", output: "[\"m.stats.json\"]", finished: 1, detail: detail)],
                                       spec: spec, reportDir: "/out", columns: 10)
        #expect(row.measures.map(\.label) == ["peak", "RMS", "true peak", "LRA", "DC", "clipped"])
        #expect(row.measures.map(\.value) == [-3.5, -20.25, -3.1, 6.4, 0.0001, 2])
        #expect(row.measures.first?.unit == "dBFS")
        // The stats tap's peak is its own measure; the row's peak column stays the metadata tap's.
        #expect(row.peak == nil)
    }

    @Test func aMetadataTapAfterItWritesItsFiguresInTheSidecar() throws {
        let context = RecordingContext(sourcePath: "/in/m.wav", relativePath: "m.wav", modified: Date(), outputRoot: dir.path)
        let stats = try StatsConfig(path: PathTemplate("{stem}.stats.json")).makeTap(paths: [dir["m.stats.json"]], context: context)
        let meta = try MetadataConfig(path: PathTemplate("{stem}.meta.json"), levels: 0).makeTap(paths: [dir["m.meta.json"]], context: context)
        let x = Signal.sine(frequency: 440, rate: Self.rate, frames: Self.rate, amplitude: 0.5)
        _ = try StageChain(elements: [.tap(stats), .tap(meta)], blockFrames: 4096).run(decoder: MemoryDecoder(x, channels: 1, rate: Self.rate))
        let data = try #require(FileManager.default.contents(atPath: dir["m.meta.json"]))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let figures = try #require((json["measures"] as? [String: Any])?["stats"] as? [String: Any], "\(json)")
        #expect(abs(((figures["peak_dbfs"] as? NSNumber)?.doubleValue ?? 0) - 20 * log10(0.5)) < 0.01, "\(figures)")
        #expect((figures["clipped"] as? NSNumber)?.intValue == 0)
    }

    @Test func optionsAreCheckedWhenTheSpecLoads() throws {
        #expect(throws: SpecError.self) { _ = try SpecLoader.parseForTests(Self.spec("stats: { path: \"{stem}.json\", clip_level: 3 }")) }
        #expect(throws: SpecError.self) { _ = try SpecLoader.parseForTests(Self.spec("stats: { clip_level: -1 }")) }
        let spec = try SpecLoader.parseForTests(Self.spec("stats: { path: \"{stem}.json\", clip_level: -0.5 }"))
        #expect(spec.stages.last?.config.canonical == "stats@v1 path={stem}.json clip_level=-0.5")
    }

    static func spec(_ stage: String) -> String {
        "version: 1\nname: s\ninput: { root: /in }\noutput: { root: /out }\nstages:\n  - \(stage)\n"
    }
}
