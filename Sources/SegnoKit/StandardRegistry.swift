import SegnoAudio
import SegnoCore
import SegnoSources
import SegnoSpeech
import SegnoState

extension StageRegistry {
    /// Every stage segno ships; adding a stage adds one line here.
    public static let standard = StageRegistry([
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
    ])
}
