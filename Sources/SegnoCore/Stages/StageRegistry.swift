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
        if let rate = config.fixedRate { knownRate = rate }
        if config.kind == .tap { taps.append(config.name) }
    }
}

/// Spec key → option parser, one entry per stage. Each parser checks every option and throws a
/// located `SpecError`; this is `segno validate`'s whole job.
public enum StageRegistry {
    public typealias Parser = @Sendable (SpecValue, StageParseContext) throws(SpecError) -> any StageConfig

    /// The stage kinds that write files (taps): what `files:` of an upload and `--force=KIND` name.
    public static let tapKinds: Set<String> = ["encode", "waveform", "metadata", "fingerprint", "cuts", "transcribe"]

    public static let parsers: [String: Parser] = [
        "mix": MixConfig.parse,
        "gain": GainConfig.parse,
        "resample": ResampleConfig.parse,
        "encode": EncodeConfig.parse,
        "normalize": NormalizeConfig.parse,
        "waveform": WaveformConfig.parse,
        "lowpass": { v, c throws(SpecError) in try FilterConfig.parse(.lowpass, v, c) },
        "highpass": { v, c throws(SpecError) in try FilterConfig.parse(.highpass, v, c) },
        "bandpass": { v, c throws(SpecError) in try FilterConfig.parse(.bandpass, v, c) },
        "bandstop": { v, c throws(SpecError) in try FilterConfig.parse(.bandstop, v, c) },
        "eq": EQConfig.parse,
        "metadata": MetadataConfig.parse,
        "upload": UploadConfig.parse,
        "pitch": PitchConfig.parse,
        "fingerprint": FingerprintConfig.parse,
        "denoise": DenoiseConfig.parse,
        "pauses": PausesConfig.parse,
        "transcribe": TranscribeConfig.parse,
    ]


    /// Parses a path template option, locating template errors at the option.
    public static func parseTemplate(_ v: SpecValue, extraVariables: Set<String> = []) throws(SpecError) -> PathTemplate {
        let text = try v.string()
        do { return try PathTemplate(text, extraVariables: extraVariables) } catch { throw v.error(error.message) }
    }
}
