import Foundation
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
    static func conversion(for source: SourceInfo?) -> Int16Conversion {
        switch source?.sampleKind {
        case .float?: return .floatingPoint
        case .lossy?: return .lossyCodec
        default: return .integerPCM
        }
    }

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
    func parsingPictureStyle(_ value: SpecValue?) throws(SpecError) -> WaveformConfig {
        guard let value else { return self }
        var c = self
        c.pictureStyle = try value.choice(PictureStyle.self)
        if c.pictureStyle != .peaks && format != .png { throw value.error("picture: \(c.pictureStyle.rawValue) draws PNG only (format png)") }
        return c
    }
}

extension WaveformResolution {
    /// The `{zoom}` value: samples per pixel, or `100pps`, `1000pts`.
    var zoomName: String {
        switch self {
        case .samplesPerPixel(let n): return String(n)
        case .pixelsPerSecond(let n): return "\(n)pps"
        case .points(let n): return "\(n)pts"
        }
    }
}

final class WaveformTap: Tap {
    let config: WaveformConfig
    let paths: [String]
    let source: SourceInfo?
    var generator: PeakGenerator?
    var graph: SeriesGraph?
    var rate = 0

    init(config: WaveformConfig, paths: [String], source: SourceInfo?) {
        self.config = config
        self.paths = paths
        self.source = source
    }

    func start(_ format: AudioFormat) throws {
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

    func observe(_ block: AudioBlock) throws {
        if graph != nil { graph!.process(block); return }
        do { try generator?.process(block) } catch { throw StageStartError(stage: "waveform", "\(error)") }
    }

    func finish() throws -> [ProducedFile] {
        if let graph {
            self.graph = nil
            try Self.write(graph.png(), to: paths[0])
            return [ProducedFile(stage: "waveform", path: paths[0])]
        }
        guard var g = generator else { return [] }
        generator = nil
        let frames = g.framesProcessed
        let data: [WaveformData]
        do { data = try g.finish(bits: config.bits) } catch { throw StageStartError(stage: "waveform", "\(error)") }
        let seconds = rate > 0 ? Double(frames) / Double(rate) : 0
        var produced: [ProducedFile] = []
        for (d, path) in zip(data, paths) {
            var values: [String: String] = [:]
            let bytes: [UInt8]
            switch config.format {
            case .json: bytes = WaveformJSON.encode(d, duration: config.duration ? seconds : nil)
            case .dat: bytes = WaveformDat.encode(d)
            case .png: bytes = config.picture.png(d)
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
            try Self.write(bytes, to: path)
            produced.append(ProducedFile(stage: "waveform", path: path, values: values))
        }
        return produced
    }

    func abandon() { generator = nil; graph = nil }

    /// Writes small files whole through `OutputFile` (temporary name, sync, rename).
    static func write(_ bytes: [UInt8], to path: String) throws {
        try OutputFile.write(bytes, to: path)
    }
}
