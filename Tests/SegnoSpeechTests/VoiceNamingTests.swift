import Foundation
import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoSpeech
import Synchronization
import Testing

/// A `VoiceStore` in memory, for the tap and the re-labelling without a database.
final class MemoryVoices: VoiceStore {
    let prints = Mutex<[VoicePrint]>([])
    let kept = Mutex<[String: KeptSpeakers]>([:])
    let relabels = Mutex<[(path: String, digest: String, hash: Data, size: Int64)]>([])

    func voicePrints() throws -> [VoicePrint] { prints.withLock { $0.sorted { $0.name < $1.name } } }
    func enroll(_ p: VoicePrint) throws { prints.withLock { $0.removeAll { $0.name == p.name }; $0.append(p) } }
    func forgetVoice(_ name: String) throws -> Bool { prints.withLock { l in let n = l.count; l.removeAll { $0.name == name }; return l.count < n } }
    /// The position of the last row kept, and the lowest label never given (one tap's).
    let ledger = Mutex<(position: Int64, next: Int)>((0, 1))

    func keptLedger(stage: String) throws -> KeptLedger {
        KeptLedger(kept: kept.withLock { $0.values.filter { $0.stage == stage }.sorted { $0.path < $1.path } }, position: ledger.withLock { $0.position })
    }
    func keep(stage: String, after position: Int64, _ decide: ([KeptSpeakers], Int) throws -> KeptSpeakers) throws -> Int64 {
        let (last, next) = ledger.withLock { $0 }
        let s = try decide([], next)
        kept.withLock { $0[s.path] = s }
        return ledger.withLock { l in
            l = (last + 1, max(next, (s.voices.map(\.label).max() ?? 0) + 1))
            return l.position
        }
    }
    func relabelled(path: String, stage: String, digest: String, steps: [RelabelledStep], spoken: String?) throws {
        kept.withLock { $0[path]?.digest = digest }
        relabels.withLock { r in for s in steps where s.stage == stage { r.append((path, digest, s.outputHash, s.outputSize)) } }
    }
}

@Suite struct VoiceNamingTests {
    @Test func namesAreCheckedBeforeAnythingIsEnrolled() {
        for ok in ["Ann", "Dr. O'Neil-Smith", "서울 2", "Zoë_3", "a"] { #expect(VoicePrint.check(ok) == nil, "\(ok)") }
        for (bad, why) in [("", "empty"), (" Ann", "begins"), ("Ann ", "end with a space"), ("A/B", "U+002F"), ("A\u{7}", "U+0007"),
                           ("<v Ann>", "U+003C"), ("speaker-12", "label"), ("SPEAKER-1", "label"), (String(repeating: "x", count: 65), "at most")] {
            #expect(VoicePrint.check(bad)?.contains(why) == true, "\(bad): \(VoicePrint.check(bad) ?? "allowed")")
        }
        #expect(VoicePrint.check("speaker-one") == nil)
    }

    @Test func eachVoiceTakesTheMostSimilarCandidateAboveTheThreshold() {
        let x: [Float] = [1, 0, 0], y: [Float] = [0, 1, 0], xy: [Float] = [0.9, 0.436, 0]
        // xy is like x (0.9) and y (0.436): at 0.8 it is x's, at 0.95 nobody's; x is x's too.
        #expect(VoiceBook.match([xy, x], [x, y], threshold: 0.8) == [0, 0])
        #expect(VoiceBook.match([xy, x], [x, y], threshold: 0.95) == [nil, 0])
        #expect(VoiceBook.match([y, x], [x, y], threshold: 0.8) == [1, 0])
        #expect(VoiceBook.match([[]], [x], threshold: 0.8) == [nil])
        #expect(VoiceBook.match([x], [], threshold: 0.8) == [nil])
    }

    @Test func theBookGivesLabelsAcrossRecordingsAndNames() throws {
        let book = VoiceBook()
        let store = MemoryVoices()
        let x: [Float] = [1, 0, 0], y: [Float] = [0, 1, 0], z: [Float] = [0, 0, 1]
        var written: [[Int]] = []
        let keep = { (path: String, voices: [(centroid: [Float], seconds: Double)]) in
            try book.keep(path: path, voices: voices) { labels, _ in written.append(labels); return "{}" }
        }
        #expect(try keep("early", [(x, 1)]) == nil, "not prepared")
        #expect(written.isEmpty)
        book.prepare(store: store, stage: "s", prints: [VoicePrint(name: "Ann", vector: y, files: 1, seconds: 9, enrolledAt: 0)],
                     ledger: KeptLedger(kept: [KeptSpeakers(path: "old", stage: "s", voices: [KeptVoice(label: 4, seconds: 3, centroid: x)], turns: "", digest: "")], position: 0))
        let a = try #require(try keep("a", [(y, 5), (x, 2)]))
        #expect(a.labels == [5, 4] && a.names == ["Ann", nil])
        let b = try #require(try keep("b", [(z, 1), (y, 1)]))
        #expect(b.labels == [6, 5] && b.names == [nil, "Ann"])
        // The files were written with the labels the state kept.
        #expect(written == [[5, 4], [6, 5]])
        #expect(store.kept.withLock { $0["b"]?.voices.map(\.label) } == [6, 5])
    }

    @Test func keptTurnsWriteTheSameFilesWithNamesAdded() throws {
        let turns = [SpeakerTurn(start: 0.5, end: 3, speaker: 0, confidence: 0.9), SpeakerTurn(start: 3.2, end: 6, speaker: 1, confidence: 0.8)]
        var files = SpeakerFiles(turns: turns, toSource: { $0 * 2 }, movedTime: true, recording: "a_b")
        files.labels = [0: "speaker-7", 1: "speaker-2"]
        let back = try #require(SpeakerFiles(kept: files.keptText))
        #expect(back.json == files.json && back.rttm == files.rttm)
        var named = back
        named.names[0] = "Mary Ann"
        let json = try #require(try JSONSerialization.jsonObject(with: Data(named.json.utf8)) as? [[String: Any]])
        #expect(json[0]["name"] as? String == "Mary Ann" && json[0]["speaker"] as? String == "speaker-7" && json[1]["name"] == nil)
        #expect(json[0]["start"] as? Double == 1 && json[0]["stream_start"] as? Double == 0.5)
        #expect(named.rttm.split(separator: "\n").map { $0.split(separator: " ")[7] } == ["Mary_Ann", "speaker-2"])
        #expect(SpeakerFiles(kept: "{\"recording\":\"x\",\"labels\":[],\"turns\":[[1,2]]}") == nil)
    }

    /// Runs the tap alone on `x` (16 kHz mono): its JSON and RTTM.
    static func run(_ x: [Float], _ config: SpeakersConfig) throws -> (json: String, rttm: String) {
        let dir = try TempDir()
        let tap = try config.makeTap(paths: [dir["m.speakers.json"], dir["m.rttm"]],
                                     context: RecordingContext(sourcePath: "/in/talk one.wav", relativePath: "talk one.wav", modified: Date(), outputRoot: dir.path))
        _ = try StageChain(elements: [.tap(tap)], blockFrames: 4096).run(decoder: MemoryDecoder(x, channels: 1, rate: 16000))
        return (try String(contentsOfFile: dir["m.speakers.json"], encoding: .utf8), try String(contentsOfFile: dir["m.rttm"], encoding: .utf8))
    }

    /// The windows go to the helper while the audio flows: the buffer stays at a few seconds on
    /// a recording of several minutes, and the windows are those of the whole recording's speech.
    @Test func windowsStreamWithABoundedBuffer() throws {
        let (one, _) = try Voices.twoSpeakers()
        var audio: [Float] = []
        for _ in 0..<8 { audio += one }   // about 3.6 minutes
        let config = SpeakersStageTests.config()
        let helper = try config.helpers.take(locator: config.locator)
        let windows = SpeakerWindows(detector: try config.engine.make(locator: config.locator), helper: helper)
        for a in stride(from: 0, to: audio.count, by: 4096) {
            try audio[a..<min(a + 4096, audio.count)].withUnsafeBufferPointer { try windows.feed($0) }
        }
        let embeddings = try windows.finish().get()
        config.helpers.checkIn(helper)
        #expect(embeddings.count == windows.windows.count && embeddings.count > 100)
        #expect(windows.windows == Diarizer.windows(speech: windows.speech, rate: 16000))
        #expect(windows.largestBuffer < 16000 * 20, "\(Double(windows.largestBuffer) / 16000) s held of \(Double(audio.count) / 16000) s")
    }

    /// A voice enrolled from other clips names its turns in a conversation; the other voice stays unnamed.
    @Test func anEnrolledVoiceNamesItsTurnsAndOnlyThem() throws {
        let allison = ["call-forwarding", "call-waiting", "cannot-complete-as-dialed", "check-number-dial-again", "conf-adminmenu", "conf-errormenu"]
            .map { Voices.allison + $0 + ".wav" }
        let (enrolment, _) = try Voices.conversation([(0, allison)])
        let config = SpeakersStageTests.config()
        let print = try VoiceEnroller(helpers: config.helpers).enroll(name: "Allison", files: [("allison.wav", { MemoryDecoder(enrolment, channels: 1, rate: 16000) })])
        #expect(print.files == 1 && print.seconds > 8 && print.vectors.count == 1 + EnrolmentNoise.conditions.count)
        let store = MemoryVoices()
        try store.enroll(print)
        _ = try config.prepareVoices(store: store, stage: "speakers:x", outputRoot: "/nowhere") { _ in nil }
        let (audio, truth) = try Voices.conversation([(0, [Voices.a[0]]), (1, Array(Voices.d[0..<4])), (0, [Voices.a[1]]), (1, Array(Voices.d[4..<8]))])
        let r = try Self.run(audio, config)
        let json = try JSONSerialization.jsonObject(with: Data(r.json.utf8)) as? [[String: Any]] ?? []
        // Allison speaks in truth turns 1 and 3; every second of hers is named, none of the reader's.
        for (k, t) in truth.enumerated() {
            let named = json.filter { ($0["name"] as? String) == "Allison" }.map { (($0["start"] as? Double) ?? 0, ($0["end"] as? Double) ?? 0) }
            let overlap = named.reduce(0.0) { $0 + max(0, min($1.1, Double(t.range.upperBound) / 16000) - max($1.0, Double(t.range.lowerBound) / 16000)) }
            let length = Double(t.range.count) / 16000
            if k % 2 == 1 { #expect(overlap >= 0.9 * length, "turn \(k): \(overlap) of \(length) s named") } else { #expect(overlap <= 0.1 * length, "turn \(k)") }
        }
        #expect(r.rttm.contains(" Allison <NA> <NA>"))
        #expect(store.kept.withLock { $0["talk one.wav"]?.voices.count } == 2)
    }
}
