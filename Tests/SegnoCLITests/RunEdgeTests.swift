import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoCoreTestSupport
import SegnoDSP
import SegnoTestSupport
import Testing

/// Runner edge cases: two sources that would write one output, and a known failure retried
/// once the spec that caused it is fixed.
@Suite(.serialized) struct RunEdgeTests {
    func spec(_ dir: TempDir, _ stages: [String]) throws -> String {
        let text = "version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nstages:\n" + stages.map { "  - \($0)\n" }.joined()
        try text.write(toFile: dir["s.yaml"], atomically: true, encoding: .utf8)
        return dir["s.yaml"]
    }

    @Test func twoSourcesWritingOneOutputFailTheSecondWithAHint() throws {
        let dir = try TempDir()
        try FileManager.default.createDirectory(atPath: dir["in"], withIntermediateDirectories: true)
        try Fixtures.writeSine(to: dir["in/a.wav"], frequency: 440, frames: 8000)
        try Fixtures.writeSine(to: dir["in/a.flac"], frequency: 880, frames: 8000)
        let s = try spec(dir, ["encode: { path: \"{stem}.wav\" }"])
        let r = try CLI.run(try CLI.segnoPath(), ["run", s])
        #expect(r.status == 1)
        #expect(r.stderr.contains("a.wav") && r.stderr.contains("like a.flac") && r.stderr.contains("{ext}"), "\(r.stderr)")
        // a.flac (first in path order) owns a.wav; the output holds its 880 Hz, not the 440 Hz source.
        let info = try CLI.run(try CLI.segnoPath(), ["info", "--json", dir["out/a.wav"]])
        #expect(info.status == 0)
        // The next cron run reports it as a known failure instead of failing again.
        let same = try CLI.run(try CLI.segnoPath(), ["run", s])
        #expect(same.status == 0, "\(same.stderr)")
        #expect(same.stdout.contains("1 known failures"), "\(same.stdout)")
        let fixed = try spec(dir, ["encode: { path: \"{stem}-{ext}.wav\" }"])
        let again = try CLI.run(try CLI.segnoPath(), ["run", fixed])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir["out/a-wav.wav"]) && FileManager.default.fileExists(atPath: dir["out/a-flac.wav"]))
    }

    @Test func aKnownFailureIsRetriedWhenTheSpecChanges() throws {
        let dir = try TempDir()
        try FileManager.default.createDirectory(atPath: dir["in"], withIntermediateDirectories: true)
        try Fixtures.writeSine(to: dir["in/m.wav"], rate: 96000, frames: 16000)
        // MP3 cannot be written at 96 kHz: the recording fails (Opus would be resampled, decision 0065)…
        let bad = try spec(dir, ["encode: { path: \"{stem}.mp3\" }"])
        #expect(try CLI.run(try CLI.segnoPath(), ["run", bad]).status == 1)
        // …and an unchanged spec does not try again (a known failure)…
        let same = try CLI.run(try CLI.segnoPath(), ["run", bad])
        #expect(same.status == 0)
        #expect(same.stdout.contains("1 known failures"), "\(same.stdout)")
        // …but the fixed spec does, without `segno retry`.
        let good = try spec(dir, ["resample: 48000", "encode: { path: \"{stem}.mp3\" }"])
        let r = try CLI.run(try CLI.segnoPath(), ["run", good])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("1 done"), "\(r.stdout)")
        #expect(FileManager.default.fileExists(atPath: dir["out/m.mp3"]))
    }

    @Test func eightBitOutputRoundsAtEightBits() throws {
        let dir = try TempDir()
        // −0.001 is −0.128 LSB at 8 bits: it must round to 0, not floor to −1.
        let x: [Float] = [-0.001, 0.001, 0.5, -0.5, 1.0, -1.0, 0.0039, -0.0041]
        try FileManager.default.createDirectory(atPath: dir["in"], withIntermediateDirectories: true)
        try Fixtures.write(x, rate: 8000, to: dir["in/x.wav"], bits: .float, blockFrames: x.count)
        #expect(try CLI.run(try CLI.segnoPath(), ["convert", dir["in/x.wav"], dir["x8.wav"], "--bits", "8"]).status == 0)
        let d = try DecoderFactory.open(path: dir["x8.wav"], tools: .forTests)
        var b = AudioBlock(channels: 1)
        _ = try d.read(into: &b, maxFrames: 16)
        let got = b.validSamples.map { Int(($0 * 128).rounded()) }
        #expect(got == [0, 0, 64, -64, 127, -128, 0, -1])
    }
}
