import Foundation
@testable import SegnoCore
import Testing

/// The compact state index `loadAll` returns: every field of a recording and its steps comes back
/// as stored, whatever order the rows arrive in.
@Suite struct StateIndexTests {
    static let identity = FileIdentity(size: 1234, mtimeNs: 1_718_000_000_123_456_789, inode: 77)

    static func step(_ stage: String, source: String = identity.key, output: String = "[\"a.flac\"]", detail: String? = nil) -> StepState {
        StepState(stage: stage, fingerprint: "fp-" + stage, source: source, output: output,
                  outputHash: Data((0..<32).map { UInt8($0) }), outputSize: 99, finishedAt: 1_718_000_000.25, detail: detail)
    }

    @Test func aRecordingComesBackWithEveryField() throws {
        // Given a failed recording with an error, a recipe, a content hash, two steps (one made
        // from an older source) and a fingerprint row, and a plain done one
        var failed = RecordingState(id: 9, path: "x", identity: Self.identity, contentHash: Data([1, 2, 3]), duration: 2.5,
                                    status: .partial, attempts: 3, error: "decode failed: \"a.wav\"", updatedAt: 17.5,
                                    steps: [:], failedRecipe: "recipe-1", failureClass: .input)
        failed.steps["encode:a"] = Self.step("encode:a", detail: "{\"lufs\":\"-23\"}")
        failed.steps["waveform:b"] = Self.step("waveform:b", source: "1:2:3", output: "[\"b.json\",\"c.json\"]")
        failed.fingerprinted = ["fingerprint:x", "encode:a"]
        let done = RecordingState(id: 4, path: "d", identity: Self.identity, contentHash: nil, duration: nil, status: .done,
                                  attempts: 0, error: nil, updatedAt: 1, steps: ["encode:a": Self.step("encode:a")])
        // When they are indexed
        var odd = done
        odd.contentHash = Data((0..<300).map { UInt8($0 % 251) })
        odd.steps["encode:a"]?.outputHash = Data()
        let index = StateIndex(["day 1/é.wav": failed, "d.wav": done, "odd.wav": odd])
        // Then each reads back as it was, under its key
        let r = try #require(index["day 1/é.wav"])
        #expect(r.path == "day 1/é.wav" && r.id == 9 && r.identity == Self.identity && r.contentHash == Data([1, 2, 3]))
        #expect(r.duration == 2.5 && r.status == .partial && r.attempts == 3 && r.error == "decode failed: \"a.wav\"")
        #expect(r.updatedAt == 17.5 && r.failedRecipe == "recipe-1" && r.failureClass == .input)
        #expect(r.steps == failed.steps)
        #expect(r.steps["waveform:b"]?.outputs == ["b.json", "c.json"])
        #expect(r.fingerprinted == ["fingerprint:x", "encode:a"])
        let d = try #require(index["d.wav"])
        #expect(d.contentHash == nil && d.duration == nil && d.error == nil && d.failureClass == nil && d.attempts == 0)
        #expect(d.steps == done.steps && d.fingerprinted.isEmpty)
        #expect(index["d"] == nil && index["D.wav"] == nil && index[""] == nil && !index.contains("x"))
        #expect(index["odd.wav"]?.contentHash == odd.contentHash && index["odd.wav"]?.steps == odd.steps)
        #expect(index.count == 3 && Set(index.keys) == ["day 1/é.wav", "d.wav", "odd.wav"])
    }

    @Test func stepsArrivingOutOfOrderFindTheirRecording() throws {
        // Given recordings read in descending id order and steps interleaved across them, one
        // stage written twice (the later wins), and a step of a recording that was not read
        var b = StateIndex.Builder(recordings: 0, steps: 0)
        for id in stride(from: Int64(300), through: 1, by: -1) {
            b.addRecording(id: id, path: "r\(id).wav", identity: FileIdentity(size: id, mtimeNs: id, inode: id), contentHash: nil,
                           duration: Double(id), status: .done, attempts: 0, error: nil, updatedAt: 0, failedRecipe: nil, failureClass: nil)
        }
        for id in Int64(1)...300 {
            b.addStep(recordingId: 301 - id, Self.step("encode:a", source: FileIdentity(size: 301 - id, mtimeNs: 301 - id, inode: 301 - id).key))
        }
        b.addStep(recordingId: 7, Self.step("encode:a", source: "old"))
        b.addStep(recordingId: 999, Self.step("encode:a"))
        b.addFingerprinted(recordingId: 8, stage: "encode:a")
        let index = StateIndex(building: &b)
        // Then every recording has its own step, with its own source
        for id in Int64(1)...300 {
            let r = try #require(index["r\(id).wav"])
            #expect(r.id == id && r.duration == Double(id) && r.steps.count == 1)
            if id != 7 { #expect(r.steps["encode:a"]?.source == r.identity.key) }
        }
        #expect(index["r7.wav"]?.steps["encode:a"]?.source == "old")
        #expect(index["r8.wav"]?.fingerprinted == ["encode:a"] && index["r9.wav"]?.fingerprinted == [])
        #expect(index.count == 300 && index.values.reduce(0) { $0 + $1.steps.count } == 300)
    }

    @Test func longTextsAndManyRecordingsSpanSeveralChunks() throws {
        // Given texts longer than a chunk's share and enough recordings to fill several chunks
        let long = String(repeating: "é", count: 300_000)
        var states: [String: RecordingState] = [:]
        for i in 0..<20_000 {
            states["folder \(i % 97)/recording \(i).wav"] = RecordingState(id: Int64(i), path: "", identity: Self.identity, contentHash: Data(count: 32),
                                                                        duration: nil, status: .done, attempts: 0, error: nil, updatedAt: 0,
                                                                        steps: ["encode:a": Self.step("encode:a", output: "[\"out \(i).flac\"]")])
        }
        states["long.wav"]?.steps = [:]
        states["long.wav"] = RecordingState(id: -1, path: "", identity: Self.identity, contentHash: nil, duration: nil, status: .failed,
                                            attempts: 1, error: long, updatedAt: 0, steps: ["m:x": Self.step("m:x", detail: long)])
        let index = StateIndex(states)
        #expect(index.chunks.count > 2)
        // The sizes the 1,000,000-recording memory budget rests on (README, "Planner memory")
        #expect(MemoryLayout<StateIndex.Record>.stride == 64 && MemoryLayout<StateIndex.Step>.stride == 48)
        #expect(index["long.wav"]?.error == long && index["long.wav"]?.steps["m:x"]?.detail == long)
        for i in stride(from: 0, to: 20_000, by: 997) {
            #expect(index["folder \(i % 97)/recording \(i).wav"]?.steps["encode:a"]?.outputs == ["out \(i).flac"])
        }
        var outputs = 0
        index.forEachStepOutput { _ in outputs += 1 }
        #expect(outputs == 20_001)
        var matching: [String] = []
        index.forEachStepOutput(containing: "out 1999") { matching.append($0) }
        #expect(matching.sorted() == ["[\"out 1999.flac\"]", "[\"out 19990.flac\"]", "[\"out 19991.flac\"]", "[\"out 19992.flac\"]",
                                      "[\"out 19993.flac\"]", "[\"out 19994.flac\"]", "[\"out 19995.flac\"]", "[\"out 19996.flac\"]",
                                      "[\"out 19997.flac\"]", "[\"out 19998.flac\"]", "[\"out 19999.flac\"]"])
    }

    @Test func outputListsReadAlikeWithAndWithoutTheJSONParser() {
        // Given output texts in the usual form, with escapes, with spaces, empty and not JSON
        let lists: [[String]] = [["a/b.flac"], ["x.json", "y.json", "z.json"], [""], ["say \"hi\".flac"], ["a\\b", "c"], ["é ü/ß.flac"], []]
        for list in lists {
            // Then each reads back as encoded
            #expect(StepState.outputs(of: StepState.encodeOutputs(list)) == list)
        }
        #expect(StepState.outputs(of: "[\"a\", \"b\"]") == ["a", "b"], "spaces after commas go to the parser")
        #expect(StepState.outputs(of: "plain/old.flac") == ["plain/old.flac"])
    }
}
