import Foundation
import SegnoAudio
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
@testable import SegnoSpeech
import Testing

/// A long recording's transcription in chunks (decision 0098): where `TranscriptChunker` cuts,
/// that it loses and repeats nothing, and (through the real helper and tiny.en) that the chunks'
/// transcript is the same whether the helper overlaps the stream or not, and close to the whole
/// recording's.
@Suite struct TranscriptChunkTests {
    static let rate = 16000

    /// Noise with silent gaps (`gaps`: start second → length in seconds).
    static func noiseWithGaps(seconds: Double, gaps: [(Double, Double)]) -> [Float] {
        var x = Signal.noise(frames: Int(seconds * Double(rate)), amplitude: 0.2, seed: 3)
        for (at, length) in gaps {
            let a = Int(at * Double(rate)), b = min(x.count, a + Int(length * Double(rate)))
            for i in a..<b { x[i] = 0 }
        }
        return x
    }

    /// Feeds `x` in blocks of the sizes `blocks` cycles through; returns what was sent, chunk by chunk.
    static func chunks(_ x: [Float], rule: TranscriptChunking, blocks: [Int]) throws -> (chunks: [[Float]], starts: [Int]) {
        let chunker = TranscriptChunker(rule)
        var out: [[Float]] = [[]]
        var at = 0, k = 0
        try x.withUnsafeBufferPointer { p in
            while at < x.count {
                let n = min(blocks[k % blocks.count], x.count - at)
                try chunker.feed(UnsafeBufferPointer(rebasing: p[at..<(at + n)]), send: { out[out.count - 1] += $0 }, cut: { out.append([]) })
                at += n
                k += 1
            }
        }
        try chunker.finish(send: { out[out.count - 1] += $0 })
        return (out, chunker.starts)
    }

    static let small = TranscriptChunking(seconds: 10, lookBackSeconds: 4, tailSeconds: 2)

    @Test func cutsFallInThePausesAndNothingIsLostOrRepeated() throws {
        // Chunks of 10 s looked back 4 s: the first cut is in the gap at 7.5 s (the look-back is
        // 6…10 s), the second in the gap at 15 s (the next chunk starts in the first gap).
        let x = Self.noiseWithGaps(seconds: 31, gaps: [(7.5, 0.3), (15, 0.3), (4, 0.3)])
        let (chunks, starts) = try Self.chunks(x, rule: Self.small, blocks: [1366])
        #expect(chunks.flatMap { $0 } == x, "the chunks joined are the recording")
        #expect(chunks.count == starts.count && chunks.count >= 3)
        #expect(zip(chunks, starts).allSatisfy { c, s in c.count > 0 } && starts.first == 0)
        for k in 1..<starts.count { #expect(starts[k] == starts[k - 1] + chunks[k - 1].count) }
        // Each cut is inside a gap: the 0.2 s window of its middle is silent.
        for (k, gap) in [(1, 7.5), (2, 15.0)] {
            let s = Double(starts[k]) / Double(Self.rate)
            #expect(s >= gap + 0.1 && s <= gap + 0.2 + 1e-9, "cut \(k) at \(s) s, the gap at \(gap) s")
        }
        // No chunk is longer than the rule's length; none after the first shorter than its tail.
        for c in chunks.dropLast() { #expect(c.count <= 10 * Self.rate) }
        #expect(chunks.last!.count >= 2 * Self.rate)
    }

    @Test func theCutsDoNotDependOnTheBlockSizes() throws {
        let x = Self.noiseWithGaps(seconds: 40, gaps: [(8, 0.25), (16.5, 0.4), (26, 0.3), (33, 0.5)])
        let a = try Self.chunks(x, rule: Self.small, blocks: [1366])
        for blocks in [[1], [4096, 7, 160_000], [x.count]] where blocks != [1] || x.count < 700_000 {
            let b = try Self.chunks(x, rule: Self.small, blocks: blocks)
            #expect(b.starts == a.starts, "blocks \(blocks.prefix(3))")
            #expect(b.chunks.flatMap { $0 } == x)
        }
    }

    @Test func noCutLeavesALastChunkShorterThanItsTail() throws {
        // The quietest point of 6…10 s is the gap at 9.5 s: 11 s leaves 1.4 s after it (no cut),
        // 12 s leaves 2.4 s (a cut); a recording shorter than a chunk is never cut.
        let short = try Self.chunks(Self.noiseWithGaps(seconds: 11, gaps: [(9.5, 0.2)]), rule: Self.small, blocks: [4000])
        #expect(short.starts == [0] && short.chunks.count == 1)
        let long = try Self.chunks(Self.noiseWithGaps(seconds: 12, gaps: [(9.5, 0.2)]), rule: Self.small, blocks: [4000])
        #expect(long.starts.count == 2)
        #expect(long.chunks.last!.count >= 2 * Self.rate)
        let tiny = try Self.chunks(Self.noiseWithGaps(seconds: 9.9, gaps: []), rule: Self.small, blocks: [4000])
        #expect(tiny.starts == [0])
    }

    @Test func aJoinedTranscriptMovesEachChunksTimes() {
        let w = Transcript.Word(start: 1, end: 1.5, text: "a", confidence: 0.9)
        let one = Transcript(language: "en", languageConfidence: 1, duration: 290.5,
                             segments: [.init(start: 1, end: 2, text: "a", confidence: 0.9, words: [w])])
        let two = Transcript(language: "en", languageConfidence: 1, duration: 12,
                             segments: [.init(start: 0.5, end: 3, text: "b", confidence: 0.8, words: [.init(start: 0.5, end: 1, text: "b", confidence: 0.8)])])
        let t = Transcript.joined([one, two], starts: [0, 290.5])
        #expect(t.segments.map(\.start) == [1, 291])
        #expect(t.segments.map(\.end) == [2, 293.5])
        #expect(t.segments[1].words.map(\.start) == [291])
        #expect(t.duration == 302.5)
        #expect(t.language == "en")
    }

    /// 55 s of LibriVox speech (the five utterances, 0.6 s apart, twice), with their transcript.
    static func reading() throws -> (samples: [Float], text: String) {
        let names = ["0870", "0880", "0890", "0920", "0930"].map { "sense_and_sensibility_01_austen_64kb-\($0).wav" }
        let refs = try String(contentsOfFile: Speech.folder + "/transcription", encoding: .utf8).split(separator: "\n").map {
            $0.replacingOccurrences(of: "<s>", with: "").replacingOccurrences(of: "</s>", with: "").split(separator: "(")[0]
        }
        var x: [Float] = []
        for _ in 0..<2 {
            for n in names { x += try Speech.utterance(n) + [Float](repeating: 0, count: 9600) }
        }
        return (x, (refs + refs).joined(separator: " "))
    }

    /// The tap's JSON for `x`, with `chunking` (nil: whole), overlapping its helper or not.
    static func transcribe(_ x: [Float], chunking: TranscriptChunking?, overlap: Bool, config: TranscribeConfig) throws -> (json: String, starts: [Int]) {
        var config = config
        config.chunking = chunking
        let dir = try TempDir()
        let context = RecordingContext(sourcePath: dir.path + "/talk.wav", relativePath: "talk.wav", modified: Date(), outputRoot: dir.path)
        let paths = try config.resolvePaths(context).map { dir.path + "/" + $0 }
        let tap = try config.makeTap(paths: paths, context: context) as! TranscribeTap
        if overlap { tap.overlap() }
        let files = try StageChain(elements: [.tap(tap)]).run(decoder: MemoryDecoder(x, channels: 1, rate: rate))
        let path = try #require(files.flatMap { $0 }.first?.path)
        return (try String(contentsOfFile: path, encoding: .utf8), tap.chunkStarts)
    }

    @Test func chunksTranscribeTheSameOverlappedOrNotAndCloseToTheWhole() throws {
        let (x, reference) = try Self.reading()
        let config = TranscribeConfig(path: try PathTemplate("{stem}.json"), formats: [.json], language: "en")
        defer { config.helpers.shutdown() }
        let rule = TranscriptChunking(seconds: 20, lookBackSeconds: 8, tailSeconds: 5)
        let waited = try Self.transcribe(x, chunking: rule, overlap: false, config: config)
        // The helpers' threads, as their command lines give them to CTranslate2.
        func idleThreads() throws -> [String] {
            try config.helpers.idleProcessIDs.map { pid in
                let argv = try String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8).split(separator: "\0").map(String.init)
                return try #require(argv.firstIndex(of: "--threads").map { argv[$0 + 1] })
            }
        }
        // The chunks took turns on two helpers (`TranscriptChunking.lanes`), each on one thread.
        #expect(try idleThreads() == ["1", "1"])
        #expect(config.helpers.started == TranscriptChunking.lanes)
        let overlapped = try Self.transcribe(x, chunking: rule, overlap: true, config: config)
        // A split recording's chunks went to the same two helpers, side by side.
        #expect(try idleThreads() == ["1", "1"])
        #expect(config.helpers.started == TranscriptChunking.lanes)
        let whole = try Self.transcribe(x, chunking: nil, overlap: false, config: config)
        #expect(config.helpers.started == TranscriptChunking.lanes, "a recording sent whole takes one idle helper")
        #expect(waited.starts.count >= 2, "cut at \(waited.starts)")
        #expect(overlapped.starts == waited.starts)
        // Each chunk a recording of its own, answered in order; the same words split or not.
        #expect(overlapped.json == waited.json, "a split recording's chunks give another transcript")
        func parsed(_ json: String) throws -> (text: String, words: [(Double, Double)], duration: Double) {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let words = (o["segments"] as? [[String: Any]] ?? []).flatMap { $0["words"] as? [[String: Any]] ?? [] }
            return (o["text"] as? String ?? "", words.map { (($0["start"] as? NSNumber)?.doubleValue ?? -1, ($0["end"] as? NSNumber)?.doubleValue ?? -1) },
                    (o["duration"] as? NSNumber)?.doubleValue ?? -1)
        }
        let chunked = try parsed(waited.json), all = try parsed(whole.json)
        let duration = Double(x.count) / Double(Self.rate)
        #expect(abs(chunked.duration - duration) < 0.01 && abs(all.duration - duration) < 0.01)
        // The words of later chunks are at their place in the recording: in order, inside it.
        var last = 0.0
        for (s, e) in chunked.words {
            #expect(s >= last - 0.001 && e >= s && e <= duration + 0.05, "word at \(s)…\(e) s after \(last) s")
            last = s
        }
        #expect(chunked.words.contains { $0.0 > Double(waited.starts[1]) / Double(Self.rate) })
        let werChunked = TranscribeStageTests.wordErrorRate(chunked.text, reference: reference)
        let werWhole = TranscribeStageTests.wordErrorRate(all.text, reference: reference)
        #expect(werChunked <= werWhole + 0.05, "word error in chunks \(werChunked), whole \(werWhole): \(chunked.text)")
        #expect(werChunked <= 0.1, "\(chunked.text)")
    }

    @Test func theChainOfASplitRecordingLetsTheHelperOverlap() throws {
        let config = TranscribeConfig(path: try PathTemplate("{stem}.json"), formats: [.json], language: "en")
        let dir = try TempDir()
        let context = RecordingContext(sourcePath: dir.path + "/talk.wav", relativePath: "talk.wav", modified: Date(), outputRoot: dir.path)
        let tap = try config.makeTap(paths: [dir.path + "/talk.json"], context: context) as! TranscribeTap
        #expect(!tap.overlaps)
        let pipeline = ChainPipeline()
        defer { pipeline.shutdown() }
        _ = pipeline.elements([.transform(GainTransform(gain: Gain(decibels: 0))), .tap(tap)])
        #expect(tap.overlaps)
    }

    @Test func chunksIsAnOptionAndNotPartOfTheFingerprint() throws {
        let on = try loadStages("- transcribe: { path: \"{stem}.t.json\", language: en }\n")
        let off = try loadStages("- transcribe: { path: \"{stem}.t.json\", language: en, chunks: off }\n")
        let a = try #require(on.first as? TranscribeConfig), b = try #require(off.first as? TranscribeConfig)
        #expect(a.chunks == .standard && b.chunks == nil)
        #expect(a.canonical == b.canonical)
        // A multilingual model asked to detect the language sends a long recording whole.
        let auto = try loadStages("- transcribe: { path: \"{stem}.t.json\", model: base }\n")
        #expect((auto.first as? TranscribeConfig)?.chunks == nil)
        #expect(throws: SpecError.self) { try loadStages("- transcribe: { path: x, chunks: yes }\n") }
        // Each two-way option's error names it and says what each word means.
        func message(_ yaml: String) -> String {
            do { _ = try loadStages(yaml); return "" } catch { return "\(error)" }
        }
        #expect(message("- transcribe: { path: x, chunks: yes }\n")
            .contains("chunks is auto (a long recording goes to Whisper in chunks cut at quiet points) or off (whole), not \"yes\""))
        #expect(message("- transcribe: { path: x, batch: on }\n").contains("batch is auto (short recordings share the model's window) or off (each its own), not \"on\""))
        #expect(message("- transcribe: { path: x, from: start }\n").contains("from is source (the recording as decoded) or here (the stream at this place), not \"start\""))
    }
}
