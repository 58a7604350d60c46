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
    public static let tapKinds: Set<String> = ["encode", "waveform", "metadata"]

    public static let parsers: [String: Parser] = [
        "mix": parseMix,
        "gain": parseGain,
        "resample": parseResample,
        "encode": parseEncode,
        "normalize": parseNormalize,
        "waveform": parseWaveform,
        "lowpass": { v, c throws(SpecError) in try parseFilter(.lowpass, v, c) },
        "highpass": { v, c throws(SpecError) in try parseFilter(.highpass, v, c) },
        "bandpass": { v, c throws(SpecError) in try parseFilter(.bandpass, v, c) },
        "bandstop": { v, c throws(SpecError) in try parseFilter(.bandstop, v, c) },
        "eq": parseEQ,
        "metadata": parseMetadata,
        "upload": parseUpload,
        "pitch": parsePitch,
    ]

    static func parsePitch(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        if v.isScalar { return PitchConfig(semitones: try v.double(in: -24...24, unit: "semitones")) }
        let o = try v.options(allowed: ["semitones", "cents", "tempo"])
        if o["semitones"] != nil && o["cents"] != nil { throw v.error("give semitones or cents, not both") }
        var semitones = 0.0
        if let s = o["semitones"] { semitones = try s.double(in: -24...24, unit: "semitones") }
        if let cents = o["cents"] { semitones = try cents.double(in: PitchConfig.centsRange, unit: "cents") / 100 }
        let tempo = try o["tempo"]?.double(in: PitchConfig.tempoRange) ?? 1
        if o["semitones"] == nil && o["cents"] == nil && o["tempo"] == nil { throw v.error("give semitones, cents or tempo") }
        return PitchConfig(semitones: semitones, tempo: tempo)
    }

    static func parseUpload(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(allowed: ["to", "endpoint", "region", "addressing", "metadata", "content_type", "storage_class",
                                        "multipart_threshold", "part_size", "files", "overwrite", "prune", "prune_limit"], required: ["to"])
        let to = try o["to"]!.string()
        let target: UploadConfig.Target
        do { target = try UploadConfig.parseTarget(to) } catch { throw o["to"]!.error(error.message) }
        var endpoint: URL? = nil
        if let e = o["endpoint"] {
            let text = try e.string()
            guard let u = URL(string: text), let scheme = u.scheme, ["http", "https"].contains(scheme), u.host != nil else {
                throw e.error("\"\(text)\" is not an http(s) URL")
            }
            endpoint = u
        }
        var metadata: [(String, PathTemplate)] = []
        var literalBytes = 0
        if let m = o["metadata"] {
            for (key, value) in try m.mapping() {
                guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                    throw value.error("metadata keys are ASCII letters, digits, '-' and '_'")
                }
                if key.lowercased() == "segno-sha256" { throw value.error("segno-sha256 is set by segno itself") }
                let t = try parseTemplate(value, extraVariables: UploadConfig.extraVariables)
                literalBytes += key.utf8.count + t.text.utf8.count
                metadata.append((key.lowercased(), t))
            }
            if literalBytes > 2048 - 80 { throw m.error("user metadata is \(literalBytes) bytes before templates expand; S3 allows 2 KB") }
        }
        let sizes = 5 * 1024 * 1024 ... 5 * 1024 * 1024 * 1024
        var tapKinds: [String]? = nil
        if let f = o["files"] {
            tapKinds = []
            for item in try f.list(allowSingle: true) {
                let k = try item.string()
                guard StageRegistry.tapKinds.contains(k) else { throw item.error("\"\(k)\" is not a tap kind (encode, waveform, metadata)") }
                guard c.taps.contains(k) else { throw item.error("no \(k) tap comes before this upload") }
                tapKinds?.append(k)
            }
        }
        var addressing: S3Addressing? = nil
        if let a = o["addressing"] { addressing = try a.choice(S3Addressing.self) }
        var config = UploadConfig(to: to, target: target, endpoint: endpoint, region: try o["region"]?.string(), addressing: addressing,
                                  metadata: metadata, contentType: try o["content_type"]?.string(), storageClass: try o["storage_class"]?.string(),
                                  multipartThreshold: Int64(try o["multipart_threshold"]?.int(in: 1...(5 << 30), unit: "bytes") ?? 16 << 20),
                                  partSize: Int64(try o["part_size"]?.int(in: sizes, unit: "bytes") ?? 8 << 20),
                                  files: tapKinds, overwrite: try o["overwrite"]?.bool() ?? true, prune: try o["prune"]?.bool() ?? false)
        if let l = o["prune_limit"] { config.pruneLimit = try parsePruneLimit(l) }
        return config
    }

    /// `prune_limit: 25` (recordings) or `prune_limit: 5%` (of the recordings in the state store).
    static func parsePruneLimit(_ v: SpecValue) throws(SpecError) -> PruneLimit {
        let text = try v.string().trimmingCharacters(in: .whitespaces)
        if text.hasSuffix("%"), let p = Double(text.dropLast().trimmingCharacters(in: .whitespaces)), p > 0, p <= 100 {
            return .percent(p)
        }
        if let n = Int(text), n >= 0 { return .count(n) }
        throw v.error("prune_limit takes a count of recordings (25) or a share of them (10%), found \"\(text)\"")
    }

    static func parseMetadata(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(allowed: ["path", "levels"], required: ["path"])
        return MetadataConfig(path: try parseTemplate(o["path"]!), levels: try o["levels"]?.int(in: 0...1400) ?? WaveformLevels.defaultCount)
    }

    static func parseFilter(_ kind: FilterConfig.Kind, _ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let config: FilterConfig
        var freqNode = v
        if v.isScalar {
            config = FilterConfig(filter: kind, frequency: try v.double(unit: "Hz"))
        } else {
            let band = kind == .bandpass || kind == .bandstop
            let o = try v.options(allowed: band ? ["frequency", "bandwidth"] : ["frequency", "order", "q"], required: ["frequency"])
            freqNode = o["frequency"]!
            let freq = try freqNode.double(unit: "Hz")
            if band {
                config = FilterConfig(filter: kind, frequency: freq, bandwidth: try o["bandwidth"]?.double() ?? 1)
                do { try FilterDesign.validateBandwidth(config.bandwidth) } catch { throw o["bandwidth"]!.error("\(error)") }
            } else {
                let order = try o["order"]?.int() ?? 2
                do { try FilterDesign.validateOrder(order) } catch { throw o["order"]!.error("\(error)") }
                let q = try o["q"]?.double()
                do { try FilterDesign.validateQ(q, order: order) } catch { throw o["q"]!.error("\(error)") }
                config = FilterConfig(filter: kind, frequency: freq, order: order, q: q)
            }
        }
        do { try FilterDesign.validateFrequency(config.frequency, sampleRate: c.knownRate.map(Double.init)) } catch {
            if let rate = c.knownRate {
                throw freqNode.error("\(canonicalNumber(config.frequency)) Hz is not below the Nyquist frequency of the \(String(format: "%g", Double(rate) / 1000)) kHz stream here (after resample)")
            }
            throw freqNode.error("\(error)")
        }
        return config
    }

    static func parseEQ(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(allowed: ["bands"], required: ["bands"])
        var bands: [EQBand] = []
        for item in try o["bands"]!.list() {
            let b = try item.options(allowed: ["type", "frequency", "bandwidth", "gain", "bypass"], required: ["type", "frequency"])
            let band = EQBand(type: try b["type"]!.choice(EQFilterType.self), frequency: try b["frequency"]!.double(unit: "Hz"),
                              bandwidth: try b["bandwidth"]?.double() ?? EQBand.defaultBandwidth,
                              gain: try b["gain"]?.double() ?? 0, bypass: try b["bypass"]?.bool() ?? false)
            do { try band.validate(sampleRate: c.knownRate.map(Double.init)) } catch {
                throw (b[error.option] ?? item).error("\(error)")
            }
            bands.append(band)
        }
        if bands.isEmpty { throw o["bands"]!.error("give at least one band") }
        return EQConfig(bands: bands)
    }

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
                              levels: try o["levels"]?.int(in: 1...1400) ?? WaveformLevels.defaultCount, picture: picture).parsingPictureStyle(o["picture"])
    }

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
                              quality: try o["quality"]?.choice(ResampleConfig.Quality.self) ?? .standard)
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
