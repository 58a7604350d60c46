import Foundation
import Testing

/// `segno repair` on MP4s whose index (`moov`) was never written: made by ffmpeg's AAC and ALAC
/// encoders, the moov cut away with the end of the audio (what a recorder that died leaves), then
/// repaired with and without a reference. ffmpeg decodes the repaired file; its frames must be
/// the original's, bit for bit.
@Suite struct RepairTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    /// Encodes 6 s of noise with ffmpeg (`codec`: aac or alac) at `rate` Hz and `channels`.
    func encode(_ name: String, codec: String, rate: Int, channels: Int) throws -> String {
        let wav = dir.path + "/src-\(name).wav", m4a = dir.path + "/" + name
        _ = try Audio.output(of: "sox", ["-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "16", wav, "synth", "6", "pinknoise", "vol", "0.5"], what: "make a WAV")
        _ = try Audio.output(of: "ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", wav, "-c:a", codec] + (codec == "aac" ? ["-b:a", "64k"] : []) + [m4a],
                             what: "encode \(codec)")
        return m4a
    }

    /// The file up to `cutInto` bytes before the end of its mdat: no moov, the last frame cut.
    /// `android`: the mdat size written as "????" (Android's MPEG4Writer before stop()).
    func damage(_ path: String, cutInto: Int = 1000, android: Bool = false) throws -> String {
        var b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var at = 0, cut = 0
        while at + 8 <= b.count {
            let size = Int(b[at]) << 24 | Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3])
            if String(decoding: b[(at + 4)..<(at + 8)], as: UTF8.self) == "mdat" {
                cut = at + size - cutInto
                if android { for i in at..<(at + 4) { b[i] = 0x3F } }
                break
            }
            at += max(size, 8)
        }
        let out = path.replacingOccurrences(of: ".m4a", with: android ? ".android.m4a" : ".cut.m4a")
        try Data(b.prefix(cut)).write(to: URL(fileURLWithPath: out))
        return out
    }

    static func ffmpegDecode(_ path: String) throws -> [Float] {
        let d = try Audio.output(of: "ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "f32le", "-"], what: "decode \(path)")
        return d.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// The percentage in "(99.8 % of mdat)".
    static func percent(_ line: String) -> Double? {
        guard let r = line.range(of: " % of mdat") else { return nil }
        return Double(line[..<r.lowerBound].split(separator: "(").last ?? "")
    }

    @Test func anAACMemoIsRebuiltWithAndWithoutAReferenceAndDecodesAsTheOriginal() throws {
        let original = try encode("memo.m4a", codec: "aac", rate: 48000, channels: 1)
        let damaged = try damage(original)
        let before = try Data(contentsOf: URL(fileURLWithPath: damaged))
        let reference = try Self.ffmpegDecode(original)

        let withRef = try CLI.segno(["repair", damaged, "--reference", original, "-o", dir.path + "/ref.m4a"])
        #expect(withRef.status == 0, "\(withRef.stderr)")
        #expect(withRef.stdout.contains("index rebuilt from reference memo.m4a"), "\(withRef.stdout)")
        #expect((Self.percent(withRef.stdout) ?? 0) >= 99, "\(withRef.stdout)")
        let got = try Self.ffmpegDecode(dir.path + "/ref.m4a")
        #expect(got.count >= reference.count - 8 * 1024 && got.count < reference.count, "1000 bytes are a few frames at 64 kb/s")
        #expect(got == Array(reference.prefix(got.count)), "frames differ from the original's")

        // Without a reference: AAC-LC is found; the encoder's priming (1024 frames) is not
        // skipped without the original's edit list, so the frames follow it.
        let noRef = try CLI.segno(["repair", damaged, "-o", dir.path + "/guess.m4a"])
        #expect(noRef.status == 0, "\(noRef.stderr)")
        #expect(noRef.stdout.contains("AAC-LC 48000 Hz mono (guessed)"), "\(noRef.stdout)")
        let guessed = try Self.ffmpegDecode(dir.path + "/guess.m4a")
        #expect(guessed.count == got.count + 1024)
        #expect(Array(guessed.dropFirst(1024)) == Array(reference.prefix(guessed.count - 1024)))
        // info says what salvage would do with it.
        let info = try CLI.segno(["info", "--json", damaged])
        #expect(info.stdout.contains("\"salvage\":\"no index (moov): `segno repair`"), "\(info.stdout)")
        // The damaged file is untouched.
        #expect(try Data(contentsOf: URL(fileURLWithPath: damaged)) == before)
    }

    /// `convert` and `waveform` take `--reference` (implying `--salvage`) for a moov-less memo:
    /// the converted samples are ffmpeg's decode of the original, frame for frame.
    @Test func convertAndWaveformTakeAReferenceForAMemoWithoutIndex() throws {
        let original = try encode("talk.m4a", codec: "aac", rate: 44100, channels: 2)
        let damaged = try damage(original)
        let plain = try CLI.segno(["convert", damaged, dir.path + "/plain.wav"])
        #expect(plain.status == 1 && plain.stderr.contains("moov") && plain.stderr.contains("`segno repair`"), "\(plain.stderr)")
        let out = dir.path + "/talk.wav"
        let run = try CLI.segno(["convert", "--reference", original, "--bits", "float", damaged, out])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("salvaged:") && run.stderr.contains("index rebuilt from"), "\(run.stderr)")
        let reference = try Self.ffmpegDecode(original)
        let got = try Self.ffmpegDecode(out)
        #expect(got.count > reference.count * 9 / 10 && got.count < reference.count, "\(got.count) of \(reference.count)")
        #expect(got == Array(reference.prefix(got.count)), "converted samples differ from the original's")
        let missing = try CLI.segno(["convert", "--reference", dir.path + "/none.m4a", damaged, dir.path + "/x.wav"])
        #expect(missing.status == 1 && missing.stderr.contains("none.m4a"), "\(missing.stderr)")
        let wave = try CLI.segno(["waveform", "--reference", original, damaged, "-o", dir.path + "/talk.json"])
        #expect(wave.status == 0, "\(wave.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.path + "/talk.json"))
    }

    @Test func anALACRecordingIsRebuiltFromAReferenceBitForBit() throws {
        let original = try encode("song.m4a", codec: "alac", rate: 44100, channels: 2)
        let damaged = try damage(original, cutInto: 3000)
        let run = try CLI.segno(["repair", damaged, "--reference", original, "--out-dir", dir.path + "/fixed"])
        #expect(run.status == 0, "\(run.stderr)")
        let reference = try Self.ffmpegDecode(original)
        let got = try Self.ffmpegDecode(dir.path + "/fixed/song.cut.repaired.m4a")
        #expect(got.count >= reference.count - 2 * 2 * 4096 && got.count < reference.count)
        #expect(got == Array(reference.prefix(got.count)))
        #expect((Self.percent(run.stdout) ?? 0) >= 99, "\(run.stdout)")
    }

    @Test func anAndroidHeaderWithUnwrittenSizeIsRebuilt() throws {
        let original = try encode("voice.m4a", codec: "aac", rate: 44100, channels: 2)
        let damaged = try damage(original, cutInto: 1, android: true)
        let run = try CLI.segno(["repair", damaged, "--reference", original, "-o", dir.path + "/voice-fixed.m4a"])
        #expect(run.status == 0, "\(run.stderr)")
        let reference = try Self.ffmpegDecode(original)
        let got = try Self.ffmpegDecode(dir.path + "/voice-fixed.m4a")
        #expect(got.count > reference.count * 9 / 10 && got == Array(reference.prefix(got.count)))
    }

    @Test func repairRefusesWhatItMustNotTouch() throws {
        let original = try encode("memo.m4a", codec: "aac", rate: 48000, channels: 1)
        let damaged = try damage(original)
        // A file segno did not write stays.
        let foreign = dir.path + "/mine.m4a"
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: foreign))
        let refused = try CLI.segno(["repair", damaged, "-o", foreign])
        #expect(refused.status == 1 && refused.stderr.contains("segno did not write it"), "\(refused.stderr)")
        #expect(try String(contentsOfFile: foreign, encoding: .utf8) == "keep me")
        // Nor over the damaged file itself.
        let itself = try CLI.segno(["repair", damaged, "-o", damaged])
        #expect(itself.status == 1)
        // A healthy file has nothing to rebuild.
        let healthy = try CLI.segno(["repair", original, "-o", dir.path + "/x.m4a"])
        #expect(healthy.status == 1 && healthy.stderr.contains("has its index"), "\(healthy.stderr)")
        // Random bytes are no MP4.
        let junk = dir.path + "/junk.m4a"
        try Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: URL(fileURLWithPath: junk))
        let notMP4 = try CLI.segno(["repair", junk, "-o", dir.path + "/y.m4a"])
        #expect(notMP4.status == 1 && !FileManager.default.fileExists(atPath: dir.path + "/y.m4a"))
    }
}
