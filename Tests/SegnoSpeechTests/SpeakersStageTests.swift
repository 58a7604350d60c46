import Foundation
@testable import SegnoCore
import SegnoAudioTestSupport
import SegnoDSP
import SegnoCoreTestSupport
@testable import SegnoSpeech
import Testing

/// Real recorded voices for the `speakers` tests, decoded by sox to 16 kHz mono: a LibriVox
/// reader (Debian `pocketsphinx-testdata`), the `cards` speaker of the same package, the ALSA
/// channel prompts (`alsa-utils`) and Asterisk's Allison (`asterisk-core-sounds-en-wav`).
enum Voices {
    static let librivox = "/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0"
    static let cards = "/usr/share/pocketsphinx/test/data/cards/"
    static let alsa = "/usr/share/sounds/alsa/"
    static let allison = "/usr/share/asterisk/sounds/en_US_f_Allison/"

    static func load(_ path: String) throws -> [Float] {
        guard FileManager.default.fileExists(atPath: path) else {
            throw FixtureError("\(path) is missing: `make test-deps` installs pocketsphinx-testdata, alsa-utils and asterisk-core-sounds-en-wav")
        }
        let r = try Tool.run("sox", [path, "-t", "f32", "-r", "16000", "-c", "1", "-"])
        guard r.status == 0 else { throw FixtureError("sox could not read \(path): \(r.stderrText)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// A conversation: each turn is one speaker's clips with 0.2 s between them, turns 0.4 s
    /// apart. Returns the samples and, per turn, its speaker and [start, end) in samples.
    static func conversation(_ turns: [(speaker: Int, clips: [String])]) throws -> (audio: [Float], truth: [(speaker: Int, range: Range<Int>)]) {
        var audio = [Float](repeating: 0, count: 8000)
        var truth: [(Int, Range<Int>)] = []
        for t in turns {
            let start = audio.count
            for (k, c) in t.clips.enumerated() {
                if k > 0 { audio += [Float](repeating: 0, count: 3200) }
                audio += try load(c)
            }
            truth.append((t.speaker, start..<audio.count))
            audio += [Float](repeating: 0, count: 6400)
        }
        return (audio, truth)
    }

    /// The ALSA prompts, the LibriVox utterances, the cards utterances, some of Allison's prompts.
    static let a = ["870", "890", "920", "880", "930"].map { librivox + $0 + ".wav" }
    static let b = ["Front_Center", "Front_Left", "Front_Right", "Rear_Center", "Rear_Left", "Rear_Right", "Side_Left", "Side_Right"].map { alsa + $0 + ".wav" }
    static let c = ["001", "002", "003", "004", "005"].map { cards + $0 + ".wav" }
    static let d = ["activated", "added", "agent-alreadyon", "agent-incorrect", "agent-loggedoff", "agent-loginok", "agent-newlocation", "agent-pass"].map { allison + $0 + ".wav" }

    /// 27 s: LibriVox reader, ALSA voice, reader, ALSA voice, reader.
    static func twoSpeakers() throws -> (audio: [Float], truth: [(speaker: Int, range: Range<Int>)]) {
        try conversation([(0, [a[0]]), (1, Array(b[0..<3])), (0, [a[1]]), (1, Array(b[3..<6])), (0, [a[2]])])
    }
}

/// A transform that passes the audio on and says it moved time by `map` (what `pauses` says after its cuts).
final class MapsTime: Transform, TimelineChanging {
    let timeMap: TimeMap
    init(_ map: TimeMap) { timeMap = map }
    func start(_ input: AudioFormat) throws -> AudioFormat { input }
    func process(_ block: inout AudioBlock) throws {}
    func finish(_ block: inout AudioBlock) throws { block.frames = 0 }
}

@Suite struct SpeakersStageTests {
    struct Turn: Decodable { var start: Double; var end: Double; var speaker: String; var confidence: Double
                             var stream_start: Double?; var stream_end: Double? }

    /// Runs the tap alone on `x` (16 kHz mono) and reads back its JSON and RTTM.
    static func run(_ x: [Float], rate: Int = 16000, _ config: SpeakersConfig, block: Int = 4096,
                    maps: [TimeMap] = []) throws -> (turns: [Turn], rttm: String, files: [ProducedFile]) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("segno-speakers-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let tap = try config.makeTap(paths: [dir + "/m.speakers.json", dir + "/m.rttm"],
                                     context: RecordingContext(sourcePath: "/in/talk one.wav", relativePath: "talk one.wav", modified: Date(), outputRoot: dir))
        let moves: [ChainElement] = maps.map { .transform(MapsTime($0)) }
        let files = try StageChain(elements: moves + [.tap(tap)], blockFrames: block).run(decoder: MemoryDecoder(x, channels: 1, rate: rate))
        let turns = try JSONDecoder().decode([Turn].self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/m.speakers.json")))
        return (turns, (try? String(contentsOfFile: dir + "/m.rttm", encoding: .utf8)) ?? "", files.flatMap { $0 })
    }

    static func config(count: Int? = nil, minTurn: Double = SpeakersConfig.standardMinTurn) -> SpeakersConfig {
        SpeakersConfig(path: try! PathTemplate(SpeakersConfig.defaultPath), rttm: try! PathTemplate(SpeakersConfig.defaultRTTM), count: count, minTurn: minTurn)
    }

    /// The share of the true speech (every sample of each turn, silence inside it included) that the
    /// turns give to the right speaker, under the best one-to-one mapping of labels to speakers.
    static func accuracy(_ turns: [Turn], truth: [(speaker: Int, range: Range<Int>)]) -> Double {
        let labels = Array(Set(turns.map(\.speaker))).sorted()
        let speakers = Array(Set(truth.map(\.speaker))).sorted()
        // overlap[label][speaker] in seconds
        var overlap = [[Double]](repeating: [Double](repeating: 0, count: speakers.count), count: labels.count)
        for t in turns {
            for r in truth {
                let a = max(t.start, Double(r.range.lowerBound) / 16000), b = min(t.end, Double(r.range.upperBound) / 16000)
                if b > a { overlap[labels.firstIndex(of: t.speaker)!][speakers.firstIndex(of: r.speaker)!] += b - a }
            }
        }
        func best(_ l: Int, _ used: Set<Int>) -> Double {
            guard l < labels.count else { return 0 }
            var m = best(l + 1, used)
            for s in speakers.indices where !used.contains(s) { m = max(m, overlap[l][s] + best(l + 1, used.union([s]))) }
            return m
        }
        let total = truth.reduce(0.0) { $0 + Double($1.range.count) / 16000 }
        return best(0, []) / total
    }

    @Test func twoRealSpeakersAreFoundWithTheirChangePoints() throws {
        let (audio, truth) = try Voices.twoSpeakers()
        let r = try Self.run(audio, Self.config())
        #expect(Set(r.turns.map(\.speaker)).count == 2, "\(r.turns)")
        let acc = Self.accuracy(r.turns, truth: truth)
        #expect(acc >= 0.9, "\(acc)")
        // Every change of speaker is within 0.75 s (the window hop) of a true change.
        let trueChanges = truth.dropFirst().map { Double($0.range.lowerBound) / 16000 }
        let found = zip(r.turns, r.turns.dropFirst()).filter { $0.speaker != $1.speaker }.map { $1.start }
        #expect(found.count == trueChanges.count, "\(found) vs \(trueChanges)")
        for (f, t) in zip(found, trueChanges) { #expect(abs(f - t) <= 0.75, "change at \(f), truly at \(t)") }
        // RTTM: one line per turn, on the file id, with the JSON's times.
        let lines = r.rttm.split(separator: "\n")
        #expect(lines.count == r.turns.count)
        for (l, t) in zip(lines, r.turns) {
            let f = l.split(separator: " ")
            #expect(f.count == 10 && f[0] == "SPEAKER" && f[1] == "talk_one" && f[7] == Substring(t.speaker))
            #expect(abs(Double(f[3])! - t.start) < 0.002 && abs(Double(f[4])! - (t.end - t.start)) < 0.002)
        }
        #expect(r.files.first?.values["speakers"] == "2")
        #expect(r.turns.allSatisfy { $0.confidence > 0.5 && $0.confidence <= 1 && $0.stream_start == nil })
    }

    @Test func oneVoiceStaysOneSpeaker() throws {
        let (audio, _) = try Voices.conversation([(0, Array(Voices.a))])
        let r = try Self.run(audio, Self.config())
        #expect(Set(r.turns.map(\.speaker)) == ["speaker-1"], "\(r.turns)")
        let alsa = try Voices.conversation([(0, Voices.b)])
        #expect(Set(try Self.run(alsa.audio, Self.config()).turns.map(\.speaker)).count == 1)
    }

    @Test func threeRealSpeakers() throws {
        let (audio, truth) = try Voices.conversation([
            (0, [Voices.a[0]]), (1, Array(Voices.d[0..<4])), (2, Array(Voices.b[0..<3])), (0, [Voices.a[1]]),
            (1, Array(Voices.d[4..<8])), (2, Array(Voices.b[3..<6])),
        ])
        let r = try Self.run(audio, Self.config())
        #expect(Set(r.turns.map(\.speaker)).count == 3, "\(r.turns)")
        #expect(Self.accuracy(r.turns, truth: truth) >= 0.85)
    }

    @Test func aGivenCountIsKept() throws {
        let (audio, truth) = try Voices.twoSpeakers()
        let one = try Self.run(audio, Self.config(count: 1))
        #expect(Set(one.turns.map(\.speaker)).count == 1)
        let two = try Self.run(audio, Self.config(count: 2))
        #expect(Set(two.turns.map(\.speaker)).count == 2)
        #expect(Self.accuracy(two.turns, truth: truth) >= 0.9)
        let (single, _) = try Voices.conversation([(0, Array(Voices.a))])
        // Told there are three, it splits one voice three ways: the count is obeyed, not second-guessed.
        #expect(Set(try Self.run(single, Self.config(count: 3)).turns.map(\.speaker)).count == 3)
    }

    @Test func noisyConversationAt10dB() throws {
        let (clean, truth) = try Voices.twoSpeakers()
        let speechRMS = (clean.reduce(0.0) { $0 + Double($1 * $1) } / Double(clean.count)).squareRoot()
        let noise = Speech.noise(frames: clean.count, rms: speechRMS / pow(10, 10.0 / 20), seed: 5)
        let r = try Self.run(zip(clean, noise).map { $0 + $1 }, Self.config())
        #expect(Set(r.turns.map(\.speaker)).count == 2, "\(r.turns)")
        #expect(Self.accuracy(r.turns, truth: truth) >= 0.85)
    }

    /// One helper per worker: a second recording of the same stage reuses the first's helper
    /// (the weights are read once), and gets the same answer.
    @Test func theHelperIsReused() throws {
        let (audio, _) = try Voices.twoSpeakers()
        let config = Self.config()
        let a = try Self.run(audio, config), b = try Self.run(audio, config)
        #expect(config.helpers.started == 1)
        #expect(a.rttm == b.rttm)
    }

    @Test func blockSizeChangesNothing() throws {
        let (audio, _) = try Voices.twoSpeakers()
        let a = try Self.run(audio, Self.config(), block: 7), b = try Self.run(audio, Self.config(), block: 4096)
        #expect(a.rttm == b.rttm && !a.rttm.isEmpty)
    }

    /// At 44.1 kHz stereo the tap downmixes and resamples: the same speakers.
    @Test func otherRatesAndChannels() throws {
        let (audio, truth) = try Voices.twoSpeakers()
        let r = try ProcessRunner.tool("sox", ["-t", "f32", "-r", "16000", "-c", "1", "-", "-t", "f32", "-r", "44100", "-c", "2", "-"],
                                       stdin: audio.withUnsafeBytes { Data($0) })
        let stereo = r.stdoutData.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("segno-speakers-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let tap = try Self.config().makeTap(paths: [dir + "/s.json"], context: RecordingContext(sourcePath: "/s.wav", relativePath: "s.wav", modified: Date(), outputRoot: dir))
        _ = try StageChain(elements: [.tap(tap)]).run(decoder: MemoryDecoder(stereo, channels: 2, rate: 44100))
        let turns = try JSONDecoder().decode([Turn].self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/s.json")))
        #expect(Set(turns.map(\.speaker)).count == 2)
        #expect(Self.accuracy(turns, truth: truth) >= 0.9)
    }

    /// After a stage that moved time (a cut of 2 s at 3 s of the source), the turns are stored in
    /// source time with the stream's times beside them, and the RTTM is on the source timeline.
    @Test func turnsAreStoredInSourceTime() throws {
        let (audio, _) = try Voices.twoSpeakers()
        let map = TimeMap(pieces: [TimeMap.Piece(inputStart: 0, inputEnd: 3, outputStart: 0),
                                   TimeMap.Piece(inputStart: 5, inputEnd: 100, outputStart: 3)])
        let r = try Self.run(audio, Self.config(), maps: [map])
        #expect(!r.turns.isEmpty)
        for t in r.turns {
            let ss = try #require(t.stream_start), se = try #require(t.stream_end)
            #expect(abs(t.start - map.toInput(ss)) < 0.002 && abs(t.end - map.toInput(se)) < 0.002)
            if ss > 3.01 { #expect(abs(t.start - (ss + 2)) < 0.002) }
        }
        let first = try #require(r.rttm.split(separator: "\n").last?.split(separator: " "))
        #expect(abs(Double(first[3])! - r.turns.last!.start) < 0.002)
    }

    @Test func clusteringStopsAtTheThresholdOrTheCount() {
        // Three tight groups of unit vectors along three axes, with a little spread.
        func v(_ axis: Int, _ k: Int) -> [Float] {
            var x = [Float](repeating: 0, count: 8)
            x[axis] = 1; x[(axis + 3) % 8] = 0.1 * Float(k % 3)
            let n = x.reduce(0) { $0 + $1 * $1 }.squareRoot()
            return x.map { $0 / n }
        }
        let e = (0..<5).map { v(0, $0) } + (0..<5).map { v(1, $0) } + (0..<5).map { v(2, $0) } + (0..<2).map { v(0, $0) }
        let auto = Diarizer.cluster(e, count: nil)
        #expect(auto == [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 0, 0])
        #expect(Set(Diarizer.cluster(e, count: 2)).count == 2)
        #expect(Set(Diarizer.cluster(e, count: 1)) == [0])
        // A threshold above every within-group similarity leaves every window alone.
        #expect(Set(Diarizer.cluster(e, count: nil, threshold: 1.01)).count == e.count)
        // A window unlike the rest makes a speaker of its own when clustered; left out of the
        // clustering (a short window), it goes to the nearest centroid.
        var odd = v(5, 0)
        odd[0] = 0.5
        let withOdd = e + [odd]
        #expect(Set(Diarizer.cluster(withOdd, count: nil)).count == 4)
        let left = Diarizer.cluster(withOdd, count: nil, clusterable: withOdd.indices.map { $0 != e.count })
        #expect(Set(left).count == 3 && left.last == 0)
    }

    @Test func shortTurnsGoToTheirNeighbour() {
        // Windows every 0.75 s over 0…6 s of speech; one window (2.25 s) labelled 1 among 0s.
        let rate = 16000
        let speech = [0..<(6 * rate)]
        let windows = Diarizer.windows(speech: speech, rate: rate)
        #expect(windows.first == 0..<24000 && windows.count == 7)
        var labels = [Int](repeating: 0, count: windows.count)
        labels[3] = 1
        let e = labels.map { $0 == 0 ? [Float(1), 0] : [Float(0), 1] }
        let kept = Diarizer.turns(speech: speech, windows: windows, labels: labels, embeddings: e, rate: rate, minTurn: 0.5)
        #expect(kept.map(\.speaker) == [0, 1, 0])
        #expect(abs(kept[1].start - 2.625) < 0.01 && abs(kept[1].end - 3.375) < 0.01)
        let merged = Diarizer.turns(speech: speech, windows: windows, labels: labels, embeddings: e, rate: rate, minTurn: 1)
        #expect(merged.map(\.speaker) == [0] && merged[0].start == 0 && merged[0].end == 6)
    }

    @Test func optionsAreChecked() throws {
        let registry = StageRegistry([StageRegistry.Entry(SpeakersConfig.declaration, SpeakersConfig.parse)])
        func load(_ yaml: String) throws -> SpeakersConfig {
            let spec = try SpecLoader.parse("version: 1\ninput: { root: in }\noutput: { root: out }\nstages:\n  - " + yaml + "\n",
                                            file: "spec.yaml", baseDirectory: "/base", registry: registry, environment: [:])
            return try #require(spec.stages.first?.config as? SpeakersConfig)
        }
        #expect(try load("speakers: true").count == nil)
        #expect(try load("speakers: 3").count == 3)
        let full = try load("speakers: { speakers: 2, min_turn: 0.5s, rttm: false, from: source, vad: webrtc }")
        #expect(full.count == 2 && full.minTurn == 0.5 && full.rttm == nil && full.observesSource && full.engine == .webrtc)
        #expect(try load("speakers: { speakers: auto }").count == nil)
        for bad in ["speakers: 0", "speakers: false", "speakers: { speakers: 21 }", "speakers: { min_turn: 2m }",
                    "speakers: { rttm: true }", "speakers: { from: there }", "speakers: { speaker: 2 }"] {
            #expect(throws: SpecError.self, "\(bad)") { try load(bad) }
        }
        #expect(try load("speakers: { from: here }").observesSource == false && load("speakers: {}").observesSource == false)
        let there = #expect(throws: SpecError.self) { try load("speakers: { from: there }") }
        #expect(there.map { "\($0)" }?.contains("from is source (the recording as decoded) or here (the stream at this place), not \"there\"") == true,
                "\(String(describing: there))")
    }
}

/// Without the speech environment the stage says what is missing before any audio (`validate`),
/// and a tap that starts anyway fails its recording with the install hint.
@Suite struct SpeakersInstallTests {
    @Test func missingPartsAreNamed() throws {
        let empty = SpeechLocator(roots: [FileManager.default.temporaryDirectory.appendingPathComponent("segno-none-\(UUID().uuidString)").path])
        let config = SpeakersConfig(path: try PathTemplate(SpeakersConfig.defaultPath), rttm: nil, locator: empty)
        let lines = config.missingParts()
        #expect(lines.contains { $0.contains("resemblyzer/pretrained.pt") && $0.contains("PyPI resemblyzer") && $0.contains("make deps") })
        #expect(lines.contains { $0.contains("segno-speakers helper") })
        #expect(lines.contains { $0.contains("silero_vad.onnx") })
        #expect(SpeakersStageTests.config().missingParts().isEmpty, "the standard environment has everything (make deps)")
        let tap = try config.makeTap(paths: ["/tmp/x.json"], context: RecordingContext(sourcePath: "/a.wav", relativePath: "a.wav", modified: Date(), outputRoot: "/tmp"))
        #expect { try tap.start(AudioFormat(sampleRate: 16000, channels: 1)) } throws: { e in
            guard let s = e as? SpeechError, case .recording(let file, .missing) = s else { return false }
            return file == "a.wav" && s.description.contains("make deps")
        }
    }
}
