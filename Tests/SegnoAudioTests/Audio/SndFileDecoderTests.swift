import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import Testing

/// Opens and reads `path` to the end; returns the `AudioError` thrown and whether it came from
/// opening (true) or from reading (false), or nil when the file decoded.
private func decodeFailure(_ path: String, blockFrames: Int = 4096) -> (error: AudioError, atOpen: Bool)? {
    let decoder: SndFileDecoder
    do { decoder = try SndFileDecoder(path: path) } catch let e as AudioError { return (e, true) } catch {
        Issue.record("non-AudioError thrown at open: \(error)")
        return nil
    }
    defer { decoder.close() }
    var block = AudioBlock(channels: decoder.info.channels, capacity: blockFrames)
    do {
        while try decoder.read(into: &block, maxFrames: blockFrames) > 0 {}
    } catch let e as AudioError { return (e, false) } catch {
        Issue.record("non-AudioError thrown while reading: \(error)")
    }
    return nil
}

/// Every error message names the file and fits on one line.
private func expectNamesFile(_ e: AudioError, _ path: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(e.path == path, sourceLocation: sourceLocation)
    #expect(e.description.contains(path), "message should name the file: \(e.description)", sourceLocation: sourceLocation)
    #expect(!e.description.contains("\n"), "message should be one line: \(e.description)", sourceLocation: sourceLocation)
}

@Suite struct SndFileDecoderBadInputTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    /// A good 0.5 s 16-bit mono WAV (44-byte header + 44100 bytes of data).
    func goodWAV(_ name: String = "good.wav") throws -> String {
        try Fixtures.write(Signal.noise(frames: 22050), rate: 44100, to: dir[name], bits: .b16)
    }

    @Test func zeroByteFile() throws {
        let p = try Fixtures.writeBytes([], to: dir["empty.wav"])
        let f = try #require(decodeFailure(p))
        #expect(f.error == .empty(path: p))
        #expect(f.atOpen)
        expectNamesFile(f.error, p)
        #expect(f.error.description.contains("empty"))
    }

    @Test func textFileNamedWAV() throws {
        let p = try Fixtures.writeBytes(Array("Shopping list:\n- milk\n- eggs\n".utf8), to: dir["notes.wav"])
        let f = try #require(decodeFailure(p))
        guard case .unrecognised(_, let like, let detail) = f.error else {
            Issue.record("expected .unrecognised, got \(f.error)"); return
        }
        #expect(like == "text")
        #expect(!detail.isEmpty, "libsndfile's own reason should be kept")
        #expect(f.error.description.contains("looks like text"))
        expectNamesFile(f.error, p)
    }

    @Test func wavTruncatedMidData() throws {
        let good = try goodWAV()
        let size = try Fixtures.bytes(good).count
        let p = try Fixtures.truncatedCopy(of: good, bytes: 44 + (size - 44) / 2 + 1, to: dir["cut.wav"])
        let f = try #require(decodeFailure(p))
        guard case .truncated = f.error else { Issue.record("expected .truncated, got \(f.error)"); return }
        expectNamesFile(f.error, p)
        #expect(f.error.description.contains("truncated"))
    }

    @Test func wavHeaderClaimsFarMoreThanTheFileHolds() throws {
        var b = try Fixtures.bytes(try goodWAV())
        let data = try #require(Fixtures.chunkOffset("data", in: b))
        // Claim 1.9 GB of audio in the data chunk and the RIFF header.
        for (offset, value) in [(4, UInt32(0x7200_0000)), (data + 4, UInt32(0x7100_0000))] {
            for k in 0..<4 { b[offset + k] = UInt8((value >> (8 * UInt32(k))) & 0xFF) }
        }
        let p = try Fixtures.writeBytes(b, to: dir["liar.wav"])
        let f = try #require(decodeFailure(p))
        guard case .truncated(_, let detail) = f.error else { Issue.record("expected .truncated, got \(f.error)"); return }
        #expect(f.atOpen, "the lie is visible in the header; it should be caught on open")
        #expect(detail.contains(String(0x7100_0000)), "message should give the claimed size: \(detail)")
        expectNamesFile(f.error, p)
    }

    @Test func flacWithItsEndCutOff() throws {
        let good = try Fixtures.write(Signal.noise(frames: 44100, channels: 2), channels: 2, to: dir["good.flac"], bits: .b16)
        let size = try Fixtures.bytes(good).count
        let p = try Fixtures.truncatedCopy(of: good, bytes: size * 6 / 10, to: dir["cut.flac"])
        // The header (STREAMINFO) is intact, so the file opens and the damage shows while reading.
        let info = try SndFileDecoder(path: p).info
        #expect(info.frames == 44100)
        let f = try #require(decodeFailure(p))
        #expect(!f.atOpen)
        switch f.error {
        case .truncated, .decodeFailed: break
        default: Issue.record("expected .truncated or .decodeFailed, got \(f.error)")
        }
        expectNamesFile(f.error, p)
    }

    @Test(.disabled(if: geteuid() == 0, "running as root, where no file is unreadable; SegnoCLITests runs segno as nobody instead"))
    func unreadableFile() throws {
        let p = try goodWAV("locked.wav")
        #expect(chmod(p, 0) == 0)
        let f = try #require(decodeFailure(p))
        guard case .unreadable(_, let reason) = f.error else { Issue.record("expected .unreadable, got \(f.error)"); return }
        #expect(reason.lowercased().contains("permission"))
        expectNamesFile(f.error, p)
    }

    @Test func directoryGivenAsAFile() throws {
        let p = dir["folder.wav"]
        try FileManager.default.createDirectory(atPath: p, withIntermediateDirectories: false)
        let f = try #require(decodeFailure(p))
        #expect(f.error == .notAFile(path: p))
        expectNamesFile(f.error, p)
    }

    @Test func fifoGivenAsAFile() throws {
        let p = dir["pipe.wav"]
        #expect(mkfifo(p, 0o644) == 0)
        // Must not block waiting for a writer: the type is checked before opening.
        let f = try #require(decodeFailure(p))
        #expect(f.error == .notAFile(path: p))
        expectNamesFile(f.error, p)
    }

    @Test(arguments: ["missing.wav", "no-such-folder/missing.wav"])
    func missingFile(name: String) throws {
        let p = dir[name]
        let f = try #require(decodeFailure(p))
        #expect(f.error == .missing(path: p))
        #expect(f.error.description.contains("no such file"))
        expectNamesFile(f.error, p)
    }

    @Test func pathThroughAFileIsMissing() throws {
        let p = try goodWAV() + "/inner.wav"
        let f = try #require(decodeFailure(p))
        #expect(f.error == .missing(path: p))
    }

    /// 4000 pseudo-random bytes (a damaged download, say).
    func randomBytes(first: [UInt8] = [0x42]) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 4000)
        var s: UInt32 = 12345
        for i in bytes.indices { s = s &* 1_103_515_245 &+ 12345; bytes[i] = UInt8(truncatingIfNeeded: s >> 16) }
        for (i, b) in first.enumerated() { bytes[i] = b }
        return bytes
    }

    @Test func randomBytesNamedFLAC() throws {
        let p = try Fixtures.writeBytes(randomBytes(), to: dir["noise.flac"])
        let f = try #require(decodeFailure(p))
        #expect(f.atOpen)
        guard case .unrecognised(_, let like, _) = f.error else { Issue.record("expected .unrecognised, got \(f.error)"); return }
        #expect(like == nil || like == "unknown data")
        expectNamesFile(f.error, p)
    }

    /// libsndfile takes any file starting with the bytes 01 04 for an Akai MPC 2000 sample and
    /// "decodes" the rest as 16-bit PCM; segno refuses such weakly detected formats.
    @Test func randomBytesStartingLikeAnAkaiMPCSampleAreNotAudio() throws {
        let p = try Fixtures.writeBytes(randomBytes(first: [0x01, 0x04]), to: dir["noise.flac"])
        let f = try #require(decodeFailure(p))
        guard case .unrecognised = f.error else { Issue.record("expected .unrecognised, got \(f.error)"); return }
    }

    @Test func newlineInNameStaysOneLine() throws {
        let p = dir["two\nlines.wav"]
        let f = try #require(decodeFailure(p))
        #expect(f.error == .missing(path: p))
        #expect(f.error.description.contains("two\\nlines.wav"))
        #expect(!f.error.description.contains("\n"))
    }

    /// An MP3 as libsndfile writes it (starts with a frame sync) or as ffmpeg does (an ID3v2 tag first).
    @Test(arguments: [false, true])
    func mp3NamedWAVDecodesAsMP3(withID3: Bool) throws {
        var mp3 = try Fixtures.write(Signal.sine(frequency: 440, rate: 44100, frames: 22050), rate: 44100,
                                     to: dir["song.mp3"], format: .mp3)
        if withID3 {
            let tagged = dir["tagged.mp3"]
            let r = try Tool.run("ffmpeg", ["-nostdin", "-loglevel", "error", "-i", mp3, "-c:a", "libmp3lame",
                                            "-metadata", "title=Song", tagged])
            #expect(r.status == 0, "ffmpeg: \(r.stderrText)")
            #expect(try Fixtures.bytes(tagged).starts(with: Array("ID3".utf8)))
            mp3 = tagged
        }
        let disguised = try Fixtures.writeBytes(try Fixtures.bytes(mp3), to: dir["song.wav"])
        let real = try Fixtures.decode(mp3)
        switch Result(catching: { try Fixtures.decode(disguised) }) {
        case .success(let d):
            // Decoding by content: the same audio as the honest name gives.
            #expect(d.info.container == real.info.container)
            #expect(d.info.codec == "MP3")
            #expect(d.samples == real.samples)
        case .failure(let e as AudioError):
            guard case .unrecognised(_, let like, _) = e else { Issue.record("unexpected error \(e)"); return }
            #expect(like == "MP3")
        case .failure(let e):
            Issue.record("unexpected error \(e)")
        }
    }

    @Test func aacNamedWAVSaysWhatItLooksLike() throws {
        let wav = try goodWAV("src.wav")
        let aac = dir["voice.wav"]
        let r = try Tool.run("ffmpeg", ["-nostdin", "-loglevel", "error", "-i", wav, "-c:a", "aac", "-f", "adts", aac])
        #expect(r.status == 0, "ffmpeg: \(r.stderrText)")
        let f = try #require(decodeFailure(aac))
        #expect(f.atOpen)
        guard case .unrecognised(_, let like, _) = f.error else { Issue.record("expected .unrecognised, got \(f.error)"); return }
        #expect(like == "AAC (ADTS)")
        #expect(f.error.description.contains("looks like AAC"))
        expectNamesFile(f.error, aac)
    }

    @Test func m4aNamedWAVSaysWhatItLooksLike() throws {
        let wav = try goodWAV("src.wav")
        let m4a = dir["memo.wav"]
        let r = try Tool.run("ffmpeg", ["-nostdin", "-loglevel", "error", "-i", wav, "-c:a", "aac", "-f", "mp4", m4a])
        #expect(r.status == 0, "ffmpeg: \(r.stderrText)")
        let f = try #require(decodeFailure(m4a))
        guard case .unrecognised(_, let like, _) = f.error else { Issue.record("expected .unrecognised, got \(f.error)"); return }
        #expect(like == "MP4/M4A")
        expectNamesFile(f.error, m4a)
    }
}

/// Odd but valid files, written by libsndfile (μ-law by sox): they must decode with the right
/// rate, channels and frames, and the samples must be the ones written.
@Suite struct SndFileDecoderValidFileTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    @Test func eightBitUnsignedWAV() throws {
        let x = Signal.quantised(Signal.sine(frames: 4410, amplitude: 0.9), bits: 8)
        let p = try Fixtures.write(x, to: dir["u8.wav"], bits: .b8)
        let d = try Fixtures.decode(p)
        #expect(d.info.container == "WAV")
        #expect(d.info.codec == "PCM_U8")
        #expect(d.info.sampleKind == .integer)
        #expect(d.info.frames == 4410)
        #expect(d.samples == x)
        // Unsigned: silence is stored as 0x80.
        let zero = try Fixtures.write([0, 0], to: dir["u8zero.wav"], bits: .b8)
        let b = try Fixtures.bytes(zero)
        let data = try #require(Fixtures.chunkOffset("data", in: b))
        #expect(b[data + 8] == 0x80)
    }

    @Test func twentyFourBitWAV() throws {
        let x = Signal.quantised(Signal.noise(frames: 5000, channels: 2, amplitude: 0.99), bits: 24)
        let p = try Fixtures.write(x, channels: 2, rate: 96000, to: dir["hi.wav"], bits: .b24)
        let d = try Fixtures.decode(p)
        #expect(d.info.codec == "PCM_24")
        #expect(d.info.sampleRate == 96000)
        #expect(d.info.channels == 2)
        #expect(d.info.frames == 5000)
        #expect(d.samples == x)
    }

    @Test(arguments: [("aiff", "AIFF"), ("caf", "CAF")])
    func float32BigEndian(ext: String, container: String) throws {
        let x = Signal.noise(frames: 3000, channels: 2, amplitude: 0.7)
        let p = try Fixtures.write(x, channels: 2, rate: 48000, to: dir["f32.\(ext)"], bits: .float)
        let b = try Fixtures.bytes(p)
        if ext == "aiff" {
            // AIFC with 32-bit float samples, which AIFF stores big-endian.
            #expect(b.starts(with: Array("FORM".utf8)) && Array(b[8..<12]) == Array("AIFC".utf8))
            #expect(String(decoding: b.prefix(200), as: Unicode.ASCII.self).lowercased().contains("fl32"))
        } else {
            // CAF 'desc' chunk: format flags after 'lpcm'; bit 1 (little-endian) must be clear.
            let s = String(decoding: b.prefix(200).map { $0 < 128 ? $0 : 0 }, as: Unicode.ASCII.self)
            let lpcm = try #require(s.range(of: "lpcm")).upperBound.utf16Offset(in: s)
            #expect(b[lpcm + 3] & 0x2 == 0, "CAF float should be big-endian")
        }
        let d = try Fixtures.decode(p)
        #expect(d.info.container == container)
        #expect(d.info.codec == "FLOAT")
        #expect(d.info.sampleKind == .float)
        #expect(d.info.frames == 3000)
        #expect(d.samples == x)
    }

    @Test(arguments: 3...6)
    func multichannelWAV(channels: Int) throws {
        let x = Signal.quantised(Signal.sine(frequency: 300, rate: 44100, frames: 2000, channels: channels, amplitude: 0.4), bits: 16)
        let p = try Fixtures.write(x, channels: channels, to: dir["mc\(channels).wav"], bits: .b16)
        let d = try Fixtures.decode(p)
        #expect(d.info.channels == channels)
        #expect(d.info.frames == 2000)
        // Channels keep their order: channel c carries the (c+1)·300 Hz sine.
        for c in 0..<channels {
            #expect(channel(c, of: d.samples, channels: channels) == channel(c, of: x, channels: channels))
        }
    }

    @Test func rf64() throws {
        let x = Signal.quantised(Signal.noise(frames: 4000, channels: 2), bits: 16)
        let p = try Fixtures.write(x, channels: 2, to: dir["big.rf64"], bits: .b16)
        #expect(try Fixtures.bytes(p).starts(with: Array("RF64".utf8)))
        let named = try Fixtures.writeBytes(try Fixtures.bytes(p), to: dir["big-as.wav"])
        for path in [p, named] {
            let d = try Fixtures.decode(path)
            #expect(d.info.container == "RF64")
            #expect(d.info.frames == 4000)
            #expect(d.samples == x)
        }
    }

    @Test func eightKilohertzMuLawWAV() throws {
        let x = Signal.sine(frequency: 400, rate: 8000, frames: 4000, amplitude: 0.5)
        let src = try Fixtures.write(x, rate: 8000, to: dir["src.wav"], bits: .b16)
        let p = dir["ulaw.wav"]
        try Fixtures.sox([src, "-e", "mu-law", p])
        let d = try Fixtures.decode(p)
        #expect(d.info.container == "WAV")
        #expect(d.info.codec == "ULAW")
        #expect(d.info.sampleRate == 8000)
        #expect(d.info.frames == 4000)
        // μ-law keeps about 2 % of the value; the waveform must be the one written.
        #expect(maxAbsDifference(d.samples, x) < 0.02)
        #expect(maxAbsDifference(d.samples, try Fixtures.soxDecode(p)) <= 1e-6)
    }

    @Test(arguments: ["wav", "flac", "aiff", "caf"])
    func oneFrameFile(ext: String) throws {
        let x: [Float] = [0.25, -0.5]
        let p = try Fixtures.write(x, channels: 2, to: dir["one.\(ext)"], bits: .b16)
        let d = try Fixtures.decode(p)
        #expect(d.info.frames == 1)
        #expect(d.info.channels == 2)
        #expect(d.samples == x)
        #expect(abs(d.info.duration - 1.0 / 44100) < 1e-12)
    }

    @Test func flacSixteenAndTwentyFourBit() throws {
        for bits in [SampleBits.b16, .b24] {
            let x = Signal.quantised(Signal.noise(frames: 8000, channels: 2, amplitude: 0.9), bits: bits == .b16 ? 16 : 24)
            let p = try Fixtures.write(x, channels: 2, rate: 32000, to: dir["n\(bits.rawValue).flac"], bits: bits)
            let d = try Fixtures.decode(p)
            #expect(d.info.container == "FLAC")
            #expect(d.info.codec == (bits == .b16 ? "PCM_16" : "PCM_24"))
            #expect(d.info.sampleRate == 32000)
            #expect(d.info.frames == 8000)
            #expect(d.samples == x)
        }
    }

    @Test(arguments: [(OutputFormat.ogg, 44100, "Vorbis"), (.opus, 48000, "Opus"), (.mp3, 44100, "MP3")])
    func lossyFormats(format: OutputFormat, rate: Int, codec: String) throws {
        let frames = rate / 2
        let x = Signal.sine(frequency: 1000, rate: rate, frames: frames, channels: 2, amplitude: 0.5)
        let p = try Fixtures.write(x, channels: 2, rate: rate, to: dir["lossy.\(format.rawValue)"], format: format)
        let d = try Fixtures.decode(p)
        #expect(d.info.codec == codec)
        #expect(d.info.sampleKind == .lossy)
        #expect(d.info.sampleRate == rate)
        #expect(d.info.channels == 2)
        // Lossy codecs may pad; the length must be close, and the content must be the sine
        // (measured away from the ends, where the abrupt start and stop make codecs ring).
        let got = d.samples.count / 2
        #expect(abs(got - frames) <= 2304, "decoded \(got) frames of \(frames)")
        let peak = d.samples[(frames / 5)..<(frames * 8 / 5)].map(abs).max() ?? 0
        #expect(peak > 0.4 && peak < 0.6, "a 0.5 sine decoded with peak \(peak)")
    }
}

/// Decoding must not depend on the block size, and must agree with sox.
@Suite struct SndFileDecoderConsistencyTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case wav16, wav24, u8, aiffFloat, cafFloat, flac16, flac24, sixChannels, rf64, mulaw, vorbis, opus, mp3
        var testDescription: String { rawValue }
    }

    func make(_ kind: Kind) throws -> String {
        let n = 3001  // not a multiple of 7 or 4096
        let x = Signal.noise(frames: n, channels: 2, amplitude: 0.6)
        switch kind {
        case .wav16: return try Fixtures.write(x, channels: 2, to: dir["a.wav"], bits: .b16)
        case .wav24: return try Fixtures.write(x, channels: 2, to: dir["a.wav"], bits: .b24)
        case .u8: return try Fixtures.write(x, channels: 2, to: dir["a.wav"], bits: .b8)
        case .aiffFloat: return try Fixtures.write(x, channels: 2, to: dir["a.aiff"], bits: .float)
        case .cafFloat: return try Fixtures.write(x, channels: 2, to: dir["a.caf"], bits: .float)
        case .flac16: return try Fixtures.write(x, channels: 2, to: dir["a.flac"], bits: .b16)
        case .flac24: return try Fixtures.write(x, channels: 2, to: dir["a.flac"], bits: .b24)
        case .sixChannels:
            return try Fixtures.write(Signal.noise(frames: n, channels: 6), channels: 6, to: dir["a.wav"], bits: .b16)
        case .rf64: return try Fixtures.write(x, channels: 2, to: dir["a.rf64"], bits: .b16)
        case .mulaw:
            let src = try Fixtures.write(x, channels: 2, rate: 8000, to: dir["src.wav"], bits: .b16)
            try Fixtures.sox([src, "-e", "mu-law", dir["a.wav"]])
            return dir["a.wav"]
        case .vorbis:
            return try Fixtures.write(Signal.sine(frames: n, channels: 2), channels: 2, to: dir["a.ogg"], format: .ogg)
        case .opus:
            return try Fixtures.write(Signal.sine(rate: 48000, frames: n, channels: 2), channels: 2, rate: 48000,
                                      to: dir["a.opus"], format: .opus)
        case .mp3:
            return try Fixtures.write(Signal.sine(frames: n, channels: 2), channels: 2, to: dir["a.mp3"], format: .mp3)
        }
    }

    @Test(arguments: Kind.allCases)
    func blockSizesGiveIdenticalSamples(kind: Kind) throws {
        let p = try make(kind)
        let reference = try Fixtures.decode(p, blockFrames: 4096)
        #expect(!reference.samples.isEmpty)
        if reference.info.sampleKind != .lossy {
            #expect(reference.samples.count == reference.info.frames * reference.info.channels)
        }
        for size in [1, 7] {
            let d = try Fixtures.decode(p, blockFrames: size)
            #expect(d.samples.count == reference.samples.count, "block size \(size)")
            #expect(d.samples == reference.samples, "block size \(size) changed the samples")
        }
    }

    /// sox decodes with its own readers (libFLAC, its WAV/AIFF code). Left out: lossy codecs,
    /// which sox decodes to 16-bit integers, and CAF and RF64, which sox reads through libsndfile
    /// (not independent; for float CAF it also rescales by the PEAK chunk, so a 0.5 peak reads as 1.0).
    @Test(arguments: [Kind.wav16, .wav24, .u8, .aiffFloat, .flac16, .flac24, .sixChannels, .mulaw])
    func samplesAgreeWithSox(kind: Kind) throws {
        let p = try make(kind)
        let ours = try Fixtures.decode(p).samples
        let sox = try Fixtures.soxDecode(p)
        #expect(ours.count == sox.count)
        guard ours.count == sox.count else { return }
        #expect(maxAbsDifference(ours, sox) <= 1e-6)
    }
}
