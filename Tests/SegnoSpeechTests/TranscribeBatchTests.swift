import Foundation
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoSpeech
import Synchronization
import Testing

/// Short recordings transcribed in batches (decision 0088): the packing, the split back into each
/// recording's own transcript, the batcher on a worker pool that parks, and the real helper on the
/// five LibriVox utterances with and without batches.
@Suite struct TranscribeBatchTests {
    static let references: [(file: String, text: String)] = [
        ("sense_and_sensibility_01_austen_64kb-0870.wav", "and mister john dashwood had then leisure to consider how much there might be prudently in his power to do for them"),
        ("sense_and_sensibility_01_austen_64kb-0880.wav", "he was not an ill disposed young man"),
        ("sense_and_sensibility_01_austen_64kb-0890.wav", "unless to be rather cold hearted and rather selfish is to be ill disposed"),
        ("sense_and_sensibility_01_austen_64kb-0920.wav", "had he married a more a amiable woman he might have been made still more respectable than he was"),
        ("sense_and_sensibility_01_austen_64kb-0930.wav", "he might even have been made amiable himself"),
    ]

    static func words(_ s: String) -> [String] { s.lowercased().split { !$0.isLetter && $0 != "'" }.map(String.init) }

    @Test func packingPutsRecordingsInWindowsWithSilenceBetween() {
        let durations = [5.0, 7.1, 3.0, 6.05, 4.2, 7.0, 2.5, 14.0, 0.0]
        let p = TranscriptPacking(durations: durations)
        #expect(p.spans.count == durations.count)
        // Windows follow each other from 0 to the end of the stream, none longer than 30 s.
        #expect(p.clips.first?.start == 0)
        for (a, b) in zip(p.clips, p.clips.dropFirst()) { #expect(a.end == b.start) }
        #expect(abs((p.clips.last?.end ?? 0) * 16000 - Double(p.frames)) < 1)
        for c in p.clips { #expect(c.end - c.start <= TranscriptPacking.window + 1e-9, "\(c)") }
        for (i, s) in p.spans.enumerated() {
            #expect(abs(s.end - s.start - durations[i]) < 1e-9)
            // Each recording lies in one window, half a gap from its edges at least.
            let inside = p.clips.filter { $0.start + TranscriptPacking.gap / 2 - 1e-9 <= s.start && s.end <= $0.end - TranscriptPacking.gap / 2 + 1e-9 }
            #expect(inside.count == 1, "recording \(i) at \(s) in \(p.clips)")
        }
        // A full gap of silence between two recordings of a window.
        for (a, b) in zip(p.spans, p.spans.dropFirst()) { #expect(b.start - a.end >= TranscriptPacking.gap - 1e-9) }
        // The stream holds each recording's samples at its span, silence elsewhere.
        let recordings = durations.enumerated().map { i, d in [Float](repeating: Float(i + 1), count: Int(d * 16000)) }
        let stream = p.stream(recordings)
        #expect(stream.count == p.frames)
        for (i, s) in p.spans.enumerated() where durations[i] > 0 {
            let at = TranscriptPacking.frame(s.start)
            #expect(stream[at] == Float(i + 1) && stream[at + recordings[i].count - 1] == Float(i + 1))
            #expect(stream[at - 1] == 0 && stream[at + recordings[i].count] == 0)
        }
        #expect(stream.filter { $0 != 0 }.count == recordings.reduce(0) { $0 + $1.count })
    }

    @Test func eachWordGoesBackToItsOwnRecordingInItsOwnTimeline() {
        let durations = [4.0, 3.0, 5.0]
        let p = TranscriptPacking(durations: durations)
        // One segment over the whole window (as the helper's batch answer has), words of the three
        // recordings at known places of their own timelines; one word straddles the silence after
        // the first recording a little (its middle is still inside the first).
        func word(_ r: Int, _ start: Double, _ end: Double, _ text: String) -> Transcript.Word {
            Transcript.Word(start: p.spans[r].start + start, end: p.spans[r].start + end, text: text, confidence: 0.9)
        }
        let words = [word(0, 0.2, 0.6, "alpha"), word(0, 3.5, 4.3, "bravo"), word(1, 0.1, 0.5, "charlie"), word(1, 2.0, 2.9, "delta"),
                     word(2, 0.0, 0.4, "echo"), word(2, 4.5, 5.0, "foxtrot")]
        let packed = Transcript(language: "en", languageConfidence: 1, duration: Double(p.frames) / 16000,
                                segments: [Transcript.Segment(start: 0, end: Double(p.frames) / 16000, text: "…", confidence: 0.9, words: words)])
        let own = p.split(packed, durations: durations)
        #expect(own.map { $0.segments.flatMap(\.words).map(\.text) } == [["alpha", "bravo"], ["charlie", "delta"], ["echo", "foxtrot"]])
        #expect(own.map(\.duration) == durations)
        // A word written without a space before it in the window's text stays joined.
        #expect(TranscriptPacking.spacedBefore(["He", "was", "ill", "-disposed."], in: "He was ill-disposed.") == [true, true, true, false])
        #expect(zip(own[0].segments.flatMap(\.words).map(\.start), [0.2, 3.5]).allSatisfy { abs($0 - $1) < 1e-9 })
        #expect(abs(own[1].segments[0].words[1].end - 2.9) < 1e-9)
        // Times stay in the recording's own timeline: "bravo" ran 0.3 s past the first's end.
        #expect(own[0].segments[0].words[1].end == 4.0)
        for t in own {
            #expect(t.segments.count == 1)
            for s in t.segments {
                #expect(s.text == s.words.map(\.text).joined(separator: " "))
                #expect(s.start == s.words.first?.start && s.end == s.words.last?.end)
                for w in s.words { #expect(w.start >= 0 && w.end <= t.duration && w.start <= w.end) }
            }
        }
    }

    /// Ten recordings on a pool of two workers: the batch gathers more members than there are
    /// workers (the parked ones are stood in for), runs fewer times than there are recordings,
    /// and each member gets its own transcript; a batch that fails tells every member to go alone.
    @Test(arguments: [false, true]) func theBatcherGathersParkedRecordingsAndIsolatesAFailure(fails: Bool) {
        let batcher = TranscribeBatcher(windows: 4, maxWait: 3)
        let outcomes = Mutex<[Int: String]>([:])
        let sizes = Mutex<[Int]>([])
        let next = Mutex(0)
        let parking = WorkerParking(workers: 2)
        WorkerPool.run(workers: 2, shouldStop: { false }, next: { next.withLock { n -> Int? in defer { n += 1 }; return n < 10 ? n : nil } },
                       parking: parking) { i in
            // A recording of 3 s whose samples are its number: the fake model "hears" that number.
            let samples = [Float](repeating: Float(i + 1), count: 48000)
            let r = batcher.transcribe(samples, parking: parking) { (audio, packing) throws(SpeechError) -> Transcript in
                sizes.withLock { $0.append(packing.spans.count) }
                if fails { throw .failed(engine: "transcribe", message: "the helper failed (killed by signal 9)") }
                let words = packing.spans.map { s in
                    Transcript.Word(start: s.start + 0.5, end: s.start + 1, text: "n\(Int(audio[TranscriptPacking.frame(s.start) + 10]))", confidence: 1)
                }
                return Transcript(language: "en", languageConfidence: 1, duration: Double(audio.count) / 16000,
                                  segments: [Transcript.Segment(start: 0, end: Double(audio.count) / 16000, text: "", confidence: 1, words: words)])
            }
            let said: String
            switch r {
            case .transcript(let t): said = t.segments.flatMap(\.words).map { "\($0.text)@\($0.start)" }.joined(separator: " ")
            case .alone: said = "alone"
            }
            outcomes.withLock { $0[i] = said }
        }
        let got = outcomes.withLock { $0 }
        #expect(got.count == 10)
        for i in 0..<10 { #expect(got[i] == (fails ? "alone" : "n\(i + 1)@0.5"), "recording \(i): \(got[i] ?? "nothing")") }
        let ran = sizes.withLock { $0 }
        #expect(ran.reduce(0, +) == 10)
        #expect(ran.count == batcher.batchesRun)
        #expect(ran.count < 10 && (ran.max() ?? 0) > 2, "batch sizes \(ran)")
        #expect(parking.parkedCount == 0)
    }

    /// Runs a `transcribe` tap per recording on a pool of two workers, as `segno run` does (the
    /// pool's parking in the context); returns each recording's transcript JSON.
    static func runOnPool(_ recordings: [[Float]], config: TranscribeConfig) throws -> [[String: Any]] {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("segno-batch-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let parking = WorkerParking(workers: 2)
        let next = Mutex(0)
        let failures = Mutex<[String]>([])
        let written = Mutex<[Int: String]>([:])
        WorkerPool.run(workers: 2, shouldStop: { false }, next: { next.withLock { n -> Int? in defer { n += 1 }; return n < recordings.count ? n : nil } },
                       parking: parking) { i in
            do {
                var context = RecordingContext(sourcePath: dir + "/memo\(i).wav", relativePath: "memo\(i).wav", modified: Date(), outputRoot: dir)
                context.parking = parking
                let paths = try config.resolvePaths(context).map { dir + "/" + $0 }
                let tap = try config.makeTap(paths: paths, context: context)
                let files = try StageChain(elements: [.tap(tap)]).run(decoder: MemoryDecoder(recordings[i], channels: 1, rate: 16000))
                if let json = files.flatMap({ $0 }).first(where: { $0.path.hasSuffix(".json") }) { written.withLock { $0[i] = json.path } }
            } catch {
                failures.withLock { $0.append("memo\(i): \(error)") }
            }
        }
        let failed = failures.withLock { $0 }
        #expect(failed.isEmpty, "\(failed)")
        return try recordings.indices.map { i in
            let data = try Data(contentsOf: URL(fileURLWithPath: written.withLock { $0[i] } ?? dir + "/memo\(i).json"))
            return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        }
    }

    /// The five utterances with batches and without: each transcript is its own recording's —
    /// its words close to that recording's reference, no word that only a neighbour said, every
    /// time inside the recording's own length — and the two runs agree within a few words. A
    /// sixth recording holding a non-number sample is kept out of the batch (it would spoil its
    /// window's spectrum) and transcribed alone.
    @Test func batchAndNoBatchTranscriptsAreEachRecordingsOwn() throws {
        var recordings = try Self.references.map { try Speech.utterance($0.file) }
        var poisoned = recordings[1]
        poisoned[8000] = .nan
        recordings.append(poisoned)
        let batched = TranscribeConfig(path: try PathTemplate("{stem}"), formats: [.json], language: "en")
        let single = TranscribeConfig(path: try PathTemplate("{stem}"), formats: [.json], language: "en", batch: false)
        defer { batched.helpers.shutdown(); single.helpers.shutdown() }
        let a = try Self.runOnPool(recordings, config: batched)
        let b = try Self.runOnPool(Array(recordings.prefix(5)), config: single)
        #expect(batched.batcher.batchesRun >= 1 && batched.batcher.membersBatched == 5, "batches \(batched.batcher.batchesRun), members \(batched.batcher.membersBatched)")
        #expect(single.batcher.batchesRun == 0)
        for (i, ref) in Self.references.enumerated() {
            let duration = Double(recordings[i].count) / 16000
            let others = Set(Self.references.indices.filter { $0 != i }.flatMap { Self.words(Self.references[$0].text) })
                .subtracting(Self.words(ref.text)).filter { $0.count >= 5 }
            for (label, json) in [("batch", a[i]), ("no batch", b[i])] {
                let text = json["text"] as? String ?? ""
                let wer = TranscribeStageTests.wordErrorRate(text, reference: ref.text)
                #expect(wer <= 0.25, "\(label) \(i): \"\(text)\": word error \(wer)")
                let foreign = Self.words(text).filter { others.contains($0) }
                #expect(foreign.isEmpty, "\(label) \(i): \"\(text)\" has a neighbour's words \(foreign)")
                #expect(abs(((json["duration"] as? NSNumber)?.doubleValue ?? 0) - duration) < 0.01)
                let words = (json["segments"] as? [[String: Any]] ?? []).flatMap { $0["words"] as? [[String: Any]] ?? [] }
                #expect(words.count >= Self.words(ref.text).count - 2, "\(label) \(i): \(words.count) words")
                for w in words {
                    let s = (w["start"] as? NSNumber)?.doubleValue ?? -1, e = (w["end"] as? NSNumber)?.doubleValue ?? -1
                    #expect(s >= 0 && s <= e && e <= duration + 0.001, "\(label) \(i): word \(w) outside 0…\(duration)")
                }
                // The first word starts within the recording's first second (its own timeline,
                // not the packed stream's).
                #expect(((words.first?["start"] as? NSNumber)?.doubleValue ?? 99) < 1.0, "\(label) \(i)")
            }
            let agree = TranscribeStageTests.wordErrorRate(a[i]["text"] as? String ?? "", reference: b[i]["text"] as? String ?? "")
            #expect(agree <= 0.3, "recording \(i): batch \"\(a[i]["text"] ?? "")\" and no batch \"\(b[i]["text"] ?? "")\" differ by \(agree)")
        }
    }

    @Test func batchIsAnOptionThatTurnsItOff() throws {
        let on = try loadStages("- transcribe: { path: x, language: en }\n")[0] as! TranscribeConfig
        #expect(on.batch && on.batches)
        let off = try loadStages("- transcribe: { path: x, language: en, batch: off }\n")[0] as! TranscribeConfig
        #expect(!off.batch && !off.batches)
        // tiny.en is English-only: batched even with language auto; a multilingual model with
        // language auto detects each recording's language alone.
        #expect((try loadStages("- transcribe: { path: x }\n")[0] as! TranscribeConfig).batches)
        #expect(!(try loadStages("- transcribe: { path: x, model: base }\n")[0] as! TranscribeConfig).batches)
        #expect((try loadStages("- transcribe: { path: x, model: base, language: ko }\n")[0] as! TranscribeConfig).batches)
        #expect(throws: SpecError.self) { try loadStages("- transcribe: { path: x, batch: yes }\n") }
        // Not in the fingerprint: turning it off does not redo transcripts.
        #expect(on.canonical == off.canonical)
        #expect(TranscribeConfig.declaration.options.contains { $0.name == "batch" && $0.help.contains("off") })
    }
}
