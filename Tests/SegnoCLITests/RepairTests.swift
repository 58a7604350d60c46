import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
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

    /// ADTS AAC with junk over its middle and a cut last frame: the whole frames are copied as
    /// they are; ffmpeg decodes the repaired file to the original's samples up to the junk, and the
    /// rest is the original's frames after it (checked at the frame the junk's end leads to).
    @Test func anADTSStreamIsRepairedByCopyingItsWholeFrames() throws {
        let wav = dir.path + "/src-adts.wav", aac = dir.path + "/memo.aac"
        _ = try Audio.output(of: "sox", ["-R", "-n", "-r", "48000", "-c", "1", "-b", "16", wav, "synth", "6", "sine", "300-3000", "vol", "0.5"], what: "make a WAV")
        _ = try Audio.output(of: "ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", wav, "-c:a", "aac", "-b:a", "96k", "-aac_pns", "0", aac], what: "encode ADTS")
        var b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: aac)))
        let junkAt = b.count / 2
        for i in junkAt..<(junkAt + 1500) { b[i] = UInt8((i * 131 + 7) & 0xFF) }
        let damaged = dir.path + "/memo.damaged.aac"
        try Data(b.prefix(b.count - 100)).write(to: URL(fileURLWithPath: damaged))
        let before = try Data(contentsOf: URL(fileURLWithPath: damaged))
        let run = try CLI.segno(["repair", damaged, "-o", dir.path + "/memo.fixed.aac"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("frames") && run.stdout.contains("left out"), "\(run.stdout)")
        let reference = try Self.ffmpegDecode(aac)
        let got = try Self.ffmpegDecode(dir.path + "/memo.fixed.aac")
        // Frames lost: those the junk touched (about 1500 / 290 bytes, plus two cut into) and the cut last one.
        #expect(got.count < reference.count && got.count > reference.count - 12 * 1024, "\(got.count) of \(reference.count)")
        let head = reference.count / 2 - 4 * 1024
        #expect(Array(got.prefix(head)) == Array(reference.prefix(head)), "the frames before the junk differ")
        // After the junk: the original's frames, shifted by the whole frames left out.
        let tailAt = got.count - 48000
        let shift = (0...16).first { k in
            maxAbsDifference(Array(got[tailAt..<(tailAt + 20000)]), Array(reference[(tailAt + k * 1024)..<(tailAt + k * 1024 + 20000)])) == 0
        }
        #expect(shift != nil && shift! >= 4, "the frames after the junk are not the original's (shift \(String(describing: shift)))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: damaged)) == before)
        // A healthy stream has nothing to repair.
        let healthy = try CLI.segno(["repair", aac, "-o", dir.path + "/x.aac"])
        #expect(healthy.status == 1 && healthy.stderr.contains("nothing to repair"), "\(healthy.stderr)")
    }

    /// An Ogg Vorbis recording with a page lost, junk over another and its last page cut: the
    /// repaired file holds the good pages, renumbered, with fresh checksums; ffmpeg reads it
    /// without a complaint, and what comes before the first loss is the original's, sample for sample.
    @Test func anOggIsRepairedFromItsGoodPages() throws {
        let wav = dir.path + "/src-ogg.wav", ogg = dir.path + "/voice.ogg"
        _ = try Audio.output(of: "sox", ["-R", "-n", "-r", "48000", "-c", "2", "-b", "16", wav, "synth", "5", "pinknoise", "vol", "0.4"], what: "make a WAV")
        _ = try Audio.output(of: "ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", wav, "-c:a", "libvorbis", "-page_duration", "200000", ogg], what: "encode Vorbis")
        let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ogg)))
        var pages: [Int] = []
        var i = 0
        while i + 27 <= b.count {
            guard b[i] == 0x4F, b[i + 1] == 0x67, b[i + 2] == 0x67, b[i + 3] == 0x53 else { i += 1; continue }
            pages.append(i)
            i += 27 + Int(b[i + 26]) + (0..<Int(b[i + 26])).reduce(0) { $0 + Int(b[i + 27 + $1]) }
        }
        try #require(pages.count > 12)
        let lost = pages.count / 3
        var damaged = Array(b[..<pages[lost]]) + Array(b[pages[lost + 1]...])
        let junkAt = pages[pages.count * 2 / 3] + 40 - (pages[lost + 1] - pages[lost])
        for k in junkAt..<(junkAt + 500) { damaged[k] = UInt8((k * 131 + 7) & 0xFF) }
        let path = dir.path + "/voice.damaged.ogg"
        try Data(damaged.prefix(damaged.count - 30)).write(to: URL(fileURLWithPath: path))
        let run = try CLI.segno(["repair", path, "-o", dir.path + "/voice.fixed.ogg"])
        #expect(run.status == 0, "\(run.stderr)")
        let check = try CLI.tool("ffmpeg", ["-nostdin", "-v", "error", "-i", dir.path + "/voice.fixed.ogg", "-f", "null", "-"])
        #expect(check.status == 0 && check.stderr.isEmpty, "ffmpeg: \(check.stderr)")
        let got = try Self.ffmpegDecode(dir.path + "/voice.fixed.ogg")
        let reference = try Self.ffmpegDecode(ogg)
        #expect(got.count > reference.count * 6 / 10 && got.count < reference.count, "\(got.count) of \(reference.count)")
        let head = reference.count / 4
        #expect(Array(got.prefix(head)) == Array(reference.prefix(head)), "the pages before the loss decode differently")
        let healthy = try CLI.segno(["repair", ogg, "-o", dir.path + "/y.ogg"])
        #expect(healthy.status == 1 && healthy.stderr.contains("nothing to repair"), "\(healthy.stderr)")
    }

    /// An MP3 whose ID3v2 tag declares 4 MiB (past the end of the file): ffmpeg reads nothing of
    /// it; the repaired file keeps the tag (its size set right) and decodes to the original.
    @Test func anMP3BehindATagSizedPastTheEndIsRepaired() throws {
        let wav = dir.path + "/src-mp3.wav", mp3 = dir.path + "/talk.mp3"
        _ = try Audio.output(of: "sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "4", "pinknoise", "vol", "0.5"], what: "make a WAV")
        _ = try Audio.output(of: "ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", wav, "-b:a", "128k", "-id3v2_version", "3", "-metadata", "title=Talk", mp3], what: "encode MP3")
        var b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: mp3)))
        let size = 4 << 20
        b[6] = UInt8((size >> 21) & 0x7F); b[7] = UInt8((size >> 14) & 0x7F); b[8] = UInt8((size >> 7) & 0x7F); b[9] = UInt8(size & 0x7F)
        let damaged = dir.path + "/talk.badtag.mp3"
        try Data(b).write(to: URL(fileURLWithPath: damaged))
        let run = try CLI.segno(["repair", damaged, "--out-dir", dir.path + "/fixed"])
        #expect(run.status == 0, "\(run.stderr)")
        let fixed = dir.path + "/fixed/talk.badtag.repaired.mp3"
        #expect(try Self.ffmpegDecode(fixed) == Self.ffmpegDecode(mp3))
        let probe = try Audio.output(of: "ffprobe", ["-v", "error", "-show_entries", "format_tags=title", "-of", "csv=p=0", fixed], what: "probe")
        #expect(String(decoding: probe, as: UTF8.self).contains("Talk"))
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

    /// Issue 33: trial decoding is bounded by a budget linear in the data, so junk in a
    /// moov-less file ends the search with a reason instead of holding the helper for minutes
    /// (200 KB of junk took 77 s: 16,384 trial decodes per offset, 32 KiB each while resyncing).
    @Test func junkAfterTheAudioEndsTheSearchAtItsBudgetAndTheFramesBeforeItAreKept() throws {
        let original = try encode("junk.m4a", codec: "aac", rate: 48000, channels: 1)
        // mdat's size unwritten (as Android leaves it): the junk is inside the audio data.
        let damaged = try damage(original, android: true)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: damaged)))
        var rng = SplitMix64(seed: 0x4A_554E_4B)
        bytes += (0..<200_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        let r = try CLI.segno(["repair", damaged, "--reference", original, "-o", dir.path + "/junk-fixed.m4a"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect((r.stdout + r.stderr).contains("trial decoding stopped after"), "\(r.stdout) \(r.stderr)")
        let got = try Self.ffmpegDecode(dir.path + "/junk-fixed.m4a")
        let reference = try Self.ffmpegDecode(original)
        #expect(got.count >= reference.count - 8 * 1024, "the audio before the junk is all there")
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
