import Foundation
@testable import SegnoAudio
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import SegnoWaveform
import Testing

/// The source's own Float32 blocks only: hides `Int16Decoding`, so the chain takes the Float32 path.
private final class FloatOnly: AudioDecoder {
    let inner: SndFileDecoder
    init(_ inner: SndFileDecoder) { self.inner = inner }
    var info: SourceInfo { inner.info }
    func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int { try inner.read(into: &block, maxFrames: maxFrames) }
    func close() { inner.close() }
}

/// The waveform tap reads integer sources as int16 (`Int16Decoding`, libsndfile's
/// `sf_readf_short`): the same values as the Float32 path for 8/16/24-bit PCM and FLAC, and
/// exact where Float32 was not (32-bit PCM; μ-law and A-law were one step off before).
@Suite struct WaveformInt16PathTests {
    static let spp = 64

    /// 16-bit peaks of `path` through a waveform-only chain; `floatPath` forces Float32 blocks.
    static func peaks(_ path: String, split: Bool = false, floatPath: Bool = false) throws -> WaveformData {
        let decoder = try SndFileDecoder(path: path)
        defer { decoder.close() }
        let out = path + (floatPath ? ".float.json" : ".int16.json")
        let config = WaveformConfig(path: try PathTemplate("{stem}.json"), format: .json, bits: 16,
                                    resolutions: [.samplesPerPixel(spp)], split: split, picture: try WaveformPicture())
        let tap = WaveformTap(config: config, paths: [out], source: decoder.info)
        let source: any AudioDecoder = floatPath ? FloatOnly(decoder) : decoder
        _ = try StageChain(elements: [.tap(tap)]).run(decoder: source)
        return try WaveformJSON.decode(Fixtures.bytes(out))
    }

    /// Interleaved int16 as sox decodes the file (the independent reference).
    static func soxInt16(_ path: String) throws -> [Int16] {
        let r = try Tool.run("sox", [path, "-t", "s16", "-"])
        guard r.status == 0 else { throw FixtureError("sox: \(r.stderrText)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Mixed peaks computed here: per frame (L + R) / 2 truncated toward zero, min and max per point.
    static func expectedMix(_ samples: [Int16], channels: Int) -> [Int16] {
        let frames = samples.count / channels
        var out: [Int16] = []
        var f = 0
        while f < frames {
            var lo = Int16.max, hi = Int16.min
            for g in f..<min(frames, f + spp) {
                var s: Int32 = 0
                for c in 0..<channels { s += Int32(samples[g * channels + c]) }
                let m = Int16(s / Int32(channels))
                lo = min(lo, m)
                hi = max(hi, m)
            }
            out += [lo, hi]
            f += spp
        }
        return out
    }

    @Test(arguments: ["mu-law", "a-law"])
    func companded16BitPeaksAreExact(encoding: String) throws {
        let dir = try TempDir()
        try Fixtures.sox(["-n", "-r", "8000", "-c", "2", "-b", "16", dir["src.wav"], "synth", "2", "sine", "300", "sine", "1234", "vol", "0.9"])
        try Fixtures.sox([dir["src.wav"], "-e", encoding, dir["g711.wav"]])
        let info = try SndFileDecoder(path: dir["g711.wav"]).info
        #expect(info.codec == (encoding == "mu-law" ? "ULAW" : "ALAW"))
        let expected = Self.expectedMix(try Self.soxInt16(dir["g711.wav"]), channels: 2)
        #expect(expected.count == 2 * ((16000 + Self.spp - 1) / Self.spp))
        let int16 = try Self.peaks(dir["g711.wav"])
        #expect(int16.data == expected)
        // The Float32 path (a chain with other stages) now maps these codecs back exactly too.
        #expect(try Self.peaks(dir["g711.wav"], floatPath: true).data == expected)
    }

    @Test(arguments: [("wav", "16"), ("wav", "24"), ("wav", "8"), ("flac", "16"), ("flac", "24"), ("aiff", "16")])
    func integerPCMIsTheSameAsThroughFloat(container: String, bits: String) throws {
        let dir = try TempDir()
        let path = dir["x.\(container)"]
        try Fixtures.sox(["-n", "-r", "11025", "-c", "2", "-b", bits, path, "synth", "1.5", "sine", "200", "sine", "3001", "vol", "0.97"])
        for split in [false, true] {
            let a = try Self.peaks(path, split: split)
            let b = try Self.peaks(path, split: split, floatPath: true)
            #expect(a == b, "\(container) \(bits)-bit split \(split)")
            let frames = try SndFileDecoder(path: path).info.frames
            #expect(frames > 16000 && a.length == (frames + Self.spp - 1) / Self.spp)
        }
    }

    @Test func thirtyTwoBitPCMIsExactThroughInt16() throws {
        let dir = try TempDir()
        let path = dir["x.wav"]
        try Fixtures.sox(["-n", "-r", "8000", "-c", "1", "-b", "32", path, "synth", "1", "whitenoise", "vol", "0.9"])
        let r = try Tool.run("sox", [path, "-t", "s32", "-"])
        let s32 = r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Int32.self)) }
        let floor16 = s32.map { Int16($0 >> 16) }  // libsndfile's (and audiowaveform's) int16 view
        #expect(try Self.peaks(path).data == Self.expectedMix(floor16, channels: 1))
    }

    @Test func otherTapsKeepTheFloatPath() throws {
        let dir = try TempDir()
        try Fixtures.sox(["-n", "-r", "8000", "-c", "2", "-b", "16", dir["a.wav"], "synth", "1", "sine", "440"])
        let decoder = try SndFileDecoder(path: dir["a.wav"])
        defer { decoder.close() }
        let config = WaveformConfig(path: try PathTemplate("{stem}.json"), format: .json, bits: 16,
                                    resolutions: [.samplesPerPixel(Self.spp)], split: false, picture: try WaveformPicture())
        let waveform = WaveformTap(config: config, paths: [dir["a.json"]], source: decoder.info)
        let counter = BlockCounter()
        _ = try StageChain(elements: [.tap(waveform), .tap(counter)]).run(decoder: decoder)
        #expect(counter.frames == 8000)
        #expect(try WaveformJSON.decode(Fixtures.bytes(dir["a.json"])) == Self.peaks(dir["a.wav"]))
    }
}

/// Counts the Float32 frames it sees.
private final class BlockCounter: Tap {
    var frames = 0
    func start(_ format: AudioFormat) throws {}
    func observe(_ block: AudioBlock) throws { frames += block.frames }
    func finish() throws -> [ProducedFile] { [] }
    func abandon() {}
}
