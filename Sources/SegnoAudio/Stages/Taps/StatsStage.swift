import CEbur128
import Foundation
import SegnoCore
import SegnoDSP

/// `stats: { path: "{dir}/{stem}.stats.json" }` measures the stream at its place in the chain,
/// once per recording, and writes the figures as a JSON sidecar: sample peak (dBFS), RMS (dBFS,
/// over every sample of every channel), true peak (dBTP, libebur128's 4× oversampling, as
/// `TruePeakMeter` computes it), loudness range (LU, EBU Tech 3342), DC offset (the mean of every
/// sample, full scale = 1) and the count of clipped samples (magnitude at or above `clip_level`).
/// The same figures are the step's values, which the report shows (its declaration's `measures`),
/// and its offered measures, which a `metadata` tap after it writes in its sidecar
/// (`measures.stats`).
///
/// Memory is flat in the recording's length: a few accumulators and libebur128 in histogram mode
/// (fixed bins, not a list of blocks); nothing is allocated per block.
public struct StatsConfig: TapConfig {
    public let pathTemplate: PathTemplate
    /// dBFS: a sample whose magnitude reaches this level counts as clipped.
    public let clipLevel: Double
    public var name: String { "stats" }
    public var version: Int { 1 }
    public var options: [(String, String)] { [("path", pathTemplate.text), ("clip_level", canonicalNumber(clipLevel))] }

    public init(path: PathTemplate, clipLevel: Double = StatsConfig.defaultClipLevel) {
        self.pathTemplate = path
        self.clipLevel = clipLevel
    }

    public func makeTap(paths: [String], context: RecordingContext) throws -> any Tap {
        StatsTap(path: paths[0], clipAmplitude: Float(pow(10, clipLevel / 20)))
    }
}

/// The `stats` tap of one recording: accumulates while the stream passes, writes at `finish`.
final package class StatsTap: Tap {
    package let path: String
    package let clipAmplitude: Float
    package var format = AudioFormat(sampleRate: 1, channels: 1)
    /// Frames seen.
    package var frames = 0
    package var peak: Float = 0
    package var sum = 0.0
    package var sumSquares = 0.0
    package var clipped = 0
    /// Loudness range; nil when libebur128 cannot measure this format.
    package var meter: UnsafeMutablePointer<ebur128_state>?
    /// True peak, as libebur128 measures it (decision 0101); nil when `meter` is.
    package var truePeaks: TruePeakMeter?

    package init(path: String, clipAmplitude: Float) {
        self.path = path
        self.clipAmplitude = clipAmplitude
    }

    deinit { if meter != nil { ebur128_destroy(&meter) } }

    package func start(_ format: AudioFormat) throws {
        self.format = format
        let mode = EBUR128_MODE_LRA.rawValue | EBUR128_MODE_HISTOGRAM.rawValue
        meter = ebur128_init(UInt32(format.channels), UInt(format.sampleRate), Int32(mode))
        truePeaks = meter == nil ? nil : TruePeakMeter(channels: format.channels, sampleRate: format.sampleRate)
    }

    package func observe(_ block: AudioBlock) throws {
        let count = block.frames * block.channels
        var p = peak, s = 0.0, q = 0.0, c = 0
        let clip = clipAmplitude
        block.samples.withUnsafeBufferPointer { b in
            for i in 0..<count {
                let v = b[i]
                let a = abs(v)
                p = max(p, a)
                s += Double(v)
                q += Double(v) * Double(v)
                if a >= clip { c += 1 }
            }
            if let meter, block.frames > 0 {
                _ = ebur128_add_frames_float(meter, b.baseAddress, block.frames)
                truePeaks?.add(b.baseAddress!, frames: block.frames)
            }
        }
        frames += block.frames
        peak = p
        sum += s
        sumSquares += q
        clipped += c
    }

    /// The figures as the step's values (strings, fixed decimals); a level of silence is left out.
    package var values: [String: String] {
        let n = Double(frames * format.channels)
        var v = ["clipped": String(clipped)]
        if n > 0 { v["dc_offset"] = String(format: "%.6f", sum / n) }
        if peak > 0 { v["peak_dbfs"] = String(format: "%.2f", 20 * log10(Double(peak))) }
        if sumSquares > 0 { v["rms_dbfs"] = String(format: "%.2f", 10 * log10(sumSquares / n)) }
        if let meter {
            let truePeak = truePeaks?.truePeak ?? 0
            if truePeak > 0 { v["true_peak_dbtp"] = String(format: "%.2f", 20 * log10(truePeak)) }
            var range = 0.0
            if ebur128_loudness_range(meter, &range) == 0, range.isFinite { v["loudness_range_lu"] = String(format: "%.2f", range) }
        }
        return v
    }

    package func finish() throws -> [ProducedFile] {
        let values = self.values
        func number(_ key: String) -> JSONValue { values[key].flatMap(Double.init).map { JSONValue.rounded($0, places: 6) } ?? .null }
        let fields: [(String, JSONValue)] = [
            ("frames", .int(frames)), ("sample_rate", .int(format.sampleRate)), ("channels", .int(format.channels)),
            ("peak_dbfs", number("peak_dbfs")), ("rms_dbfs", number("rms_dbfs")), ("true_peak_dbtp", number("true_peak_dbtp")),
            ("loudness_range_lu", number("loudness_range_lu")), ("dc_offset", number("dc_offset")), ("clipped", .int(clipped)),
        ]
        try WaveformTap.write(Array((JSONValue.object(fields).serialized() + "\n").utf8), to: path, standardOutput: nil)
        var file = ProducedFile(stage: "stats", path: path, values: values)
        file.measures = values  // a metadata tap after this one writes them in its sidecar
        return [file]
    }

    package func abandon() {}
}

extension StatsConfig {
    /// The spec's options for this stage: every check, before any audio flows (SoX's getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(declaredBy: declaration)
        return StatsConfig(path: try StageRegistry.parseTemplate(o["path"]!),
                           clipLevel: try o["clip_level"]?.double(in: clipLevelRange, unit: "dBFS") ?? defaultClipLevel)
    }

    /// Where `clip_level` may lie (dBFS).
    public static let clipLevelRange = -20.0...0.0
    /// −0.01 dBFS: full scale of a 16-bit or deeper source counts as clipped.
    public static let defaultClipLevel = -0.01

    public static let declaration = StageDeclaration(
        key: "stats", kind: .tap,
        summary: "Measures the stream here: sample peak, RMS, true peak, loudness range, DC offset, clipped samples (a JSON sidecar; shown in the report).",
        options: [
            .init("path", .pathTemplate, default: nil, help: "Where the JSON goes: \"{dir}/{stem}.stats.json\"."),
            .init("clip_level", .number, unit: "dBFS", default: canonicalNumber(defaultClipLevel), .within(clipLevelRange),
                  help: "A sample whose magnitude reaches this level counts as clipped."),
        ],
        example: "stats: { path: \"{dir}/{stem}.stats.json\" }", capabilities: [.writesSidecars, .reportsMeasures],
        measures: [
            .init("peak_dbfs", "peak", unit: "dBFS"), .init("rms_dbfs", "RMS", unit: "dBFS"),
            .init("true_peak_dbtp", "true peak", unit: "dBTP"), .init("loudness_range_lu", "LRA", unit: "LU"),
            .init("dc_offset", "DC"), .init("clipped", "clipped", unit: "samples"),
        ])
}
