import Foundation
import SegnoCore
import SegnoDSP
import SegnoWaveform

/// `waveform: { path: "{dir}/{stem}.json", pixels_per_second: 100, bits: 8 }` writes
/// audiowaveform-compatible peak data (JSON or binary `.dat`, byte for byte what audiowaveform
/// 1.10.3 writes for the same audio), a PNG or SVG picture, or `levels` (N amplitudes in [0,1]).
///
/// Options: `path` (template; `{zoom}` names each file when several `zooms` are given),
/// `format` json|dat|png|svg|levels (from the extension, `.json` → json), `bits` 8|16 (8, what
/// peaks.js expects), exactly one of `samples_per_pixel` (≥ 2) / `pixels_per_second` /
/// `points` (default `samples_per_pixel: 256`), `zooms: [256, 512, …]` (samples per pixel, one
/// file per zoom, all in one pass), `channels` mix|split (mix), `duration` (adds `"duration"` to
/// JSON; off), `levels` (count for `format: levels`, 100), `width`/`height`/`color`/`background`
/// for pictures (1000 × 200, #336EC4 on white).
public struct WaveformConfig: TapConfig {
    public enum Format: String, Sendable, CaseIterable { case json, dat, png, svg, levels }
    /// How many values `format: levels` (and `--levels`) may ask for.
    public static let levelsRange = 1...1400
    /// What a PNG shows (`picture:`): audio-style peaks, a line graph per channel with axes and
    /// labels (for sensor series), or `auto`: a graph for a sensor series, peaks for audio.
    public enum PictureStyle: String, Sendable, CaseIterable { case peaks, graph, auto }
    public let pathTemplate: PathTemplate
    public let format: Format
    public let bits: Int
    public let resolutions: [WaveformResolution]
    public let split: Bool
    public let duration: Bool
    public let levels: Int
    public let picture: WaveformPicture
    public var pictureStyle: PictureStyle = .peaks
    /// audiowaveform's `--amplitude-scale` for `.dat`/`.json` output: values scaled at 16 bits
    /// (clamped, truncated toward zero) before any 8-bit conversion. Nil leaves them. Set by
    /// `segno waveform` only (pictures scale through `picture`).
    public var amplitude: AmplitudeScale?
    /// audiowaveform's PNG layout (`segno waveform` with `-z`, `--pixels-per-second`, `-s`, `-e`
    /// or `--with-axis-labels`): the picture starts at this many seconds, one point per column.
    /// Nil fits the whole data to the width.
    public var pictureStart: Double?
    /// Where the path `-` goes (`segno waveform -o -`); nil refuses `-`. Given by the caller, not
    /// an option, so not in the recipe.
    public var standardOutput: StandardOutputSink?

    /// A vertical zoom: audiowaveform's `auto` (`WaveformData.autoAmplitudeScale`) or a factor.
    public enum AmplitudeScale: Sendable, Hashable {
        case auto
        case factor(Double)
    }
    public var name: String { "waveform" }
    public var version: Int { 1 }
    public var options: [(String, String)] {
        var o: [(String, String)] = [("path", pathTemplate.text), ("format", format.rawValue), ("bits", String(bits)),
                                     ("resolution", resolutions.map(\.description).joined(separator: ",")),
                                     ("channels", split ? "split" : "mix")]
        if duration { o.append(("duration", "true")) }
        if format == .levels { o.append(("levels", String(levels))) }
        if format == .png || format == .svg {
            o.append(("picture", "\(picture.width)x\(picture.height) \(picture.waveform) on \(picture.background)"))
        }
        // Only when not the default, so existing fingerprints stay as they were.
        if pictureStyle != .peaks { o.append(("style", pictureStyle.rawValue)) }
        return o
    }

    public init(path: PathTemplate, format: Format, bits: Int, resolutions: [WaveformResolution], split: Bool,
                duration: Bool = false, levels: Int = WaveformLevels.defaultCount, picture: WaveformPicture) {
        self.pathTemplate = path
        self.format = format
        self.bits = bits
        self.resolutions = resolutions
        self.split = split
        self.duration = duration
        self.levels = levels
        self.picture = picture
    }

    /// The format a path's extension implies (`.json`, `.dat`, `.png`, `.svg`).
    public static func format(forPath path: String) -> Format? {
        switch (path as NSString).pathExtension.lowercased() {
        case "json": return .json
        case "dat": return .dat
        case "png": return .png
        case "svg": return .svg
        default: return nil
        }
    }

    /// How floats map back to int16, from the source's sample kind (audiowaveform's decode).
    /// μ-law, A-law, ADPCM and GSM are lossy, but libsndfile decodes them to int16 and reads them
    /// as float by dividing by 32768, so `.integerPCM` recovers those int16 values exactly.
    static package func conversion(for source: SourceInfo?) -> Int16Conversion {
        if let codec = source?.codec, int16Codecs.contains(codec) { return .integerPCM }
        switch source?.sampleKind {
        case .float?: return .floatingPoint
        case .lossy?: return .lossyCodec
        default: return .integerPCM
        }
    }

    /// Bits the peaks are finished at: 16 when `amplitude` must scale them before they become 8-bit.
    package var generatorBits: Int { amplitude != nil && (format == .json || format == .dat) ? 16 : bits }

    /// `data` (16-bit when `amplitude` is set) scaled by `amplitude` and brought to `bits`: what
    /// a `.dat`/`.json` output holds. Called once per output file.
    package func finalData(_ data: WaveformData) throws(WaveformError) -> WaveformData {
        var d = data
        switch amplitude {
        case .auto?: d = try d.converted(toBits: 16); d = d.amplitudeScaled(by: d.autoAmplitudeScale())
        case .factor(let f)?: d = try d.converted(toBits: 16).amplitudeScaled(by: f)
        case nil: break
        }
        return try d.converted(toBits: bits)
    }

    /// The PNG of `data`: fitted to the width, or from `pictureStart` one point per column
    /// (audiowaveform's first column is point ⌊start × rate / spp⌋).
    package func png(_ data: WaveformData) -> [UInt8] {
        var p = picture
        if let start = pictureStart {
            p.window = Int(start * Double(data.sampleRate) / Double(data.samplesPerPixel))
            p.axisLabels?.startSeconds = start
        }
        return p.png(data)
    }

    /// Lossy codecs (`SourceInfo.codec` as `SndFileDecoder` names them) that libsndfile decodes to int16.
    static package let int16Codecs: Set<String> = ["ULAW", "ALAW", "IMA_ADPCM", "MS_ADPCM", "GSM610"]

    public func resolvePaths(_ context: RecordingContext) throws(TemplateError) -> [String] {
        guard pathTemplate.uses("zoom") else { return [try pathTemplate.resolve(context)] }
        var paths: [String] = []
        for r in resolutions {
            var c = context
            c.extra["zoom"] = r.zoomName
            paths.append(try pathTemplate.resolve(c))
        }
        return paths
    }

    public func makeTap(paths: [String], context: RecordingContext) throws -> any Tap {
        WaveformTap(config: self, paths: paths, source: context.source)
    }

    /// Reads `picture: peaks|graph|auto` (PNG only) into a copy of `self`. Called by the registry's parser.
    package func parsingPictureStyle(_ value: SpecValue?) throws(SpecError) -> WaveformConfig {
        guard let value else { return self }
        var c = self
        c.pictureStyle = try value.choice(PictureStyle.self)
        if c.pictureStyle != .peaks && format != .png { throw value.error("picture: \(c.pictureStyle.rawValue) draws PNG only (format png)") }
        return c
    }
}

extension WaveformResolution {
    /// The `{zoom}` value: samples per pixel, or `100pps`, `1000pts`.
    package var zoomName: String {
        switch self {
        case .samplesPerPixel(let n): return String(n)
        case .pixelsPerSecond(let n): return "\(n)pps"
        case .points(let n): return "\(n)pts"
        case .span(let seconds, let width): return seconds.map { "\($0)s\(width)w" } ?? "\(width)w"
        }
    }
}

final package class WaveformTap: Int16Tap {
    package let config: WaveformConfig
    package let paths: [String]
    package let source: SourceInfo?
    package var generator: PeakGenerator?
    package var graph: SeriesGraph?
    package var rate = 0

    package init(config: WaveformConfig, paths: [String], source: SourceInfo?) {
        self.config = config
        self.paths = paths
        self.source = source
    }

    package func start(_ format: AudioFormat) throws {
        rate = format.sampleRate
        let series = source?.codec == "sensor series"
        if config.format == .png, config.pictureStyle == .graph || (config.pictureStyle == .auto && series) {
            let frames = source.map { s in s.sampleRate == format.sampleRate ? s.frames : Int(Double(s.frames) * Double(format.sampleRate) / Double(s.sampleRate)) }
            let names = format.channels == source?.channels ? (source?.tags?["channels"] ?? "").split(separator: ",").map(String.init) : []
            graph = SeriesGraph(width: config.picture.width, height: config.picture.height, channels: format.channels,
                                expectedFrames: frames ?? format.sampleRate * 60, rate: format.sampleRate, names: names,
                                background: config.picture.background)
            return
        }
        // The frame count at this point of the chain, scaled from the source when a resample precedes.
        let expected = source.map { s in s.sampleRate == format.sampleRate ? s.frames : Int((Double(s.frames) * Double(format.sampleRate) / Double(s.sampleRate)).rounded()) }
        do {
            generator = try PeakGenerator(format: format, resolutions: config.resolutions,
                                          channels: config.split ? .split : .mix,
                                          conversion: WaveformConfig.conversion(for: source), expectedFrames: expected)
        } catch {
            throw StageStartError(stage: "waveform", "\(error)")
        }
    }

    package func observe(_ block: AudioBlock) throws {
        if graph != nil { graph!.process(block); return }
        do { try generator?.process(block) } catch { throw StageStartError(stage: "waveform", "\(error)") }
    }

    /// Peaks want int16; a graph picture wants floats.
    package var acceptsInt16: Bool { generator != nil }

    package func observe(int16 samples: UnsafeBufferPointer<Int16>, frames: Int) throws {
        generator!.process(int16: samples, frames: frames)
    }

    package func finish() throws -> [ProducedFile] {
        if let graph {
            self.graph = nil
            try Self.write(graph.png(), to: paths[0], standardOutput: config.standardOutput)
            return [ProducedFile(stage: "waveform", path: paths[0])]
        }
        guard var g = generator else { return [] }
        generator = nil
        let frames = g.framesProcessed
        let data: [WaveformData]
        do { data = try g.finish(bits: config.generatorBits) } catch { throw StageStartError(stage: "waveform", "\(error)") }
        let seconds = rate > 0 ? Double(frames) / Double(rate) : 0
        var produced: [ProducedFile] = []
        for (d, path) in zip(data, paths) {
            var values: [String: String] = [:]
            let bytes: [UInt8]
            switch config.format {
            case .json, .dat:
                let final: WaveformData
                do { final = try config.finalData(d) } catch { throw StageStartError(stage: "waveform", "\(error)") }
                bytes = config.format == .dat ? WaveformDat.encode(final)
                    : WaveformJSON.encode(final, duration: config.duration ? seconds : nil)
            case .png: bytes = config.png(d)
            case .svg: bytes = Array(config.picture.svg(d).utf8)
            case .levels:
                let l: WaveformLevels
                do { l = try WaveformLevels(d, count: config.levels) } catch { throw StageStartError(stage: "waveform", "\(error)") }
                values["levels"] = l.encoded
                let json = JSONValue.object([
                    ("count", .int(l.values.count)),
                    ("levels", .array(l.values.map { JSONValue.rounded(Double($0), places: 4) })),
                    ("encoded", .string(l.encoded)),
                    ("duration", JSONValue.rounded(seconds, places: 3)),
                ])
                bytes = Array((json.serialized() + "\n").utf8)
            }
            try Self.write(bytes, to: path, standardOutput: config.standardOutput)
            produced.append(ProducedFile(stage: "waveform", path: path, values: values))
        }
        return produced
    }

    package func abandon() { generator = nil; graph = nil }

    /// Writes small files whole through `OutputFile` (temporary name, sync, rename); `-` goes to
    /// `standardOutput` (`segno waveform -o -`), and is refused without one.
    static package func write(_ bytes: [UInt8], to path: String, standardOutput: StandardOutputSink?) throws {
        if path == "-" {
            guard let standardOutput else {
                throw AudioError.unsupportedOutput(path: path, detail: "standard output is not an output here; name a file")
            }
            try standardOutput.write(Data(bytes))
            return
        }
        try OutputFile.write(bytes, to: path)
    }
}

extension WaveformConfig {
    /// `waveform:` in a spec: every option check, before any audio flows (SoX's getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(declaredBy: declaration)
        let template = try StageRegistry.parseTemplate(o["path"]!, extraVariables: ["zoom"])
        var format = try o["format"]?.choice(WaveformConfig.Format.self)
        if format == nil { format = WaveformConfig.format(forPath: template.text) }
        guard let format else { throw o["path"]!.error("cannot tell the format from \"\(template.text)\"; add format: (json, dat, png, svg, levels)") }
        let bits = try o["bits"]?.int() ?? WaveformConfig.standardBits
        guard WaveformConfig.bitsChoices.contains(bits) else { throw o["bits"]!.error("bits must be 8 or 16") }
        let given = ["samples_per_pixel", "pixels_per_second", "points", "zooms"].filter { o[$0] != nil }
        if given.count > 1 { throw o[given[1]]!.error("give only one of samples_per_pixel, pixels_per_second, points, zooms") }
        var resolutions: [WaveformResolution] = [.samplesPerPixel(WaveformConfig.standardSamplesPerPixel)]
        if let x = o["samples_per_pixel"] { resolutions = [.samplesPerPixel(try x.int(in: WaveformConfig.samplesPerPixelRange))] }
        if let x = o["pixels_per_second"] {
            let pps = try x.int(in: WaveformConfig.pixelsPerSecondRange)
            if let rate = c.knownRate, rate / pps < 2 { throw x.error("\(pps) pixels per second at \(rate) Hz leaves fewer than 2 samples per pixel") }
            resolutions = [.pixelsPerSecond(pps)]
        }
        if let x = o["points"] { resolutions = [.points(try x.int(in: WaveformConfig.pointsRange))] }
        if let x = o["zooms"] {
            var zs: [WaveformResolution] = []
            for item in try x.list() { zs.append(.samplesPerPixel(try item.int(in: WaveformConfig.samplesPerPixelRange))) }
            if zs.isEmpty { throw x.error("give at least one zoom") }
            if Set(zs).count != zs.count { throw x.error("zooms repeat") }
            if zs.count > 1 && !template.uses("zoom") { throw o["path"]!.error("several zooms need {zoom} in the path") }
            resolutions = zs
        }
        if resolutions.count == 1 && template.uses("zoom") && o["zooms"] == nil {
            throw o["path"]!.error("{zoom} is only set with zooms: [...]")
        }
        let split: Bool
        switch try o["channels"]?.string() ?? "mix" {
        case "mix": split = false
        case "split": split = true
        case let other: throw o["channels"]!.error("\"\(other)\" is not one of mix, split")
        }
        var picture = try! WaveformPicture()
        if format == .png || format == .svg || o["width"] != nil || o["height"] != nil {
            let width = try o["width"]?.int(in: WaveformConfig.widthRange) ?? WaveformPicture.standardWidth
            let height = try o["height"]?.int(in: WaveformConfig.heightRange) ?? WaveformPicture.standardHeight
            func color(_ key: String, _ def: RGBAColor) throws(SpecError) -> RGBAColor {
                guard let x = o[key] else { return def }
                do { return try RGBAColor(hex: try x.string()) } catch let e as SpecError { throw e } catch { throw x.error("\(error)") }
            }
            do {
                picture = try WaveformPicture(width: width, height: height, background: try color("background", .white),
                                              waveform: try color("color", WaveformPicture.defaultWaveform))
            } catch let e as SpecError { throw e } catch { throw v.error("\(error)") }
        }
        return try WaveformConfig(path: template, format: format, bits: bits, resolutions: resolutions, split: split,
                              duration: try o["duration"]?.bool() ?? false,
                              levels: try o["levels"]?.int(in: WaveformConfig.levelsRange) ?? WaveformLevels.defaultCount, picture: picture).parsingPictureStyle(o["picture"])
    }
}

extension WaveformConfig {
    /// The sample depths of `.dat`/`.json` peaks; 8 is what peaks.js expects.
    public static let bitsChoices = [8, 16]
    public static let standardBits = 8
    public static let samplesPerPixelRange = 2...(1 << 24)
    public static let standardSamplesPerPixel = 256
    public static let pixelsPerSecondRange = 1...192_000
    public static let pointsRange = 1...10_000_000
    /// A picture's size in pixels.
    public static let widthRange = 1...16384
    public static let heightRange = 1...4096

    public static let declaration = StageDeclaration(
        key: "waveform", kind: .tap,
        summary: "Writes audiowaveform-compatible peak data (JSON or .dat), a PNG or SVG picture, or N levels.",
        options: [
            .init("path", .pathTemplate, default: nil, help: "Where the file goes; {zoom} names each file when several zooms are given."),
            .init("format", .choice, default: "from the path's extension", .oneOf(Format.self), help: "Peaks (json, dat), a picture (png, svg) or levels."),
            .init("bits", .choice, default: String(standardBits), .choices(bitsChoices.map(String.init)),
                  help: "Peak resolution (audiowaveform's own default is 16)."),
            .init("samples_per_pixel", .wholeNumber, default: String(standardSamplesPerPixel), .within(samplesPerPixelRange),
                  help: "Samples per peak; give one of samples_per_pixel, pixels_per_second, points, zooms."),
            .init("pixels_per_second", .wholeNumber, default: "none", .within(pixelsPerSecondRange), help: "Peaks per second of audio."),
            .init("points", .wholeNumber, default: "none", .within(pointsRange), help: "About this many peaks over the file."),
            .init("zooms", .list, default: "none", .within(samplesPerPixelRange),
                  help: "Samples per pixel of each of several files, written in one pass (needs {zoom} in the path)."),
            .init("channels", .choice, default: "mix", .choices(["mix", "split"]), help: "One waveform of all channels, or one per channel."),
            .init("duration", .boolean, default: "false", help: "Adds \"duration\" to JSON output."),
            .init("levels", .wholeNumber, default: String(WaveformLevels.defaultCount), .within(levelsRange), help: "How many levels format levels writes."),
            .init("width", .wholeNumber, unit: "px", default: String(WaveformPicture.standardWidth), .within(widthRange), help: "Picture width."),
            .init("height", .wholeNumber, unit: "px", default: String(WaveformPicture.standardHeight), .within(heightRange), help: "Picture height."),
            .init("color", .text, default: "\(WaveformPicture.defaultWaveform)", help: "Waveform colour of a picture, as hex (#336EC4)."),
            .init("background", .text, default: "\(RGBAColor.white)", help: "Background colour of a picture, as hex."),
            .init("picture", .choice, default: PictureStyle.peaks.rawValue, .oneOf(PictureStyle.self),
                  help: "What a PNG shows: peaks, a graph per channel (sensor series), or auto."),
        ],
        example: "waveform: { path: \"{dir}/{stem}.json\", pixels_per_second: 100, bits: 8 }", capabilities: [.writesSidecars, .drawnInReport])
}
