import Foundation
import Testing

/// Runner edge cases: two sources that would write one output, and a known failure retried
/// once the spec that caused it is fixed.
@Suite(.serialized) struct RunEdgeTests {
    func spec(_ dir: TempDir, _ stages: [String]) throws -> String {
        let text = "version: 1\ninput: { root: in }\noutput: { root: out }\nstages:\n" + stages.map { "  - \($0)\n" }.joined()
        try text.write(toFile: dir["s.yaml"], atomically: true, encoding: .utf8)
        return dir["s.yaml"]
    }

    @Test func twoSourcesWritingOneOutputFailTheSecondWithAHint() throws {
        let dir = try TempDir()
        try FileManager.default.createDirectory(atPath: dir["in"], withIntermediateDirectories: true)
        try Audio.writeSine(to: dir["in/a.wav"], frequency: 440, frames: 8000)
        try Audio.writeSine(to: dir["in/a.flac"], frequency: 880, frames: 8000)
        let s = try spec(dir, ["encode: { path: \"{stem}.wav\" }"])
        let r = try CLI.run(try CLI.segnoPath(), ["run", s])
        #expect(r.status == 1)
        #expect(r.stderr.contains("a.wav") && r.stderr.contains("like a.flac") && r.stderr.contains("{ext}"), "\(r.stderr)")
        // a.flac (first in path order) owns a.wav; the output holds its 880 Hz, not the 440 Hz source.
        let info = try CLI.run(try CLI.segnoPath(), ["info", "--json", dir["out/a.wav"]])
        #expect(info.status == 0)
        let fixed = try spec(dir, ["encode: { path: \"{stem}-{ext}.wav\" }"])
        let again = try CLI.run(try CLI.segnoPath(), ["run", fixed])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir["out/a-wav.wav"]) && FileManager.default.fileExists(atPath: dir["out/a-flac.wav"]))
    }

    @Test func aKnownFailureIsRetriedWhenTheSpecChanges() throws {
        let dir = try TempDir()
        try FileManager.default.createDirectory(atPath: dir["in"], withIntermediateDirectories: true)
        try Audio.writeSine(to: dir["in/m.wav"], rate: 44100, frames: 8000)
        // Opus cannot be written at 44.1 kHz: the recording fails…
        let bad = try spec(dir, ["encode: { path: \"{stem}.opus\" }"])
        #expect(try CLI.run(try CLI.segnoPath(), ["run", bad]).status == 1)
        // …and an unchanged spec does not try again (a known failure)…
        let same = try CLI.run(try CLI.segnoPath(), ["run", bad])
        #expect(same.status == 0)
        #expect(same.stdout.contains("1 known failures"), "\(same.stdout)")
        // …but the fixed spec does, without `segno retry`.
        let good = try spec(dir, ["resample: 48000", "encode: { path: \"{stem}.opus\" }"])
        let r = try CLI.run(try CLI.segnoPath(), ["run", good])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("1 done"), "\(r.stdout)")
        #expect(FileManager.default.fileExists(atPath: dir["out/m.opus"]))
    }
}
