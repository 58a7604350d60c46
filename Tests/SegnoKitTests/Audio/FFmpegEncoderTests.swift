import Foundation
@testable import SegnoAudio
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
@testable import SegnoKit
import SegnoTestSupport
import Testing

// AAC and ALAC in .m4a through the ffmpeg program. ffprobe and ffmpeg's own decoder are the
// independent references for what was written; the sources are 16/24-bit WAVs libsndfile writes.

@Suite struct FFmpegEncoderTests {
    let fx: PhoneFixtures
    init() throws { fx = try PhoneFixtures() }

    /// `segno convert`'s code path: `input` through no transforms into one encode tap.
    func convert(_ input: String, to name: String, format: OutputFormat? = nil, bits: SampleBits? = nil,
                 bitrate: Int? = nil) throws -> String {
        let out = fx.dir[name]
        _ = try Convert.run(input: input, output: out, tools: .forTests, transforms: [],
                            encode: EncodeConfig(path: try PathTemplate(name), format: format, bits: bits, quality: nil, bitrate: bitrate, searchPath: AudioTools.forTests.searchPath))
        return out
    }

    /// ffprobe's view of the first audio stream: codec, sample rate, channels, duration in the
    /// stream's time base, and that time base's denominator; plus the bitrate.
    static func probe(_ path: String) throws -> [String: String] {
        let r = try Tool.run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries",
                                         "stream=codec_name,profile,sample_rate,channels,duration_ts,time_base,bit_rate,bits_per_raw_sample",
                                         "-of", "default=noprint_wrappers=1", "file:" + path])
        guard r.status == 0 else { throw FixtureError("ffprobe \(path): \(r.stderrText)") }
        var d: [String: String] = [:]
        for line in r.stdoutText.split(separator: "\n") {
            let kv = line.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { d[String(kv[0])] = String(kv[1]) }
        }
        return d
    }

    /// ffmpeg's decode of `path` as raw integers (`s16le` or `s32le`): the bytes to compare.
    static func rawDecode(_ path: String, _ format: String) throws -> Data {
        let r = try Tool.run("ffmpeg", ["-v", "error", "-nostdin", "-i", "file:" + path, "-f", format, "pipe:1"])
        guard r.status == 0 else { throw FixtureError("ffmpeg could not decode \(path): \(r.stderrText)") }
        return r.stdout
    }

    /// The samples of `x` as little-endian integers of `bits` (16, or 24 shifted into 32).
    static func integers(_ x: [Float], bits: Int) -> Data {
        var d = Data()
        for v in x {
            if bits == 16 {
                withUnsafeBytes(of: Int16(v * 32768).littleEndian) { d.append(contentsOf: $0) }
            } else {
                withUnsafeBytes(of: (Int32(v * 8_388_608) << 8).littleEndian) { d.append(contentsOf: $0) }
            }
        }
        return d
    }

    @Test(arguments: [(44100, 1, 100_003), (48000, 2, 77_777)])
    func aacHasItsSourcesLength(rate: Int, channels: Int, frames: Int) throws {
        let src = try fx.wav(rate: rate, channels: channels, frames: frames)
        let out = try convert(src.path, to: "memo.m4a")
        let p = try Self.probe(out)
        #expect(p["codec_name"] == "aac")
        #expect(p["profile"] == "LC")
        #expect(p["sample_rate"] == String(rate) && p["channels"] == String(channels))
        // The edit list counts in samples: ffprobe's duration is the source's, to the frame.
        #expect(p["time_base"] == "1/\(rate)")
        #expect(p["duration_ts"] == String(frames), "\(p)")
        // 64 kb/s per channel by default.
        let bps = Int(p["bit_rate"] ?? "") ?? 0
        #expect(abs(bps - 64_000 * channels) < 8_000 * channels, "\(p)")
        // ffmpeg's own decoder drops the priming; the end padding stays within one AAC frame.
        let decoded = try PhoneFixtures.reference(out).count / channels
        #expect(decoded >= frames && decoded < frames + 1024, "ffmpeg decoded \(decoded) of \(frames)")
        // segno reads it back to the frame, aligned with the source (lossy: close, not equal; the
        // noise in the signal keeps AAC at 64 kb/s near 18 dB, a shift by one AAC frame gives 0 dB).
        let back = try factoryDecode(out)
        #expect(back.info.frames == frames && back.samples.count == frames * channels)
        #expect(back.info.codec == "AAC")
        let err = zip(back.samples, src.samples).map { Double($0 - $1) * Double($0 - $1) }.reduce(0, +)
        let sig = src.samples.map { Double($0) * Double($0) }.reduce(0, +)
        #expect(10 * log10(sig / err) > 12, "SNR \(10 * log10(sig / err)) dB")
        #expect(fx.dir.contents().sorted() == ["memo.m4a", "source.wav"])
    }

    @Test func aacBitrateIsTheOneAskedFor() throws {
        let src = try fx.wav(rate: 48000, channels: 2, frames: 96_000)
        let out = try convert(src.path, to: "lo.m4a", bitrate: 48_000)
        let bps = Int(try Self.probe(out)["bit_rate"] ?? "") ?? 0
        #expect(abs(bps - 48_000) < 6_000, "\(bps)")
    }

    @Test func alac16IsBitExact() throws {
        let src = try fx.wav(rate: 44100, channels: 2, frames: 50_001)
        var x = src.samples
        x[0] = -1; x[1] = 32767.0 / 32768   // both full-scale extremes
        let wav = try Fixtures.write(x, channels: 2, rate: 44100, to: fx.dir["edges.wav"], bits: .b16)
        let out = try convert(wav, to: "memo.m4a", format: .alac)
        let p = try Self.probe(out)
        #expect(p["codec_name"] == "alac" && p["bits_per_raw_sample"] == "16", "\(p)")
        #expect(p["duration_ts"] == "50001")
        #expect(try Self.rawDecode(out, "s16le") == Self.integers(x, bits: 16))
        // And through segno's own decode.
        let back = try factoryDecode(out)
        #expect(back.info.codec == "ALAC_16")
        #expect(back.samples == x)
    }

    @Test func alacKeepsA24BitSourcesDepth() throws {
        var x = Signal.quantised(Signal.noise(frames: 30_000, channels: 1, amplitude: 0.9), bits: 24)
        x[0] = -1; x[1] = 8_388_607.0 / 8_388_608
        let wav = try Fixtures.write(x, channels: 1, rate: 96000, to: fx.dir["hi.wav"], bits: .b24)
        let out = try convert(wav, to: "hi.m4a", format: .alac)   // bits from the source: 24
        let p = try Self.probe(out)
        #expect(p["codec_name"] == "alac" && p["bits_per_raw_sample"] == "24" && p["sample_rate"] == "96000", "\(p)")
        #expect(try Self.rawDecode(out, "s32le") == Self.integers(x, bits: 24))
        // Asked for 16: rounded to 16 bits.
        let low = try convert(wav, to: "lo.m4a", format: .alac, bits: .b16)
        #expect(try Self.probe(low)["bits_per_raw_sample"] == "16")
        #expect(try Self.rawDecode(low, "s16le") == Self.integers(Signal.quantised(x, bits: 16).map { min($0, 32767.0 / 32768) }, bits: 16))
    }

    @Test func theSameInputGivesTheSameBytes() throws {
        // A rerun after kill -9 must produce the same file: no creation time, no version string.
        let src = try fx.wav(rate: 16000, channels: 1, frames: 16_000)
        let a = try Fixtures.bytes(try convert(src.path, to: "a.m4a"))
        let b = try Fixtures.bytes(try convert(src.path, to: "b.m4a"))
        #expect(a == b)
        #expect(!String(decoding: a, as: UTF8.self).contains("Lavf"))
    }

    @Test func writesUnderATemporaryNameAndAbandonLeavesNothing() throws {
        let final = fx.dir["out.m4a"]
        let stream = AudioFormat(sampleRate: 8000, channels: 1)
        let ffmpeg = try #require(Tool.find("ffmpeg"))
        let enc = try FFmpegEncoder(path: final, format: .aac, bits: nil, bitrate: nil, stream: stream, executable: ffmpeg)
        try enc.write(AudioBlock(interleaved: Signal.sine(rate: 8000, frames: 8000), channels: 1))
        // ffmpeg creates its file once it has read enough to start: only ever the temporary name.
        let during = fx.dir.contents()
        #expect(during.count <= 1 && during.allSatisfy { $0.hasPrefix(OutputFile.tempPrefix) }, "\(during)")
        enc.abandon()
        enc.abandon()
        #expect(fx.dir.contents().isEmpty)
        // Finished: only the final name.
        let done = try FFmpegEncoder(path: final, format: .aac, bits: nil, bitrate: nil, stream: stream, executable: ffmpeg)
        try done.write(AudioBlock(interleaved: Signal.sine(rate: 8000, frames: 8000), channels: 1))
        try done.finish()
        #expect(fx.dir.contents() == ["out.m4a"])
        #expect(done.framesWritten == 8000)
    }

    @Test func withoutFFmpegOneClearLineAnEnvironmentFailure() throws {
        let out = fx.dir["memo.m4a"]
        do {
            _ = try FFmpegEncoder(path: out, format: .aac, bits: nil, bitrate: nil,
                                  stream: AudioFormat(sampleRate: 44100, channels: 1), executable: nil)
            Issue.record("no error without ffmpeg")
        } catch let e as AudioError {
            #expect(e == .missingEncoder(path: out, detail: "AAC output needs ffmpeg on PATH; install it with apt-get install ffmpeg"))
            #expect(e.description == "\(out): AAC output needs ffmpeg on PATH; install it with apt-get install ffmpeg")
            #expect(FailureClass.of(e) == .environment)
        }
        #expect(fx.dir.contents().isEmpty)
    }

    @Test func aFailingFFmpegLeavesNoOutputAndSaysWhy() throws {
        // A program standing in for ffmpeg that reads a little, complains and exits 1.
        let fake = fx.dir["ffmpeg"]
        try "#!/bin/sh\nhead -c 100 >/dev/null\necho 'Error while opening encoder: something broke' >&2\nexit 1\n"
            .write(toFile: fake, atomically: false, encoding: .utf8)
        chmod(fake, 0o755)
        let out = fx.dir["out/memo.m4a"]
        let enc = try FFmpegEncoder(path: out, format: .aac, bits: nil, bitrate: nil,
                                    stream: AudioFormat(sampleRate: 44100, channels: 1), executable: fake)
        var thrown: AudioError?
        do {
            // Enough blocks to fill the pipe once the child has stopped reading.
            for _ in 0..<64 { try enc.write(AudioBlock(interleaved: Signal.noise(frames: 44100), channels: 1)) }
            try enc.finish()
        } catch let e as AudioError { thrown = e }
        let e = try #require(thrown)
        #expect(e.description.hasPrefix("\(out): encode failed: ffmpeg exit status 1 after "), "\(e)")
        #expect(e.description.hasSuffix("Error while opening encoder: something broke"), "\(e)")
        #expect(FailureClass.of(e) == .environment)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fx.dir["out"]).isEmpty)
    }

    @Test func aRateOrChannelCountAACCannotTakeIsRefusedBeforeFFmpegRuns() throws {
        #expect(throws: AudioError.unsupportedOutput(path: "x.m4a", detail: "aac cannot be written at 44000 Hz (allowed: 7350, 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000 Hz); add a resample stage")) {
            _ = try FFmpegEncoder(path: "x.m4a", format: .aac, bits: nil, bitrate: nil,
                                  stream: AudioFormat(sampleRate: 44000, channels: 1), executable: "/nonexistent")
        }
        #expect(throws: AudioError.self) {
            _ = try FFmpegEncoder(path: "x.m4a", format: .alac, bits: nil, bitrate: nil,
                                  stream: AudioFormat(sampleRate: 44100, channels: 9), executable: "/nonexistent")
        }
        #expect(throws: AudioError.unsupportedOutput(path: "x.m4a", detail: "aac is lossy; use bitrate instead of bits")) {
            _ = try FFmpegEncoder(path: "x.m4a", format: .aac, bits: .b16, bitrate: nil,
                                  stream: AudioFormat(sampleRate: 44100, channels: 1), executable: "/nonexistent")
        }
    }

    @Test func anEmptyStreamIsAnErrorNotATracklessFile() throws {
        let ffmpeg = try #require(Tool.find("ffmpeg"))
        let enc = try FFmpegEncoder(path: fx.dir["empty.m4a"], format: .alac, bits: nil, bitrate: nil,
                                    stream: AudioFormat(sampleRate: 44100, channels: 1), executable: ffmpeg)
        #expect(throws: AudioError.self) { try enc.finish() }
        #expect(fx.dir.contents().isEmpty)
    }

    @Test func theDefaultDepthForALAC() {
        #expect(SampleBits.defaultFor(source: .integer, sourceCodec: "PCM_16", format: .alac) == .b16)
        #expect(SampleBits.defaultFor(source: .integer, sourceCodec: "PCM_24", format: .alac) == .b24)
        #expect(SampleBits.defaultFor(source: .integer, sourceCodec: "PCM_32", format: .alac) == .b24)
        #expect(SampleBits.defaultFor(source: .integer, sourceCodec: "PCM_U8", format: .alac) == .b16)
        #expect(SampleBits.defaultFor(source: .float, sourceCodec: "FLOAT", format: .alac) == .b24)
        #expect(SampleBits.defaultFor(source: .lossy, sourceCodec: "MP3", format: .alac) == .b16)
        #expect(SampleBits.defaultFor(source: .integer, sourceCodec: "PCM_24", format: .aac) == nil)
        #expect(OutputFormat(extensionOf: "a/memo.M4A") == .aac)
    }

    @Test func bitrateText() {
        #expect(EncodeConfig.parseBitrate("128k") == 128_000)
        #expect(EncodeConfig.parseBitrate("96000") == 96_000)
        #expect(EncodeConfig.parseBitrate("64K") == 64_000)
        #expect(EncodeConfig.parseBitrate("1M") == nil)
        #expect(EncodeConfig.parseBitrate("4k") == nil)
        #expect(EncodeConfig.parseBitrate("2000k") == nil)
        #expect(EncodeConfig.parseBitrate("-128k") == nil)
    }
}

@Suite struct EncodeM4ASpecTests {
    func load(_ encode: String) throws(SpecError) -> EncodeConfig? {
        let yaml = "version: 1\ninput:\n  root: in\noutput:\n  root: out\nstages:\n  - \(encode)\n"
        return try SpecLoader.parse(yaml, file: "spec.yaml", baseDirectory: "/base", registry: .forTests).stages.last?.config as? EncodeConfig
    }

    func message(_ encode: String) -> String? {
        do { _ = try load(encode); return nil } catch { return error.message }
    }

    @Test func m4aIsAACAndALACIsAskedFor() throws {
        let aac = try #require(try load("encode: { path: \"{stem}.m4a\", bitrate: 96k }"))
        #expect(try aac.resolvedFormat(path: "/o/a.m4a") == .aac)
        #expect(aac.bitrate == 96_000)
        #expect(aac.options.contains { $0 == ("bitrate", "96000") })
        let alac = try #require(try load("encode: { path: \"{stem}.m4a\", format: alac, bits: 24 }"))
        #expect(alac.format == .alac && alac.bits == .b24)
        // No bitrate: the options (and so the fingerprints of existing specs) are unchanged.
        let flac = try #require(try load("encode: { path: \"{stem}.flac\" }"))
        #expect(flac.options.map(\.0) == ["path"])
    }

    @Test func optionsThatDoNotFitAreRefusedAtLoad() {
        #expect(message("encode: { path: a.m4a, bits: 16 }")?.contains("aac is lossy; use bitrate instead of bits") == true)
        #expect(message("encode: { path: a.m4a, quality: 0.5 }")?.contains("aac takes bitrate") == true)
        #expect(message("encode: { path: a.m4a, format: alac, quality: 0.5 }")?.contains("no quality setting") == true)
        #expect(message("encode: { path: a.m4a, format: alac, bits: 8 }")?.contains("alac cannot hold 8-bit samples") == true)
        #expect(message("encode: { path: a.flac, bitrate: 128k }")?.contains("bitrate applies to aac and mp3 only") == true)
        #expect(message("encode: { path: a.m4a, bitrate: fast }")?.contains("bitrate must be") == true)
    }
}
