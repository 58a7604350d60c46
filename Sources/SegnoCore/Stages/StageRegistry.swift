import Foundation

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

    public static let parsers: [String: Parser] = [
        "mix": parseMix,
        "gain": parseGain,
        "resample": parseResample,
        "encode": parseEncode,
        "normalize": parseNormalize,
    ]

    static func parseNormalize(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
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

    static func parseMix(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        if v.isScalar { return MixConfig(target: try v.choice(MixConfig.Target.self)) }
        let o = try v.options(allowed: ["to"], required: ["to"])
        return MixConfig(target: try o["to"]!.choice(MixConfig.Target.self))
    }

    static func parseGain(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        if v.isScalar { return GainConfig(db: try v.double(in: -96...48, unit: "dB")) }
        let o = try v.options(allowed: ["db"], required: ["db"])
        return GainConfig(db: try o["db"]!.double(in: -96...48, unit: "dB"))
    }

    static func parseResample(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let range = ResampleConfig.rateRange
        if v.isScalar { return ResampleConfig(rate: try v.int(in: range, unit: "Hz")) }
        let o = try v.options(allowed: ["rate", "quality"], required: ["rate"])
        return ResampleConfig(rate: try o["rate"]!.int(in: range, unit: "Hz"),
                              quality: try o["quality"]?.choice(ResampleConfig.Quality.self) ?? .best)
    }

    static func parseEncode(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(allowed: ["path", "format", "bits", "quality"], required: ["path"])
        let template = try parseTemplate(o["path"]!)
        let format = try o["format"]?.choice(OutputFormat.self)
        if format == nil, OutputFormat(extensionOf: template.text) == nil {
            throw o["path"]!.error("cannot tell the format from \"\(template.text)\"; add format: (\(OutputFormat.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let resolved = format ?? OutputFormat(extensionOf: template.text)!
        var bits: SampleBits? = nil
        if let b = o["bits"] {
            guard let parsed = SampleBits(text: try b.string()) else { throw b.error("bits must be 8, 16, 24, 32, float or double") }
            if resolved.isLossy { throw b.error("\(resolved.rawValue) is lossy; use quality instead of bits") }
            guard resolved.allowedBits.contains(parsed) else {
                throw b.error("\(resolved.rawValue) cannot hold \(parsed.rawValue)-bit samples (allowed: \(resolved.allowedBits.map(\.rawValue).joined(separator: ", ")))")
            }
            bits = parsed
        }
        if let rates = resolved.allowedRates, let rate = c.knownRate, !rates.contains(rate) {
            throw o["path"]!.error("\(resolved.rawValue) cannot be written at \(rate) Hz (allowed: \(rates.map(String.init).joined(separator: ", ")))")
        }
        return EncodeConfig(path: template, format: format, bits: bits, quality: try o["quality"]?.double(in: 0...1))
    }

    /// Parses a path template option, locating template errors at the option.
    public static func parseTemplate(_ v: SpecValue, extraVariables: Set<String> = []) throws(SpecError) -> PathTemplate {
        let text = try v.string()
        do { return try PathTemplate(text, extraVariables: extraVariables) } catch { throw v.error(error.message) }
    }
}
