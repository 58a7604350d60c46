import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import SegnoKit
import Testing

@Suite struct SndFileEncoderTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    /// Converts with the same code path as `segno convert`, keeping the source's depth.
    func convert(_ input: String, _ output: String) throws {
        _ = try Convert.run(input: input, output: output, tools: .forTests, transforms: [],
                            encode: EncodeConfig(path: try PathTemplate((output as NSString).lastPathComponent),
                                                 format: nil, bits: nil, quality: nil, searchPath: AudioTools.forTests.searchPath))
    }

    @Test(arguments: [16, 24])
    func wavToFlacToWavIsBitExact(bits: Int) throws {
        // Noise on the integer grid, plus both full-scale extremes.
        var x = Signal.quantised(Signal.noise(frames: 20000, channels: 2, amplitude: 1.0), bits: bits)
        let lsb = 1 / Float(1 << (bits - 1))
        x[0] = -1; x[1] = 1 - lsb; x[2] = lsb; x[3] = -lsb
        let sampleBits: SampleBits = bits == 16 ? .b16 : .b24
        let wav = try Fixtures.write(x, channels: 2, to: dir["in.wav"], bits: sampleBits)
        try convert(wav, dir["mid.flac"])
        try convert(dir["mid.flac"], dir["out.wav"])

        let flac = try Fixtures.decode(dir["mid.flac"])
        #expect(flac.info.codec == "PCM_\(bits)")
        #expect(flac.samples == x)
        let back = try Fixtures.decode(dir["out.wav"])
        #expect(back.info.codec == "PCM_\(bits)")
        #expect(back.samples == x)
        // The audio bytes are the same bytes.
        let a = try Fixtures.bytes(wav), b = try Fixtures.bytes(dir["out.wav"])
        let da = try #require(Fixtures.chunkOffset("data", in: a)), db = try #require(Fixtures.chunkOffset("data", in: b))
        #expect(a[da...] == b[db...])
        #expect(dir.contents() == ["in.wav", "mid.flac", "out.wav"])
    }

    @Test func floatOutOfRangeIsClippedForIntegerOutput() throws {
        let x: [Float] = [1.5, -1.5, 1.0, -1.0, 0.5]
        let p = try Fixtures.write(x, to: dir["clip.wav"], bits: .b16)
        #expect(try Fixtures.decode(p).samples == [32767.0 / 32768, -1, 32767.0 / 32768, -1, 0.5])
    }

    @Test func writesUnderATemporaryNameUntilFinished() throws {
        let final = dir["out.wav"]
        let enc = try SndFileEncoder(path: final, format: .wav, bits: .b16, quality: nil,
                                     stream: AudioFormat(sampleRate: 8000, channels: 1))
        try enc.write(AudioBlock(interleaved: Signal.sine(rate: 8000, frames: 800), channels: 1))
        let during = dir.contents()
        #expect(during.count == 1)
        #expect(during.allSatisfy { $0.hasPrefix(".segno-tmp-") && $0.hasSuffix("out.wav") }, "\(during)")
        #expect(OutputFile.tempPrefix == ".segno-tmp-")
        #expect(!FileManager.default.fileExists(atPath: final))
        try enc.finish()
        #expect(dir.contents() == ["out.wav"])
        #expect(try Fixtures.decode(final).info.frames == 800)
        #expect(enc.framesWritten == 800)
    }

    @Test func abandonLeavesNothing() throws {
        let enc = try SndFileEncoder(path: dir["sub/out.flac"], format: .flac, bits: .b16, quality: nil,
                                     stream: AudioFormat(sampleRate: 44100, channels: 2))
        try enc.write(AudioBlock(interleaved: Signal.noise(frames: 4096, channels: 2), channels: 2))
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: dir["sub"])).isEmpty)
        enc.abandon()
        enc.abandon()  // safe twice
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir["sub"]).isEmpty)
        #expect(throws: AudioError.self) { try enc.finish() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir["sub"]).isEmpty)
    }

    @Test func droppingAnUnfinishedEncoderLeavesNothing() throws {
        do {
            let enc = try SndFileEncoder(path: dir["out.wav"], format: .wav, bits: .b24, quality: nil,
                                         stream: AudioFormat(sampleRate: 44100, channels: 1))
            try enc.write(AudioBlock(interleaved: Signal.noise(frames: 1000), channels: 1))
            #expect(dir.contents().count == 1)
        }
        #expect(dir.contents().isEmpty)
    }

    @Test func anExistingFileIsReplacedOnlyWhenTheNewOneIsComplete() throws {
        let final = try Fixtures.write(Signal.quantised(Signal.noise(frames: 100), bits: 16), to: dir["out.wav"])
        let before = try Fixtures.bytes(final)
        let enc = try SndFileEncoder(path: final, format: .wav, bits: .b16, quality: nil,
                                     stream: AudioFormat(sampleRate: 44100, channels: 1))
        try enc.write(AudioBlock(interleaved: Signal.noise(frames: 5000), channels: 1))
        #expect(try Fixtures.bytes(final) == before)
        enc.abandon()
        #expect(try Fixtures.bytes(final) == before)
        #expect(dir.contents() == ["out.wav"])
    }

    @Test func failedCommitLeavesNoPartialOutput() throws {
        // The final name is taken by a non-empty folder, so the rename into place fails.
        let final = dir["out.wav"]
        try FileManager.default.createDirectory(atPath: final, withIntermediateDirectories: false)
        try Fixtures.writeBytes([1], to: final + "/keep")
        let enc = try SndFileEncoder(path: final, format: .wav, bits: .b16, quality: nil,
                                     stream: AudioFormat(sampleRate: 8000, channels: 1))
        try enc.write(AudioBlock(interleaved: Signal.noise(frames: 800), channels: 1))
        let e = try #require(throws: AudioError.self) { try enc.finish() }
        #expect(e.path == final)
        #expect(e.description.contains(final))
        #expect(dir.contents() == ["out.wav"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: final) == ["keep"])
    }

    @Test func failedConversionLeavesNoOutput() throws {
        // A FLAC whose end is cut off fails while reading: the half-written output must go.
        let good = try Fixtures.write(Signal.noise(frames: 44100, channels: 2), channels: 2, to: dir["good.flac"])
        let size = try Fixtures.bytes(good).count
        let cut = try Fixtures.truncatedCopy(of: good, bytes: size / 2, to: dir["cut.flac"])
        #expect(throws: AudioError.self) { try convert(cut, dir["out/cut.wav"]) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir["out"]).isEmpty)
    }

    @Test func opusAt44100IsRefusedClearly() throws {
        let e = try #require(throws: AudioError.self) {
            try SndFileEncoder(path: dir["x.opus"], format: .opus, bits: nil, quality: nil,
                               stream: AudioFormat(sampleRate: 44100, channels: 2))
        }
        guard case .unsupportedOutput(let path, let detail) = e else { Issue.record("got \(e)"); return }
        #expect(path == dir["x.opus"])
        #expect(detail.contains("44100 Hz"))
        #expect(detail.contains("48000"))
        #expect(detail.contains("resample"))
        #expect(dir.contents().isEmpty)
    }

    @Test func formatLimitsAreRefusedBeforeAnythingIsWritten() throws {
        #expect(throws: AudioError.self) {  // FLAC has no float samples
            try SndFileEncoder(path: dir["x.flac"], format: .flac, bits: .float, quality: nil,
                               stream: AudioFormat(sampleRate: 44100, channels: 1))
        }
        #expect(throws: AudioError.self) {  // MP3 holds at most 2 channels
            try SndFileEncoder(path: dir["x.mp3"], format: .mp3, bits: nil, quality: nil,
                               stream: AudioFormat(sampleRate: 44100, channels: 6))
        }
        #expect(throws: AudioError.self) {
            try SndFileEncoder(path: dir["x.mp3"], format: .mp3, bits: nil, quality: nil,
                               stream: AudioFormat(sampleRate: 96000, channels: 1))
        }
        #expect(dir.contents().isEmpty)
    }

    @Test(arguments: [(OutputFormat.ogg, 44100), (.opus, 48000), (.opus, 16000), (.mp3, 22050)])
    func lossyOutputsDecodeBack(format: OutputFormat, rate: Int) throws {
        let x = Signal.sine(frequency: 500, rate: rate, frames: rate / 4, channels: 1, amplitude: 0.5)
        let p = try Fixtures.write(x, rate: rate, to: dir["x.\(format.rawValue)"], quality: 0.5)
        let d = try Fixtures.decode(p)
        #expect(d.info.sampleRate == rate)
        #expect(d.info.channels == 1)
        #expect(d.info.sampleKind == .lossy)
        let n = d.samples.count
        let peak = d.samples[(n / 5)..<(n * 4 / 5)].map(abs).max() ?? 0
        #expect(peak > 0.4 && peak < 0.6, "a 0.5 sine decoded with peak \(peak)")
    }

    @Test func defaultDepthFollowsTheSource() throws {
        // Defaults: integer depth kept (8-bit too), float and double kept where the container
        // holds them, lossy sources become 16-bit.
        #expect(SampleBits.defaultFor(source: .integer, sourceCodec: "PCM_24", format: .flac) == .b24)
        #expect(SampleBits.defaultFor(source: .integer, sourceCodec: "PCM_U8", format: .wav) == .b8)
        #expect(SampleBits.defaultFor(source: .integer, sourceCodec: "PCM_S8", format: .aiff) == .b8)
        #expect(SampleBits.defaultFor(source: .integer, sourceCodec: "PCM_8", format: .flac) == .b8)
        #expect(SampleBits.defaultFor(source: .integer, sourceCodec: "ALAC_20", format: .caf) == .b24)
        #expect(SampleBits.defaultFor(source: .integer, sourceCodec: "PCM_32", format: .flac) == .b24)
        #expect(SampleBits.defaultFor(source: .float, sourceCodec: "FLOAT", format: .wav) == .float)
        for format in [OutputFormat.wav, .caf, .aiff, .w64, .rf64] {
            #expect(SampleBits.defaultFor(source: .float, sourceCodec: "DOUBLE", format: format) == .double, "\(format)")
        }
        #expect(SampleBits.defaultFor(source: .float, sourceCodec: "DOUBLE", format: .flac) == .b24)
        #expect(SampleBits.defaultFor(source: .float, sourceCodec: "FLOAT", format: .flac) == .b24)
        #expect(SampleBits.defaultFor(source: .lossy, sourceCodec: "MP3", format: .flac) == .b16)
        #expect(SampleBits.defaultFor(source: .integer, sourceCodec: "PCM_16", format: .ogg) == nil)
    }
}
