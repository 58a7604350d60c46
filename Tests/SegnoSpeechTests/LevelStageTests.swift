import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import SegnoSpeech
import Testing

/// Issue 30's case for `level`: a 35 s memo of two recorded voices taking turns — a LibriVox
/// reader (Debian `pocketsphinx-testdata`) and Asterisk's "Allison" prompts (Debian
/// `asterisk-core-sounds-en-wav`), the second 14 dB quieter by ffmpeg's meter — with quiet
/// room noise (brown, −60 dBFS RMS) throughout, 1.5 s pauses between the turns.
enum LevelMemo {
    static let rate = 16000
    static let allison = "/usr/share/asterisk/sounds/en_US_f_Allison"
    /// Turns in order: A, B, A, B, A.
    static let voiceA = ["sense_and_sensibility_01_austen_64kb-0880.wav", "sense_and_sensibility_01_austen_64kb-0890.wav",
                         "sense_and_sensibility_01_austen_64kb-0920.wav"].map { Speech.folder + "/" + $0 }
    static let voiceB = ["vm-intro.wav", "vm-instructions.wav"].map { allison + "/" + $0 }
    static let pause = 1.5, edge = 1.0, noiseRMS = 0.001

    struct Memo {
        var samples: [Float]
        /// Frames of each speaker's turns, and of the pauses between turns.
        var a: [Range<Int>], b: [Range<Int>], pauses: [Range<Int>]
    }

    /// A recording as Float32 mono at `rate` (sox resamples).
    static func load(_ path: String) throws -> [Float] {
        guard FileManager.default.fileExists(atPath: path) else {
            throw FixtureError("\(path) is missing: apt-get install pocketsphinx-testdata asterisk-core-sounds-en-wav (recorded voices)")
        }
        let r = try Tool.run("sox", [path, "-t", "f32", "-r", String(rate), "-c", "1", "-"])
        guard r.status == 0 else { throw FixtureError("sox could not read \(path): \(r.stderrText)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// The memo with voice B `quieter` dB under voice A (integrated loudness of each voice's turns).
    static func make(quieter: Double = 14, in dir: TempDir) throws -> Memo {
        let a = try voiceA.map(load), b = try voiceB.map(load)
        let la = try meter(a.flatMap { $0 }, in: dir).lufs, lb = try meter(b.flatMap { $0 }, in: dir).lufs
        let scale = Float(pow(10, (la - quieter - lb) / 20))
        var x = [Float](repeating: 0, count: Int(edge * Double(rate)))
        var memo = Memo(samples: [], a: [], b: [], pauses: [])
        let turns: [(Bool, [Float])] = [(true, a[0]), (false, b[0]), (true, a[1]), (false, b[1]), (true, a[2])]
        for (i, (isA, voice)) in turns.enumerated() {
            if i > 0 {
                memo.pauses.append(x.count..<(x.count + Int(pause * Double(rate))))
                x += [Float](repeating: 0, count: Int(pause * Double(rate)))
            }
            let span = x.count..<(x.count + voice.count)
            if isA { memo.a.append(span); x += voice } else { memo.b.append(span); x += voice.map { $0 * scale } }
        }
        x += [Float](repeating: 0, count: Int(edge * Double(rate)))
        let noise = Speech.noise(frames: x.count, rms: noiseRMS, seed: 11)
        memo.samples = zip(x, noise).map { $0 + $1 }
        return memo
    }

    /// ffmpeg's EBU R128 meter (independent of libebur128): integrated loudness and true peak.
    static func meter(_ x: [Float], channels: Int = 1, rate: Int = rate, in dir: TempDir) throws -> (lufs: Double, truePeak: Double) {
        let path = try Fixtures.write(x, channels: channels, rate: rate, to: dir["meter-\(UUID().uuidString).wav"], bits: .float)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try Tool.run("ffmpeg", ["-hide_banner", "-nostats", "-i", path, "-af", "ebur128=peak=true", "-f", "null", "-"])
        let lines = r.stderrText.split(separator: "\n")
        func value(_ label: String) -> Double? {
            lines.last { $0.trimmingCharacters(in: .whitespaces).hasPrefix(label) }
                .flatMap { l in l.split(separator: " ").compactMap { Double($0) }.first }
        }
        guard let i = value("I:"), let p = value("Peak:") else { throw FixtureError("no loudness in ffmpeg's output: \(r.stderrText)") }
        return (i, p)
    }

    /// The frames of `spans`, one after another.
    static func pick(_ x: [Float], _ spans: [Range<Int>]) -> [Float] { spans.flatMap { x[$0] } }

    /// RMS level of `x[range]` in dB.
    static func level(_ x: [Float], _ range: Range<Int>) -> Double { 20 * log10(Speech.rms(x[range])) }
}

@Suite struct LevelStageTests {
    /// Runs `x` through `level` the way the runner does (a measuring pass over the spool, a ride,
    /// limiter trials, the real pass), reading `block` frames at a time.
    static func run(_ x: [Float], _ config: LevelConfig, block: Int = 4096, channels: Int = 1, rate: Int = LevelMemo.rate,
                    in dir: TempDir) throws -> (out: [Float], passes: Int) {
        let tap = CollectTap()
        var passes = 0
        let measuring = StageChain.Measuring(spoolFolder: dir.path, recording: "memo", onPass: { _, _ in passes += 1 }, notes: nil)
        let chain = StageChain(elements: [.transform(try config.makeTransform()), .tap(tap)], blockFrames: block)
        _ = try chain.runEach(decoder: MemoryDecoder(x, channels: channels, rate: rate), isolatingTaps: false, measuring: measuring,
                              isCancelled: { false }, progress: { _ in })
        return (tap.samples, passes)
    }

    /// Issue 30: after `level: -16` the memo is at −16 LUFS (±0.5 LU, as `normalize`) with the true
    /// peak under −1 dBTP, the two voices within 1 LU of each other (14 LU apart before), and the
    /// noise in every pause raised no more than the recording as a whole (+1 dB), steady through it.
    @Test func evensOutTwoSpeakersAndMeetsTheTarget() throws {
        let dir = try TempDir()
        let memo = try LevelMemo.make(in: dir)
        let x = memo.samples
        let (y, passes) = try Self.run(x, LevelConfig(loudness: -16), in: dir)
        #expect(y.count == x.count, "as many frames out as in")
        #expect(passes >= 3, "a measuring pass, a ride, the real pass: \(passes)")
        let before = try LevelMemo.meter(x, in: dir), after = try LevelMemo.meter(y, in: dir)
        #expect(abs(after.lufs + 16) <= 0.5, "ffmpeg measured \(after.lufs) LUFS")
        #expect(after.truePeak <= -1.0, "true peak \(after.truePeak) dBTP")
        let aIn = try LevelMemo.meter(LevelMemo.pick(x, memo.a), in: dir).lufs, bIn = try LevelMemo.meter(LevelMemo.pick(x, memo.b), in: dir).lufs
        let aOut = try LevelMemo.meter(LevelMemo.pick(y, memo.a), in: dir).lufs, bOut = try LevelMemo.meter(LevelMemo.pick(y, memo.b), in: dir).lufs
        #expect(abs(aIn - bIn - 14) < 0.5, "the memo: voice B 14 LU under A (\(aIn), \(bIn))")
        #expect(abs(aOut - bOut) <= 1.0, "voices after level: A \(aOut), B \(bOut) LUFS")
        let overall = after.lufs - before.lufs
        for p in memo.pauses {
            // The middle of the pause: the turns' own tails and the detector's margins left out.
            let middle = (p.lowerBound + 6400)..<(p.upperBound - 6400)
            let lift = LevelMemo.level(y, middle) - LevelMemo.level(x, middle)
            #expect(lift <= overall + 1.0, "pause at \(p.lowerBound / LevelMemo.rate) s: noise +\(lift) dB, the recording +\(overall) dB")
            let half = middle.count / 2
            let first = middle.lowerBound..<(middle.lowerBound + half), second = (middle.lowerBound + half)..<middle.upperBound
            let drift = (LevelMemo.level(y, first) - LevelMemo.level(x, first)) - (LevelMemo.level(y, second) - LevelMemo.level(x, second))
            #expect(abs(drift) <= 1.0, "pause at \(p.lowerBound / LevelMemo.rate) s: the gain moves \(drift) dB inside it")
        }
    }

    /// `max_gain` bounds the ride: at 3 dB a voice 14 LU under the other can be brought only
    /// 2 × 3 dB closer per segment (the turns' loudness moves 1.5 LU more: pauses inside a turn,
    /// gliding at its ends), while the loudness target is still met.
    @Test func maxGainBoundsTheRide() throws {
        let dir = try TempDir()
        let memo = try LevelMemo.make(in: dir)
        let maxGain = 3.0
        let (y, _) = try Self.run(memo.samples, LevelConfig(loudness: -16, maxGain: maxGain), in: dir)
        let aOut = try LevelMemo.meter(LevelMemo.pick(y, memo.a), in: dir).lufs, bOut = try LevelMemo.meter(LevelMemo.pick(y, memo.b), in: dir).lufs
        #expect(aOut - bOut >= 14 - 2 * maxGain - 1.5, "voices A \(aOut), B \(bOut) LUFS")
        #expect(abs(try LevelMemo.meter(y, in: dir).lufs + 16) <= 0.5)
    }

    /// A ceiling the levelled peaks exceed: limiter trials bring the loudness to the target anyway.
    @Test func aLowCeilingIsKeptByTheLimiter() throws {
        let dir = try TempDir()
        let memo = try LevelMemo.make(in: dir)
        let (y, passes) = try Self.run(memo.samples, LevelConfig(loudness: -16, truePeak: -3), in: dir)
        let m = try LevelMemo.meter(y, in: dir)
        #expect(passes >= 4, "limiter trials ran: \(passes) passes")
        #expect(m.truePeak <= -3.0, "true peak \(m.truePeak) dBTP")
        #expect(abs(m.lufs + 16) <= 0.5, "\(m.lufs) LUFS")
    }

    /// Another rate and two channels (the memo at 44.1 kHz by sox, in both channels, the right one
    /// 6 dB lower): the voices still end within 1 LU and the loudness on target.
    @Test func stereoAtAnotherRate() throws {
        let dir = try TempDir()
        let memo = try LevelMemo.make(in: dir)
        let mono = try Fixtures.write(memo.samples, channels: 1, rate: LevelMemo.rate, to: dir["memo16.wav"], bits: .float)
        let r = try Tool.run("sox", [mono, "-t", "f32", "-r", "44100", "-"])
        try #require(r.status == 0, "\(r.stderrText)")
        let x44: [Float] = r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let stereo = x44.flatMap { [$0, $0 * 0.5] }
        let (y, _) = try Self.run(stereo, LevelConfig(loudness: -16), channels: 2, rate: 44100, in: dir)
        #expect(y.count == stereo.count)
        func spans(_ s: [Range<Int>]) -> [Range<Int>] {
            s.map { (($0.lowerBound * 441 / 160) * 2)..<(($0.upperBound * 441 / 160) * 2) }
        }
        let m = try LevelMemo.meter(y, channels: 2, rate: 44100, in: dir)
        let a = try LevelMemo.meter(LevelMemo.pick(y, spans(memo.a)), channels: 2, rate: 44100, in: dir).lufs
        let b = try LevelMemo.meter(LevelMemo.pick(y, spans(memo.b)), channels: 2, rate: 44100, in: dir).lufs
        #expect(abs(m.lufs + 16) <= 0.5, "\(m.lufs) LUFS")
        #expect(m.truePeak <= -1.0, "true peak \(m.truePeak) dBTP")
        #expect(abs(a - b) <= 1.0, "voices A \(a), B \(b) LUFS")
    }

    /// The output does not depend on how the input was cut (12 s: two turns and the pause between).
    @Test func blockSizeDoesNotChangeTheOutput() throws {
        let dir = try TempDir()
        let x = Array(try LevelMemo.make(in: dir).samples[0..<(LevelMemo.rate * 12)])
        let reference = try Self.run(x, LevelConfig(loudness: -16), block: 4096, in: dir).out
        for block in [1, 7] {
            let got = try Self.run(x, LevelConfig(loudness: -16), block: block, in: dir).out
            #expect(got == reference, "blocks of \(block): \(maxAbsDifference(got, reference))")
        }
    }

    /// Memory does not grow with the length: over 3.5 minutes of conversation the rider holds at
    /// most the detector's latency (a 10 s segment and its lag) and the look-ahead, and its books stay small.
    @Test func memoryStaysFlatOverALongRecording() throws {
        let dir = try TempDir()
        let memo = try LevelMemo.make(in: dir).samples
        let rider = LevelRider(voice: .detect(try VoiceActivityEngine.silero.make(locator: .standard)), reference: -25, maxGain: 20, pauseCap: 0, offset: 0)
        try rider.start(AudioFormat(sampleRate: LevelMemo.rate, channels: 1))
        var out = AudioBlock(channels: 1, capacity: 4096)
        var held = 0, books = 0, emitted = 0
        for _ in 0..<6 {
            for start in stride(from: 0, to: memo.count, by: 4096) {
                let block = AudioBlock(interleaved: Array(memo[start..<min(memo.count, start + 4096)]), channels: 1)
                out.frames = 0
                try rider.feed(block, into: &out)
                emitted += out.frames
                held = max(held, rider.heldFrames)
                books = max(books, rider.bookkeeping)
            }
        }
        out.frames = 0
        try rider.finish(into: &out)
        #expect(emitted + out.frames == memo.count * 6)
        let bound = 10 + Double(SileroDetector.lag) / Double(VoiceActivityEngine.rate) + LevelRider.lookaheadSeconds + 1
        #expect(Double(held) < bound * Double(LevelMemo.rate), "held \(Double(held) / Double(LevelMemo.rate)) s, more than \(bound) s")
        #expect(books < 1200, "hop energies, targets and segments kept: \(books)")
    }

    @Test func silencePassesUnchanged() throws {
        let dir = try TempDir()
        let x = [Float](repeating: 0, count: LevelMemo.rate * 2)
        #expect(try Self.run(x, LevelConfig(loudness: -16), in: dir).out == x)
    }

    @Test func tooShortForLoudnessIsAClearError() throws {
        let dir = try TempDir()
        let x = Signal.sine(rate: LevelMemo.rate, frames: LevelMemo.rate / 5, amplitude: 0.1)
        do {
            _ = try Self.run(x, LevelConfig(loudness: -16), in: dir)
            Issue.record("0.2 s was levelled")
        } catch { #expect("\(error)".contains("too short to measure loudness")) }
    }

    @Test func aMissingModelIsAnEnvironmentFailure() throws {
        let config = LevelConfig(loudness: -16, locator: SpeechLocator(roots: ["/nonexistent"]))
        do { _ = try config.makeTransform(); Issue.record("made without a model") } catch {
            #expect(FailureClass.of(error) == .environment)
            #expect("\(error)".contains("make deps"))
        }
        #expect(config.missingParts().count == 2, "\(config.missingParts())")
    }

    @Test func specOptionsAreChecked() throws {
        let registry = StageRegistry([StageRegistry.Entry(LevelConfig.declaration, LevelConfig.parse),
                                      StageRegistry.Entry(MetadataConfig.declaration, MetadataConfig.parse)])
        func load(_ stage: String) throws -> String {
            let yaml = "version: 1\nname: t\ninput: { root: /tmp }\noutput: { root: /tmp/segno-level-spec-test }\nstages:\n  - \(stage)\n  - metadata: { path: \"{stem}.json\" }\n"
            return try SpecLoader.parse(yaml, file: "t.yaml", baseDirectory: "/tmp", registry: registry).stages[0].config.canonical
        }
        #expect(try load("level: -16") == "level@v1 loudness=-16 true_peak=-1 max_gain=20 vad=silero")
        #expect(try load("level: {}") == "level@v1 loudness=-16 true_peak=-1 max_gain=20 vad=silero")
        #expect(try load("level: { loudness: -20, true_peak: -2, max_gain: 12, vad: webrtc }") == "level@v1 loudness=-20 true_peak=-2 max_gain=12 vad=webrtc")
        for bad in ["level: true", "level: -3", "level: { max_gain: 50 }", "level: { true_peak: 1 }", "level: { vad: energy }", "level: { gain: 3 }"] {
            #expect(throws: SpecError.self, "\(bad)") { _ = try load(bad) }
        }
    }
}
