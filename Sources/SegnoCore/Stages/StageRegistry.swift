import Foundation
import SegnoDSP
import SegnoS3
import SegnoWaveform

/// What the loader knows at a stage's place in the list, for checks that depend on upstream
/// stages (a lowpass after `resample: 16000` must stay below 8 kHz).
public struct StageParseContext: Sendable {
    /// The sample rate at this point when an upstream resample fixed it, else nil (known only per recording).
    public var knownRate: Int?
    /// Names of taps so far.
    public var taps: [String] = []

    public init(knownRate: Int? = nil) { self.knownRate = knownRate }

    mutating func note(_ config: any StageConfig, at value: SpecValue) {
        if let r = config as? ResampleConfig { knownRate = r.rate }
        if config.kind == .tap { taps.append(config.name) }
    }
}

/// Spec key → option parser, one entry per stage. Each parser checks every option and throws a
/// located `SpecError`; this is `segno validate`'s whole job.
public enum StageRegistry {
    public typealias Parser = @Sendable (SpecValue, StageParseContext) throws(SpecError) -> any StageConfig

    /// The stage kinds that write files (taps): what `files:` of an upload and `--force=KIND` name.
    public static let tapKinds: Set<String> = ["encode", "waveform", "metadata", "fingerprint"]

    public static let parsers: [String: Parser] = [
        "mix": MixConfig.parse,
        "gain": GainConfig.parse,
        "resample": ResampleConfig.parse,
        "encode": EncodeConfig.parse,
        "normalize": NormalizeConfig.parse,
        "waveform": parseWaveform,
        "lowpass": { v, c throws(SpecError) in try FilterConfig.parse(.lowpass, v, c) },
        "highpass": { v, c throws(SpecError) in try FilterConfig.parse(.highpass, v, c) },
        "bandpass": { v, c throws(SpecError) in try FilterConfig.parse(.bandpass, v, c) },
        "bandstop": { v, c throws(SpecError) in try FilterConfig.parse(.bandstop, v, c) },
        "eq": EQConfig.parse,
        "metadata": MetadataConfig.parse,
        "upload": UploadConfig.parse,
        "pitch": PitchConfig.parse,
        "fingerprint": FingerprintConfig.parse,
    ]

    static func parseWaveform(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(allowed: ["path", "format", "bits", "samples_per_pixel", "pixels_per_second", "points", "zooms",
                                        "channels", "duration", "levels", "width", "height", "color", "background", "picture"],
                              required: ["path"])
        let template = try parseTemplate(o["path"]!, extraVariables: ["zoom"])
        var format = try o["format"]?.choice(WaveformConfig.Format.self)
        if format == nil { format = WaveformConfig.format(forPath: template.text) }
        guard let format else { throw o["path"]!.error("cannot tell the format from \"\(template.text)\"; add format: (json, dat, png, svg, levels)") }
        let bits = try o["bits"]?.int() ?? 8
        guard bits == 8 || bits == 16 else { throw o["bits"]!.error("bits must be 8 or 16") }
        let given = ["samples_per_pixel", "pixels_per_second", "points", "zooms"].filter { o[$0] != nil }
        if given.count > 1 { throw o[given[1]]!.error("give only one of samples_per_pixel, pixels_per_second, points, zooms") }
        var resolutions: [WaveformResolution] = [.samplesPerPixel(256)]
        if let x = o["samples_per_pixel"] { resolutions = [.samplesPerPixel(try x.int(in: 2...(1 << 24)))] }
        if let x = o["pixels_per_second"] {
            let pps = try x.int(in: 1...192_000)
            if let rate = c.knownRate, rate / pps < 2 { throw x.error("\(pps) pixels per second at \(rate) Hz leaves fewer than 2 samples per pixel") }
            resolutions = [.pixelsPerSecond(pps)]
        }
        if let x = o["points"] { resolutions = [.points(try x.int(in: 1...10_000_000))] }
        if let x = o["zooms"] {
            var zs: [WaveformResolution] = []
            for item in try x.list() { zs.append(.samplesPerPixel(try item.int(in: 2...(1 << 24)))) }
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
            let width = try o["width"]?.int(in: 1...16384) ?? 1000
            let height = try o["height"]?.int(in: 1...4096) ?? 200
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

    /// Parses a path template option, locating template errors at the option.
    public static func parseTemplate(_ v: SpecValue, extraVariables: Set<String> = []) throws(SpecError) -> PathTemplate {
        let text = try v.string()
        do { return try PathTemplate(text, extraVariables: extraVariables) } catch { throw v.error(error.message) }
    }
}
