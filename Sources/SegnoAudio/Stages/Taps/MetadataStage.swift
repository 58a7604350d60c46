import CEbur128
import Foundation
import SegnoCore
import SegnoDSP
import SegnoWaveform

/// `metadata: { path: "{dir}/{stem}.meta.json", levels: 100 }` writes a JSON sidecar about the
/// stream at its place in the chain: the source's name, title and modification time, the
/// source's format, and of the stream here its duration, frames, rate, channels, sample peak and
/// RMS (dBFS), and `levels` amplitudes in [0, 1] (peak per equal stretch; 0 for none) with their
/// compact base64 form — what the recorder apps kept in their cloud metadata.
public struct MetadataConfig: TapConfig {
    public let pathTemplate: PathTemplate
    public let levels: Int
    public var name: String { "metadata" }
    public var version: Int { 1 }
    public var options: [(String, String)] { [("path", pathTemplate.text), ("levels", String(levels))] }
    public init(path: PathTemplate, levels: Int = WaveformLevels.defaultCount) {
        self.pathTemplate = path
        self.levels = levels
    }
    public func makeTap(paths: [String], context: RecordingContext) throws -> any Tap {
        MetadataTap(path: paths[0], levels: levels, context: context)
    }
}

final package class MetadataTap: GatheringTap {
    package let path: String
    package let levels: Int
    package let context: RecordingContext
    package var format = AudioFormat(sampleRate: 1, channels: 1)
    package var frames = 0
    package var peak: Float = 0
    package var sumSquares = 0.0
    package var peaks: PeakGenerator?
    /// Per channel minimum, maximum and sum of squares: kept for sensor series (`axes`).
    package var axisMin: [Double] = []
    package var axisMax: [Double] = []
    package var axisSquares: [Double] = []
    package var isSeries: Bool { context.source?.codec == "sensor series" }
    /// EBU R128 integrated loudness and true peak, for the sidecar and the state's values (the
    /// report); nil when libebur128 cannot measure this format.
    package var meter: UnsafeMutablePointer<ebur128_state>?
    /// The true peak beside `meter` (libebur128's, decision 0101); nil when `meter` is.
    private var truePeaks: TruePeakMeter?
    /// What salvage recovered of a damaged source (`damaged: salvage`), in the source's rate.
    package var salvaged: (report: SalvageReport, sampleRate: Int)?
    /// The figures of measuring taps before this one (`GatheringTap`), for the sidecar's `measures`.
    package var gathered: [(stage: String, values: [String: String])] = []

    package init(path: String, levels: Int, context: RecordingContext) {
        self.path = path
        self.levels = levels
        self.context = context
    }

    deinit { if meter != nil { ebur128_destroy(&meter) } }

    package func start(_ format: AudioFormat) throws {
        self.format = format
        axisMin = Array(repeating: .infinity, count: format.channels)
        axisMax = Array(repeating: -.infinity, count: format.channels)
        axisSquares = Array(repeating: 0, count: format.channels)
        meter = ebur128_init(UInt32(format.channels), UInt(format.sampleRate), Int32(EBUR128_MODE_I.rawValue))
        truePeaks = meter == nil ? nil : TruePeakMeter(channels: format.channels, sampleRate: format.sampleRate)
        if levels > 0 {
            let expected = context.source.map { s in s.sampleRate == format.sampleRate ? s.frames : Int(Double(s.frames) * Double(format.sampleRate) / Double(s.sampleRate)) }
            // Ten points per level keeps every level the peak of whole stretches of audio.
            do {
                peaks = try PeakGenerator(format: format, resolutions: [.points(max(1, levels * 10))], channels: .mix,
                                          conversion: .lossyCodec, expectedFrames: max(2, expected ?? format.sampleRate * 60))
            } catch { throw StageStartError(stage: "metadata", "\(error)") }
        }
    }

    package func observe(_ block: AudioBlock) throws {
        frames += block.frames
        var p = peak
        var s = 0.0
        block.samples.withUnsafeBufferPointer { b in
            var acc: Float = 0
            for i in 0..<(block.frames * block.channels) {
                let v = b[i]
                p = max(p, abs(v))
                acc += v * v
            }
            s = Double(acc)
        }
        peak = p
        sumSquares += s
        if isSeries {
            let ch = block.channels
            for f in 0..<block.frames {
                for c in 0..<ch {
                    let v = Double(block.samples[f * ch + c])
                    axisMin[c] = min(axisMin[c], v)
                    axisMax[c] = max(axisMax[c], v)
                    axisSquares[c] += v * v
                }
            }
        }
        if let meter {
            _ = block.samples.withUnsafeBufferPointer { ebur128_add_frames_float(meter, $0.baseAddress, block.frames) }
            truePeaks?.add(block)
        }
        try? peaks?.process(block)
    }

    package func finish() throws -> [ProducedFile] {
        let seconds = Double(frames) / Double(format.sampleRate)
        func db(_ x: Double) -> JSONValue { x > 0 ? JSONValue.rounded(20 * log10(x), places: 2) : .null }
        let rms = frames > 0 ? (sumSquares / Double(frames * format.channels)).squareRoot() : 0
        var levelValues: [Float] = []
        var encoded = ""
        if var g = peaks, let data = try? g.finish(bits: 16).first, let l = try? WaveformLevels(data, count: levels) {
            levelValues = l.values
            encoded = l.encoded
        }
        let iso = ISO8601DateFormatter()
        var fields: [(String, JSONValue)] = [
            ("source", .string(context.relativePath)), ("name", .string(context.name)),
            ("title", .string(context.title)), ("recorded", .string(context.recorded)),
            ("modified", .string(iso.string(from: context.modified))),
            ("duration", JSONValue.rounded(seconds, places: 3)), ("frames", .int(frames)),
            ("sample_rate", .int(format.sampleRate)), ("channels", .int(format.channels)),
            ("peak_dbfs", db(Double(peak))), ("rms_dbfs", db(rms)),
        ]
        // Measured here, on the stream at the tap's place (after normalize, if it comes first).
        var lufs = -Double.infinity
        var truePeak = 0.0
        if let meter {
            if ebur128_loudness_global(meter, &lufs) != 0 { lufs = -.infinity }
            truePeak = truePeaks?.truePeak ?? 0
        }
        let hasLoudness = lufs.isFinite && lufs > -70
        if !isSeries {
            fields.append(("loudness_lufs", hasLoudness ? JSONValue.rounded(lufs, places: 2) : .null))
            fields.append(("true_peak_dbtp", db(truePeak)))
        }
        if let s = context.source {
            fields.append(("source_format", .object([
                ("container", .string(s.container)), ("codec", .string(s.codec)), ("sample_rate", .int(s.sampleRate)),
                ("channels", .int(s.channels)), ("frames", .int(s.frames)), ("duration", JSONValue.rounded(s.duration, places: 3)),
            ])))
        }
        // What the source carries besides audio: its tags (normalised names), pictures described, bext.
        let carried = context.metadata
        if !carried.tags.isEmpty {
            fields.append(("tags", .object(carried.flattened.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })))
        }
        fields += FileInfo.metadataFields(carried).filter { $0.0 == "pictures" || $0.0 == "bext" }
        if isSeries {
            // A sensor series: its values are not audio; min, max and RMS per axis in the sensor's units.
            let names = (context.source?.tags?["channels"] ?? "").split(separator: ",").map(String.init)
            fields.append(("axes", .array((0..<format.channels).map { c in
                .object([
                    ("name", .string(c < names.count && format.channels == names.count ? names[c] : "channel \(c + 1)")),
                    ("min", frames > 0 ? JSONValue.rounded(axisMin[c], places: 6) : .null),
                    ("max", frames > 0 ? JSONValue.rounded(axisMax[c], places: 6) : .null),
                    ("rms", frames > 0 ? JSONValue.rounded((axisSquares[c] / Double(frames)).squareRoot(), places: 6) : .null),
                ])
            })))
            if let gaps = context.source?.tags?["gaps"] { fields.append(("gaps", .string(gaps))) }
        }
        if let salvaged {
            // `salvaged: { frames_lost, at, frames, method, causes }`: the recording was processed
            // from what salvage recovered; frames in the source's rate, `at` in seconds.
            fields.append(("salvaged", salvaged.report.json(sampleRate: salvaged.sampleRate)))
        }
        if levels > 0 {
            fields.append(("levels", .array(levelValues.map { JSONValue.rounded(Double($0), places: 4) })))
            fields.append(("levels_encoded", .string(encoded)))
        }
        if !gathered.isEmpty {
            // `measures: { KIND: { name: number… } }`: what the measuring taps before this one found.
            fields.append(("measures", .object(gathered.map { g in
                (g.stage, .object(g.values.sorted { $0.key < $1.key }.map { k, v in (k, Double(v).map { JSONValue.rounded($0, places: 6) } ?? .string(v)) }))
            })))
        }
        try WaveformTap.write(Array((JSONValue.object(fields).serialized() + "\n").utf8), to: path, standardOutput: nil)
        // What the report shows per recording, kept in the state (not in the sidecar's bytes).
        var values = ["duration": String(format: "%.3f", seconds), "levels": encoded, "title": context.title, "recorded": context.recorded]
        if peak > 0 { values["peak_dbfs"] = String(format: "%.2f", 20 * log10(Double(peak))) }
        if rms > 0 { values["rms_dbfs"] = String(format: "%.2f", 20 * log10(rms)) }
        if hasLoudness { values["loudness_lufs"] = String(format: "%.2f", lufs) }
        if truePeak > 0 { values["true_peak_dbtp"] = String(format: "%.2f", 20 * log10(truePeak)) }
        if let salvaged { values["salvaged_frames_lost"] = String(salvaged.report.framesLost) }
        return [ProducedFile(stage: "metadata", path: path, values: values)]
    }

    package func abandon() {}

    package func sourceSalvaged(_ report: SalvageReport, sampleRate: Int) { salvaged = (report, sampleRate) }

    package func gather(_ measures: [(stage: String, values: [String: String])]) { gathered = measures }
}

extension MetadataConfig {
    /// The spec\'s options for this stage: every check, before any audio flows (SoX\'s getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(declaredBy: declaration)
        return MetadataConfig(path: try StageRegistry.parseTemplate(o["path"]!), levels: try o["levels"]?.int(in: levelsRange) ?? WaveformLevels.defaultCount)
    }
}

extension MetadataConfig {
    /// How many levels the sidecar may carry (0: none).
    public static let levelsRange = 0...WaveformConfig.levelsRange.upperBound

    public static let declaration = StageDeclaration(
        key: "metadata", kind: .tap,
        summary: "Writes a JSON sidecar about the stream here: source, duration, rate, channels, peak, RMS, loudness, true peak, levels.",
        options: [
            .init("path", .pathTemplate, default: nil, help: "Where the JSON goes: \"{dir}/{stem}.meta.json\"."),
            .init("levels", .wholeNumber, default: String(WaveformLevels.defaultCount), .within(levelsRange),
                  help: "Amplitudes in [0, 1] (peak per equal stretch) with their base64 form; 0 for none."),
        ],
        example: "metadata: { path: \"{dir}/{stem}.meta.json\", levels: 100 }", capabilities: [.writesSidecars, .describesRecording, .gathersMeasures])
}
