import Foundation
@testable import SegnoAudio
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import Testing

/// Damaged recordings decoded with `damaged: salvage`: what is recovered is compared with the
/// uncut original decoded by sox or ffmpeg (independent decoders), never only with segno's reader.
@Suite struct SalvageDecoderTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    /// Decodes `path` with salvage in blocks of `blockFrames`; returns the samples and the report.
    func salvage(_ path: String, blockFrames: Int = 4096) throws -> (info: SourceInfo, samples: [Float], report: SalvageReport?) {
        let d = try DecoderFactory.open(path: path, tools: .forTests, damaged: .salvage)
        defer { d.close() }
        var block = AudioBlock(channels: d.info.channels, capacity: blockFrames)
        var out: [Float] = []
        while try d.read(into: &block, maxFrames: blockFrames) > 0 {
            out.append(contentsOf: block.samples[0..<(block.frames * block.channels)])
        }
        return (d.info, out, d.salvage)
    }

    /// Decodes with ffmpeg to interleaved Float32 (`-f f32le`).
    static func ffmpegDecode(_ path: String) throws -> [Float] {
        let r = try Tool.run("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "f32le", "-"])
        guard r.status == 0 else { throw FixtureError("ffmpeg could not decode \(path): \(r.stderrText)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// A 5 s stereo noise recording in `name`'s format, made by sox (an independent writer).
    func original(_ name: String, _ extra: [String] = []) throws -> String {
        let path = dir[name]
        try Fixtures.sox(["-n", "-r", "44100", "-c", "2", "-b", "16"] + extra + [path, "synth", "5", "pinknoise", "vol", "0.5"])
        return path
    }

    @Test(arguments: ["cut.wav", "cut.aiff", "cut.caf", "cut.rf64"])
    func aPCMFileCutShortYieldsEveryWholeFrameItHoldsAndSaysSo(name: String) throws {
        var source = try original(name.hasSuffix(".rf64") ? "orig.wav" : "orig." + (name as NSString).pathExtension)
        if name.hasSuffix(".rf64") {
            // sox writes RF64 only past 4 GiB: make one with ffmpeg.
            let rf = dir["orig-rf.wav"]
            _ = try Tool.run("ffmpeg", ["-nostdin", "-v", "error", "-i", source, "-rf64", "always", "-y", rf])
            source = rf
        }
        let bytes = try Fixtures.bytes(source)
        let cut = try Fixtures.truncatedCopy(of: source, bytes: bytes.count * 45 / 100 + 3, to: dir[name])
        let reference = try Fixtures.soxDecode(source)
        // The default still fails, and names the way out.
        #expect(throws: AudioError.self) {
            let d = try DecoderFactory.open(path: cut, tools: .forTests)
            var b = AudioBlock(channels: d.info.channels, capacity: 4096)
            while try d.read(into: &b, maxFrames: 4096) > 0 {}
        }
        for blockFrames in [1, 7, 4096] where blockFrames != 1 || name == "cut.wav" {
            let got = try salvage(cut, blockFrames: blockFrames)
            let report = try #require(got.report)
            #expect(got.samples.count > reference.count * 40 / 100)
            #expect(firstDifference(reference, got.samples) == nil, "\(name): recovered samples differ from sox's decode")
            #expect(report.losses.contains { $0.cause == SalvageReport.Cause.truncated })
            #expect(report.framesYielded * 2 == got.samples.count)
            #expect(report.framesLost >= 220500 - got.samples.count / 2)
        }
    }

    @Test func aWAVWhoseSizesWereNeverWrittenIsReadToTheEnd() throws {
        let source = try original("orig.wav")
        var bytes = try Fixtures.bytes(source)
        let data = try #require(Fixtures.chunkOffset("data", in: bytes))
        for i in 4..<8 { bytes[i] = 0 }                     // RIFF size 0
        for i in (data + 4)..<(data + 8) { bytes[i] = 0 }   // data size 0: a crashed recorder's header
        let path = try Fixtures.writeBytes(bytes, to: dir["unwritten.wav"])
        let got = try salvage(path)
        let reference = try Fixtures.soxDecode(source)
        #expect(got.samples.count == reference.count && firstDifference(reference, got.samples) == nil)
        #expect(got.report?.losses.first?.cause == SalvageReport.Cause.sizeUnknown)
        #expect(got.report?.framesLost == 0)
    }

    @Test func aCAFWithUnknownDataSizeIsReadToTheEnd() throws {
        let source = try original("orig.caf")
        var bytes = try Fixtures.bytes(source)
        // The data chunk's 64-bit size set to -1 ("unknown"), as a recorder writing to a pipe leaves it.
        let tag = Array("data".utf8)
        let at = try #require((8..<(bytes.count - 4)).first { Array(bytes[$0..<($0 + 4)]) == tag })
        for i in (at + 4)..<(at + 12) { bytes[i] = 0xFF }
        let path = try Fixtures.writeBytes(Array(bytes.prefix(bytes.count - 1001)), to: dir["unknown.caf"])
        let got = try salvage(path)
        let reference = try Fixtures.soxDecode(source)
        #expect(got.samples.count == (bytes.count - 1001 - at - 16) / 4 * 2)
        #expect(firstDifference(reference, got.samples) == nil)
        #expect(got.report?.losses.contains { $0.cause == SalvageReport.Cause.sizeUnknown } == true)
    }

    @Test func aHealthyWAVDecodesAsUsualWithSalvageOn() throws {
        let source = try original("ok.wav")
        let got = try salvage(source)
        let reference = try Fixtures.soxDecode(source)
        #expect(got.report == nil)
        #expect(got.samples.count == reference.count && firstDifference(reference, got.samples) == nil)
    }

    /// A FLAC with 300 bytes of junk written over its middle and its last frame cut: every other
    /// frame is recovered at its own time, the lost stretch is silence of the right length.
    @Test func aFLACWithJunkAndACutLastFrameResynchronisesAndKeepsTime() throws {
        let source = try original("orig.flac")
        let reference = try Self.ffmpegDecode(source)
        var bytes = try Fixtures.bytes(source)
        var rng = SplitMix64(seed: 25)
        let junkAt = bytes.count / 2
        for i in junkAt..<(junkAt + 300) { bytes[i] = UInt8(truncatingIfNeeded: rng.next()) }
        let path = try Fixtures.writeBytes(Array(bytes.prefix(bytes.count - 700)), to: dir["damaged.flac"])
        #expect(throws: AudioError.self) { _ = try Fixtures.decode(path) }
        let got = try salvage(path)
        let report = try #require(got.report)
        // Time is kept: every recovered sample is where it was, or silence.
        #expect(got.samples.count <= reference.count && got.samples.count > reference.count * 9 / 10)
        var same = 0, zeroed = 0, wrong = 0
        for i in 0..<got.samples.count {
            if got.samples[i] == reference[i] { same += 1 } else if got.samples[i] == 0 { zeroed += 1 } else { wrong += 1 }
        }
        #expect(wrong == 0, "\(wrong) samples neither the original's nor silence")
        #expect(zeroed > 0 && zeroed <= 2 * 2 * 4608 + 16)
        #expect(report.losses.contains { $0.filled && $0.frames > 0 })
        #expect(report.losses.contains { $0.cause == SalvageReport.Cause.cutFrame || $0.cause == SalvageReport.Cause.truncated })
        // At least as much as ffmpeg's own salvage of the same file.
        let ffmpeg = (try? Self.ffmpegDecode(path)) ?? []
        #expect(same >= ffmpeg.count - 2 * 2 * 4608, "segno kept \(same) original samples, ffmpeg decoded \(ffmpeg.count)")
    }

    /// `wav` encoded by ffmpeg at 128 kb/s (as `name`), ffmpeg's decode of that MP3 (the
    /// reference), and the MP3's bytes with 3000 bytes of junk written a third of the way in.
    func mp3WithJunk(from wav: String, name: String) throws -> (reference: [Float], bytes: [UInt8], junkAt: Int) {
        let source = dir[name]
        let enc = try Tool.run("ffmpeg", ["-nostdin", "-v", "error", "-i", wav, "-b:a", "128k", "-y", source])
        try #require(enc.status == 0, "\(enc.stderrText)")
        var bytes = try Fixtures.bytes(source)
        let junkAt = bytes.count / 3
        for i in junkAt..<(junkAt + 3000) { bytes[i] = UInt8(i & 0x7F) }
        return (try Self.ffmpegDecode(source), bytes, junkAt)
    }

    /// An MP3 with a run of junk written over it: libmpg123 reads past it; the frames lost become
    /// silence so the rest keeps its time, and the length matches ffmpeg's decode of the original.
    @Test func anMP3WithJunkReadsOnAndKeepsItsLength() throws {
        let (reference, bytes, _) = try mp3WithJunk(from: try original("orig.wav"), name: "orig.mp3")
        try expectSalvageKeepsTime(try Fixtures.writeBytes(bytes, to: dir["junk.mp3"]), reference: reference)
    }

    /// Salvages the stereo MP3 at `path` and checks that junk was read past with silence and that
    /// the rest keeps its time against `reference` (ffmpeg's decode of the undamaged file).
    func expectSalvageKeepsTime(_ path: String, reference: [Float]) throws {
        let got = try salvage(path)
        let report = try #require(got.report)
        #expect(report.losses.contains { $0.cause == SalvageReport.Cause.lostSync && $0.filled })
        // Within two frames of the original length (mpg123 trims the encoder's end padding by
        // frame count, which the lost frames throw off).
        #expect(abs(got.samples.count - reference.count) <= 2 * 2 * 1152, "\(got.samples.count) vs \(reference.count)")
        // The audio after the junk is where it was: compare a stretch two thirds in.
        let from = reference.count * 2 / 3
        let tailDiff = maxAbsDifference(Array(got.samples[from..<(from + 40000)]), Array(reference[from..<(from + 40000)]))
        #expect(tailDiff < 1e-3, "the end is shifted or differs: \(tailDiff)")
    }

    /// Junk that ends in one faked frame header of another bitrate (224 kb/s, so 732 bytes
    /// long; the random bytes left of a frame the junk overwrote faked one in 1 of about 100
    /// noise MP3s here):
    /// libmpg123 decodes it and then skips more junk to the real frames. The faked frame is
    /// dropped (it is not followed by a chained frame) and the lost stretch is counted in the
    /// stream's own frame length, so the rest keeps its time and the length is the original's.
    @Test func aFakedFrameHeaderAtTheEndOfJunkIsDroppedAndTimeKept() throws {
        let wav = dir["fake.wav"]
        try Fixtures.sox(["-R", "-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "5", "pinknoise", "vol", "0.5"])
        var (reference, bytes, junkAt) = try mp3WithJunk(from: wav, name: "fake.mp3")
        for (i, b) in [UInt8(0xFF), 0xFA, 0xC2, 0x50].enumerated() { bytes[junkAt + 3000 + i] = b }
        try expectSalvageKeepsTime(try Fixtures.writeBytes(bytes, to: dir["fake-junk.mp3"]), reference: reference)
    }

    /// Junk holding a chain of MPEG-2 frame headers (another rate): libmpg123 takes them for
    /// the start of another stream and ends there; salvage resumes at the next frames of the
    /// stream, silence in between, so the rest keeps its time (about 1 in 30 noise MP3s with
    /// plain junk did this before).
    @Test func anMP3WhoseJunkHoldsForeignFrameHeadersResumesAfterThem() throws {
        let wav = dir["g.wav"]
        try Fixtures.sox(["-R", "-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "5", "pinknoise", "vol", "0.5"])
        var (reference, bytes, junkAt) = try mp3WithJunk(from: wav, name: "g.mp3")
        // MPEG-2 layer III, 22050 Hz, 64 kb/s: 208-byte frames, chained four times.
        for k in 0..<4 { bytes.replaceSubrange((junkAt + 500 + 208 * k)..<(junkAt + 504 + 208 * k), with: [0xFF, 0xF3, 0x84, 0xC4]) }
        let path = try Fixtures.writeBytes(bytes, to: dir["foreign.mp3"])
        let got = try salvage(path)
        let report = try #require(got.report)
        #expect(report.method.contains("restarted"), "\(report.method)")
        #expect(report.losses.contains { $0.cause == SalvageReport.Cause.lostSync && $0.filled && $0.frames > 0 })
        #expect(abs(got.samples.count - reference.count) <= 2 * 2 * 1152, "\(got.samples.count) vs \(reference.count)")
        let from = reference.count * 2 / 3
        let tailDiff = maxAbsDifference(Array(got.samples[from..<(from + 40000)]), Array(reference[from..<(from + 40000)]))
        #expect(tailDiff < 1e-3, "the end is shifted or differs: \(tailDiff)")
    }

    /// An MP3 whose ID3v2 tag header declares 4 MiB (past the end of the file): decoders skip the
    /// whole file as tag; salvage finds the MPEG frames after the tag and decodes all of them.
    @Test func anMP3WhoseTagSizeRunsPastTheEndIsReadFromItsFrames() throws {
        let wav = try original("t.wav")
        let source = dir["tagged.mp3"]
        let enc = try Tool.run("ffmpeg", ["-nostdin", "-v", "error", "-i", wav, "-b:a", "128k", "-id3v2_version", "3",
                                          "-metadata", "title=Memo", "-y", source])
        try #require(enc.status == 0, "\(enc.stderrText)")
        let reference = try Self.ffmpegDecode(source)
        var bytes = try Fixtures.bytes(source)
        try #require(Array(bytes[0..<3]) == Array("ID3".utf8))
        let size = 4 << 20
        bytes[6] = UInt8((size >> 21) & 0x7F); bytes[7] = UInt8((size >> 14) & 0x7F)
        bytes[8] = UInt8((size >> 7) & 0x7F); bytes[9] = UInt8(size & 0x7F)
        let path = try Fixtures.writeBytes(bytes, to: dir["badtag.mp3"])
        #expect(throws: AudioError.self) { _ = try Fixtures.decode(path) }
        #expect(((try? Self.ffmpegDecode(path)) ?? []).isEmpty, "ffmpeg reads it after all: the test no longer damages it")
        let got = try salvage(path)
        let report = try #require(got.report)
        #expect(got.samples.count == reference.count, "\(got.samples.count) vs \(reference.count)")
        #expect(maxAbsDifference(got.samples, reference) < 1e-5)
        #expect(report.losses.first?.detail.contains("ID3v2") == true, "\(report.losses)")
        // The scratch copy is gone once the decoder is closed.
        let left = try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory()).filter { $0.hasPrefix("segno-salvage-\(getpid())-") }
        #expect(left.isEmpty, "\(left)")
    }
}

/// The first index where `b` differs from `a` (over `b`'s length; past `a`'s end counts), nil when none.
func firstDifference(_ a: [Float], _ b: [Float]) -> Int? {
    for i in 0..<b.count where i >= a.count || a[i] != b[i] { return i }
    return nil
}
