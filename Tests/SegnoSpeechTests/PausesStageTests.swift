import Foundation
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
@testable import SegnoSpeech
import Testing

/// `pauses` on recorded speech with noise at 10 dB SNR: every stretch of speech (found in the
/// clean recording by its energy, not by segno's detector) is kept; the cut list (read back with
/// Foundation's JSON parser) maps every kept output frame to the identical source frame; long
/// pauses shrink to about `to`; the block size changes nothing.
@Suite struct PausesStageTests {
    /// 0.8 s silence, an utterance, 3 s silence, another utterance, 1 s silence; pink-ish noise at 10 dB SNR.
    static func memo(rate: Int = 16000, snr: Double = 10) throws -> (clean: [Float], noisy: [Float]) {
        let a = try Speech.utterance(Speech.short, rate: rate), b = try Speech.utterance(Speech.amiable, rate: rate)
        func gap(_ s: Double) -> [Float] { [Float](repeating: 0, count: Int(s * Double(rate))) }
        let clean = gap(0.8) + a + gap(3) + b + gap(1)
        let noise = Speech.noise(frames: clean.count, rms: Speech.rms(a[...]) / pow(10, snr / 20), seed: 3)
        return (clean, zip(clean, noise).map { $0 + $1 })
    }

    /// Source frames that hold speech: 10 ms frames of the clean recording within 35 dB of its loudest.
    static func speechFrames(_ clean: [Float], rate: Int) -> [Range<Int>] {
        let hop = rate / 100
        let energies = stride(from: 0, to: clean.count - hop, by: hop).map { Speech.rms(clean[$0..<($0 + hop)]) }
        let floor = (energies.max() ?? 0) * pow(10, -35.0 / 20)
        return energies.indices.filter { energies[$0] > floor }.map { ($0 * hop)..<(($0 + 1) * hop) }
    }

    struct Kept: Decodable { var source_start: Double; var source_end: Double; var output_start: Double }
    struct Cut: Decodable { var source_start: Double; var source_end: Double; var output_at: Double }
    struct CutList: Decodable { var sample_rate: Int; var source_duration: Double; var output_duration: Double; var cuts: [Cut]; var kept: [Kept] }

    /// Runs cut-list tap → pauses → collector, as the spec loader places them.
    static func run(_ x: [Float], channels: Int = 1, rate: Int, _ config: PausesConfig, block: Int = 4096) throws -> (out: CollectTap, cuts: CutList) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("segno-pauses-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let tap = CollectTap()
        let cutTap = try CutListConfig(pauses: config).makeTap(paths: [dir + "/cuts.json"], context: RecordingContext(sourcePath: "/m.wav", relativePath: "m.wav", modified: Date(), outputRoot: dir))
        _ = try StageChain(elements: [.tap(cutTap), .transform(try config.makeTransform()), .tap(tap)], blockFrames: block)
            .run(decoder: MemoryDecoder(x, channels: channels, rate: rate))
        let json = try Data(contentsOf: URL(fileURLWithPath: dir + "/cuts.json"))
        return (tap, try JSONDecoder().decode(CutList.self, from: json))
    }

    static func config(trim: Bool = true, longerThan: Double? = 2, to: Double = 0.7, vad: VoiceActivityEngine = .silero) -> PausesConfig {
        PausesConfig(rules: PauseRules(trim: trim, longerThan: longerThan, to: to), engine: vad, cuts: PausesConfig.standardCuts)
    }

    /// Checks the cut list against the audio: every speech frame kept, and every kept output frame
    /// (away from the 10 ms fades) equal to its source frame.
    static func check(_ r: (out: CollectTap, cuts: CutList), noisy: [Float], clean: [Float], channels: Int = 1, rate: Int) {
        let frames = r.out.frames
        #expect(abs(r.cuts.output_duration * Double(rate) - Double(frames)) < 1)
        let removed = r.cuts.cuts.reduce(0.0) { $0 + ($1.source_end - $1.source_start) }
        #expect(abs((r.cuts.source_duration - removed) * Double(rate) - Double(frames)) < 2)
        let kept = r.cuts.kept.map { (Int(($0.source_start * Double(rate)).rounded())..<Int(($0.source_end * Double(rate)).rounded()), Int(($0.output_start * Double(rate)).rounded())) }
        var lost = 0
        for s in speechFrames(clean, rate: rate) where !kept.contains(where: { $0.0.contains(s.lowerBound) && $0.0.contains(s.upperBound - 1) }) { lost += s.count }
        #expect(lost == 0, "\(lost) frames of speech cut; kept \(kept); first lost \(speechFrames(clean, rate: rate).first { s in !kept.contains(where: { $0.0.contains(s.lowerBound) && $0.0.contains(s.upperBound - 1) }) }.map { "\($0)" } ?? "")")
        let fade = rate / 100 + 2
        var mismatches = 0
        for (src, at) in kept {
            for i in fade..<max(fade, src.count - fade) {
                for c in 0..<channels where r.out.samples[(at + i) * channels + c] != noisy[(src.lowerBound + i) * channels + c] { mismatches += 1 }
            }
        }
        #expect(mismatches == 0, "\(mismatches) kept samples differ from the source at the cut list's times")
    }

    @Test(arguments: VoiceActivityEngine.allCases)
    func keepsEverySpeechFrameAndShortensTheLongPause(vad: VoiceActivityEngine) throws {
        // WebRTC's detector misses pauses at 10 dB SNR (measured in `make quality`); it gets 30 dB.
        let (clean, noisy) = try Self.memo(snr: vad == .webrtc ? 30 : 10)
        let r = try Self.run(noisy, rate: 16000, Self.config(vad: vad))
        Self.check(r, noisy: noisy, clean: clean, rate: 16000)
        // Leading and trailing silence trimmed; the 3 s pause (plus the utterances' own quiet ends) shortened to 0.7 s.
        #expect(r.cuts.cuts.count == 3, "\(r.cuts.cuts)")
        if r.cuts.cuts.count == 3 {
            #expect(r.cuts.cuts[0].source_start == 0)
            #expect(abs(r.cuts.cuts[2].source_end - r.cuts.source_duration) < 0.001)
            let inner = r.cuts.kept[1].source_start - r.cuts.kept[0].source_end
            #expect(inner >= 1.5 && inner <= 3.4, "middle cut \(inner) s")
        }
    }

    @Test func stereoAtAnotherRate() throws {
        let (clean, noisy) = try Self.memo(rate: 44100)
        var stereo = [Float](repeating: 0, count: noisy.count * 2)
        for i in noisy.indices { stereo[2 * i] = noisy[i]; stereo[2 * i + 1] = 0.5 * noisy[i] }
        let r = try Self.run(stereo, channels: 2, rate: 44100, Self.config())
        #expect(r.out.format == AudioFormat(sampleRate: 44100, channels: 2))
        Self.check(r, noisy: stereo, clean: clean, channels: 2, rate: 44100)
    }

    @Test func trimAndShortenCanBeTurnedOff() throws {
        let (clean, noisy) = try Self.memo()
        let keepEnds = try Self.run(noisy, rate: 16000, Self.config(trim: false))
        Self.check(keepEnds, noisy: noisy, clean: clean, rate: 16000)
        #expect(keepEnds.cuts.cuts.count == 1)
        #expect(keepEnds.cuts.kept.first?.source_start == 0)
        let keepPauses = try Self.run(noisy, rate: 16000, Self.config(longerThan: nil))
        Self.check(keepPauses, noisy: noisy, clean: clean, rate: 16000)
        #expect(keepPauses.cuts.cuts.count == 2, "only the ends: \(keepPauses.cuts.cuts)")
    }

    @Test func blockSizeDoesNotChangeTheOutput() throws {
        let (_, noisy) = try Self.memo()
        let x = Array(noisy[0..<(16000 * 8)])
        let reference = try Self.run(x, rate: 16000, Self.config(), block: 4096)
        for block in [1, 7] {
            let got = try Self.run(x, rate: 16000, Self.config(), block: block)
            #expect(got.out.samples == reference.out.samples, "blocks of \(block)")
            #expect(got.cuts.cuts.map(\.source_start) == reference.cuts.cuts.map(\.source_start))
        }
    }

    @Test func aMissingModelIsAnEnvironmentFailure() throws {
        let config = PausesConfig(rules: PauseRules(trim: true, longerThan: 2, to: 0.7), cuts: PausesConfig.standardCuts,
                                  locator: SpeechLocator(roots: ["/nonexistent"]))
        #expect(throws: SpeechError.self) { _ = try config.makeTransform() }
        do { _ = try config.makeTransform() } catch { #expect(FailureClass.of(error) == .environment); #expect("\(error)".contains("make deps")) }
    }

    @Test func specOptionsAreChecked() throws {
        let ok = try loadStages("- pauses: true\n- pauses: { trim: false, shorten: { longer_than: 5s, to: 1s }, vad: webrtc, cuts: \"{stem}.c.json\" }\n")
        #expect(ok.map(\.name) == ["cuts", "pauses", "cuts", "pauses"])
        #expect(ok[1].canonical == "pauses@v1 trim=true longer_than=2 to=0.7 vad=silero")
        #expect(ok[3].canonical == "pauses@v1 trim=false longer_than=5 to=1 vad=webrtc")
        for bad in ["- pauses: false", "- pauses: { shorten: { longer_than: 1s, to: 2s } }", "- pauses: { vad: energy }",
                    "- pauses: { trim: false, shorten: false }", "- pauses: { shorten: { to: 0.05s } }", "- pauses: { cuts: \"../x.json\" }"] {
            #expect(throws: SpecError.self, "\(bad)") { try loadStages(bad + "\n") }
        }
    }
}
