import Foundation
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
@testable import SegnoSpeech
import Testing

/// `denoise` on recorded speech (LibriVox, read by sox) with generated noise: exact length, no
/// shift (cross-correlation against the clean speech), the noise lowered by about the amount,
/// and the same output for any block size.
@Suite struct DenoiseStageTests {
    /// Half a second of noise alone, the utterance, and half a second of noise alone again, with
    /// noise at 5 dB SNR over the speech.
    static func noisySpeech(rate: Int) throws -> (clean: [Float], noisy: [Float]) {
        let speech = try Speech.utterance(rate: rate)
        let clean = [Float](repeating: 0, count: rate / 2) + speech + [Float](repeating: 0, count: rate / 2)
        let noise = Speech.noise(frames: clean.count, rms: Speech.rms(speech[...]) / pow(10, 5.0 / 20))
        return (clean, zip(clean, noise).map { $0 + $1 })
    }

    /// dB by which the noise-only tail got quieter (its last 0.4 s, once the engine has adapted).
    static func reduction(_ input: [Float], _ output: [Float], rate: Int) -> Double {
        let r = (input.count - rate * 4 / 10)..<input.count
        return 20 * log10(Speech.rms(input[r]) / max(1e-9, Speech.rms(output[r])))
    }

    @Test(arguments: DenoiseEngine.allCases, [16000, 44100])
    func keepsLengthAndAlignmentAndLowersTheNoise(engine: DenoiseEngine, rate: Int) throws {
        let (clean, noisy) = try Self.noisySpeech(rate: rate)
        let out = try runChain(noisy, channels: 1, rate: rate, [DenoiseConfig(amountDB: 12, engine: engine)]).samples
        #expect(out.count == noisy.count)
        // The engine's delay is removed: the output lines up with the clean speech.
        let lag = Speech.lag(out, clean, range: rate * 40 / 1000)
        #expect(abs(lag) <= 1, "\(engine) at \(rate) Hz: output lags the input by \(lag) frames")
        let dB = Self.reduction(noisy, out, rate: rate)
        #expect(dB >= (engine == .speex ? 3 : 6) && dB <= 14, "\(engine): noise lowered by \(dB) dB for amount 12")
    }

    @Test(arguments: [DenoiseEngine.deepfilter, .rnnoise])
    func amountLimitsTheReduction(engine: DenoiseEngine) throws {
        let (_, noisy) = try Self.noisySpeech(rate: 16000)
        let gentle = try runChain(noisy, channels: 1, rate: 16000, [DenoiseConfig(amountDB: 4, engine: engine)]).samples
        let strong = try runChain(noisy, channels: 1, rate: 16000, [DenoiseConfig(amountDB: 30, engine: engine)]).samples
        let g = Self.reduction(noisy, gentle, rate: 16000), s = Self.reduction(noisy, strong, rate: 16000)
        #expect(g <= 5, "amount 4 dB lowered the noise by \(g) dB")
        #expect(s >= g + 6, "amount 30 dB (\(s) dB) not clearly stronger than 4 dB (\(g) dB)")
    }

    @Test func channelsAreDenoisedSeparately() throws {
        let (clean, noisy) = try Self.noisySpeech(rate: 44100)
        let other = Speech.noise(frames: noisy.count, rms: 0.05, seed: 99)
        var stereo = [Float](repeating: 0, count: noisy.count * 2)
        for i in noisy.indices { stereo[2 * i] = noisy[i]; stereo[2 * i + 1] = other[i] }
        let tap = try runChain(stereo, channels: 2, rate: 44100, [DenoiseConfig()])
        #expect(tap.format == AudioFormat(sampleRate: 44100, channels: 2))
        #expect(tap.frames == noisy.count)
        let left = channel(0, of: tap.samples, channels: 2), right = channel(1, of: tap.samples, channels: 2)
        #expect(abs(Speech.lag(left, clean, range: 1800)) <= 1)
        // Noise alone on the right channel: lowered over its whole length, not mixed with the left.
        #expect(20 * log10(Speech.rms(other[...]) / Speech.rms(right[...])) >= 6)
    }

    @Test(arguments: DenoiseEngine.allCases)
    func blockSizeDoesNotChangeTheOutput(engine: DenoiseEngine) throws {
        let (_, noisy) = try Self.noisySpeech(rate: 16000)
        let x = Array(noisy[0..<24000])
        let reference = try runChain(x, channels: 1, rate: 16000, [DenoiseConfig(engine: engine)], blockFrames: 4096).samples
        for block in [1, 7] {
            let got = try runChain(x, channels: 1, rate: 16000, [DenoiseConfig(engine: engine)], blockFrames: block).samples
            #expect(got.count == x.count)
            if got.count == reference.count { #expect(maxAbsDifference(got, reference) <= 1e-5, "\(engine), blocks of \(block)") }
        }
    }

    @Test func shortAndEmptyInputsKeepTheirLength() throws {
        for frames in [0, 1, 479, 481] {
            let x = Signal.noise(frames: frames, amplitude: 0.1)
            #expect(try runChain(x, channels: 1, rate: 22050, [DenoiseConfig(engine: .rnnoise)]).frames == frames)
        }
    }

    @Test(arguments: [DenoiseEngine.deepfilter, .rnnoise])
    func aMissingEngineIsAnEnvironmentFailureWithAHint(engine: DenoiseEngine) throws {
        let config = DenoiseConfig(engine: engine, locator: SpeechLocator(roots: ["/nonexistent"]))
        do {
            _ = try runChain([0, 0], channels: 1, rate: 16000, [config])
            Issue.record("no error")
        } catch {
            #expect(FailureClass.of(error) == .environment)
            #expect("\(error)".contains("make deps"), "\(error)")
        }
    }

    @Test func specOptionsAreChecked() throws {
        let ok = try loadStages("- denoise: true\n- denoise: { amount_db: 20, engine: speex }\n")
        #expect(ok.map(\.canonical) == ["denoise@v1 amount_db=24 engine=deepfilter", "denoise@v1 amount_db=20 engine=speex"])
        for bad in ["- denoise: false", "- denoise: { amount_db: 0 }", "- denoise: { engine: auphonic }", "- denoise: { amount: 3 }"] {
            #expect(throws: SpecError.self, "\(bad)") { try loadStages(bad + "\n") }
        }
    }
}

/// The configs of a spec whose stages are `stages` (YAML list items) followed by a metadata tap.
func loadStages(_ stages: String) throws -> [any StageConfig] {
    let yaml = "version: 1\nname: t\ninput: { root: /tmp }\noutput: { root: /tmp/segno-speech-spec-test }\nstages:\n"
        + stages.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n") + "\n  - metadata: { path: \"{stem}.json\" }\n"
    let spec = try SpecLoader.parse(yaml, file: "t.yaml", baseDirectory: "/tmp", registry: .speechForTests)
    return spec.stages.dropLast().map(\.config)
}
