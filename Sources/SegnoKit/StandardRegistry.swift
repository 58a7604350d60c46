import SegnoAudio
import SegnoCore
import SegnoSources
import SegnoSpeech
import SegnoState

extension StageRegistry {
    /// Every stage segno ships, each with its declaration and parser; adding a stage adds one
    /// line here. `tools` are the helper pools the stages that need one (fingerprint) keep in
    /// their config.
    public static func standard(tools: AudioTools) -> StageRegistry {
        StageRegistry([
            Entry(MixConfig.declaration, MixConfig.parse),
            Entry(GainConfig.declaration, GainConfig.parse),
            Entry(ResampleConfig.declaration, ResampleConfig.parse),
            Entry(EncodeConfig.declaration) { v, c throws(SpecError) in try EncodeConfig.parse(v, c, searchPath: tools.searchPath) },
            Entry(NormalizeConfig.declaration, NormalizeConfig.parse),
            Entry(WaveformConfig.declaration, WaveformConfig.parse),
            Entry(FilterConfig.declaration(.lowpass)) { v, c throws(SpecError) in try FilterConfig.parse(.lowpass, v, c) },
            Entry(FilterConfig.declaration(.highpass)) { v, c throws(SpecError) in try FilterConfig.parse(.highpass, v, c) },
            Entry(FilterConfig.declaration(.bandpass)) { v, c throws(SpecError) in try FilterConfig.parse(.bandpass, v, c) },
            Entry(FilterConfig.declaration(.bandstop)) { v, c throws(SpecError) in try FilterConfig.parse(.bandstop, v, c) },
            Entry(EQConfig.declaration, EQConfig.parse),
            Entry(MetadataConfig.declaration, MetadataConfig.parse),
            Entry(UploadConfig.declaration, UploadConfig.parse),
            Entry(PitchConfig.declaration, PitchConfig.parse),
            Entry(FingerprintConfig.declaration) { v, c throws(SpecError) in try FingerprintConfig.parse(v, c, helpers: tools.fingerprintHelpers) },
            Entry(DenoiseConfig.declaration, DenoiseConfig.parse),
            Entry(PausesConfig.declaration, PausesConfig.parse),
            Entry(TranscribeConfig.declaration, TranscribeConfig.parse),
            Entry(SpeakersConfig.declaration, SpeakersConfig.parse),
            Entry(StatsConfig.declaration, StatsConfig.parse),
            Entry(ChaptersConfig.declaration, ChaptersConfig.parse),
            Entry(LevelConfig.declaration, LevelConfig.parse),
        ])
    }
}
