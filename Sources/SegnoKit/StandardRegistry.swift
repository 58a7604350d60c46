import SegnoAudio
import SegnoCore
import SegnoSources
import SegnoSpeech
import SegnoState

extension StageRegistry {
    /// Every stage segno ships; adding a stage adds one line here. `tools` are the helper pools
    /// the stages that need one (fingerprint) keep in their config.
    public static func standard(tools: AudioTools) -> StageRegistry {
        StageRegistry([
            "mix": MixConfig.parse,
            "gain": GainConfig.parse,
            "resample": ResampleConfig.parse,
            "encode": { v, c throws(SpecError) in try EncodeConfig.parse(v, c, searchPath: tools.searchPath) },
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
            "fingerprint": { v, c throws(SpecError) in try FingerprintConfig.parse(v, c, helpers: tools.fingerprintHelpers) },
            "denoise": DenoiseConfig.parse,
            "pauses": PausesConfig.parse,
            "transcribe": TranscribeConfig.parse,
        ], aliases: ["normalise": "normalize"])
    }
}
