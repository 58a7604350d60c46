import Foundation
@testable import SegnoAudio
import SegnoAudioTestSupport
@testable import SegnoCore
import Testing

// MP3 through libmpg123 directly. libsndfile (which decodes MP3 with the same library, the same
// flags) is the reference for the samples; the MP3s are encoded here by ffmpeg's libmp3lame from
// WAVs of known length.

@Suite struct Mpg123DecoderTests {
    let fx: PhoneFixtures
    init() throws { fx = try PhoneFixtures() }

    /// Decodes `path` through libsndfile, as segno did before.
    static func libsndfile(_ path: String) throws -> (info: SourceInfo, samples: [Float]) {
        let d = try SndFileDecoder(path: path)
        defer { d.close() }
        return (d.info, try decodeAll(d))
    }

    /// An MP3 of `frames` frames at `rate`, encoded with `options`.
    func mp3(rate: Int = 44100, channels: Int = 2, frames: Int = 100_001, _ options: [String], name: String = "memo.mp3") throws -> String {
        let src = try fx.wav("src-\(name).wav", rate: rate, channels: channels, frames: frames)
        return try fx.ffmpeg(src.path, ["-c:a", "libmp3lame"] + options, to: name)
    }

    /// `bytes` of junk inserted at the middle of `path`'s bytes; optionally the Xing/Info
    /// header's frame count halved.
    func damaged(_ path: String, junk: [UInt8], halveXing: Bool = false, name: String) throws -> String {
        var b = try Fixtures.bytes(path)
        if halveXing {
            let tag = try #require(Self.find(Array("Info".utf8), in: b) ?? Self.find(Array("Xing".utf8), in: b))
            let at = tag + 8   // after the tag and its flags: the frame count, big-endian
            let n = b[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } / 2
            for i in 0..<4 { b[at + i] = UInt8((n >> (24 - 8 * i)) & 0xFF) }
        }
        let mid = b.count / 2
        return try Fixtures.writeBytes(Array(b[..<mid]) + junk + Array(b[mid...]), to: fx.dir[name])
    }

    static func find(_ needle: [UInt8], in b: [UInt8]) -> Int? {
        guard b.count >= needle.count else { return nil }
        return (0...(b.count - needle.count)).first { Array(b[$0..<($0 + needle.count)]) == needle }
    }

    static func junk(_ count: Int, seed: UInt64 = 9) -> [UInt8] {
        var s = seed
        return (0..<count).map { _ in s ^= s << 13; s ^= s >> 7; s ^= s << 17; return UInt8(truncatingIfNeeded: s) }
    }

    @Test(arguments: [
        (44100, 2, ["-b:a", "128k"]), (44100, 2, ["-q:a", "4"]), (22050, 1, ["-b:a", "32k"]),
        (8000, 1, ["-b:a", "16k", "-metadata", "title=Memo"]), (44100, 2, ["-b:a", "128k", "-write_xing", "0"]),
    ])
    func decodesWhatLibsndfileDecodes(rate: Int, channels: Int, options: [String]) throws {
        let path = try mp3(rate: rate, channels: channels, frames: 100_001 * rate / 44100, options)
        let old = try Self.libsndfile(path)
        let d = try #require(try DecoderFactory.open(path: path, tools: .forTests) as? Mpg123Decoder)
        let samples = try decodeAll(d, blockFrames: 1000)
        #expect(d.info.container == old.info.container && d.info.codec == old.info.codec, "\(d.info) vs \(old.info)")
        #expect(d.info.sampleRate == rate && d.info.channels == channels && d.info.sampleKind == .lossy)
        #expect(samples == old.samples, "the same samples as libsndfile")
        #expect(d.info.frames == samples.count / channels, "the length is exact")
        #expect(d.notes.isEmpty, "\(d.notes)")
        if FrameScan.mp3HasLengthHeader(path: path) {
            #expect(d.info.frames == 100_001 * rate / 44100, "gapless: the WAV's length")
        }
    }

    @Test func mp2DecodesToo() throws {
        let src = try fx.wav(rate: 48000, channels: 2, frames: 48_000)
        let path = try fx.ffmpeg(src.path, ["-c:a", "mp2", "-b:a", "192k", "-f", "mp2"], to: "memo.mp3")
        let d = try #require(try DecoderFactory.open(path: path, tools: .forTests) as? Mpg123Decoder)
        #expect(d.info.codec == "MP2")
        #expect(try decodeAll(d) == (try Self.libsndfile(path).samples))
    }

    @Test func aVBRStreamWithoutLengthHeaderIsDecodedToItsEnd() throws {
        // libsndfile stopped at libmpg123's estimate from the first frame's bitrate.
        let path = try mp3(["-q:a", "5", "-write_xing", "0"])
        let old = try Self.libsndfile(path)
        let d = try Mpg123Decoder(path: path)
        let samples = try decodeAll(d)
        let counted = try #require(FrameScan.mp3(path: path))
        #expect(d.info.frames == counted && samples.count == counted * 2)
        #expect(old.samples.count < samples.count && Array(samples[0..<old.samples.count]) == old.samples)
    }

    @Test func junkInTheMiddleIsSkippedWithANote() throws {
        let clean = try mp3(["-b:a", "128k"])
        let path = try damaged(clean, junk: [UInt8](repeating: 0, count: 3000) + Self.junk(2000), name: "spliced.mp3")
        let d = try Mpg123Decoder(path: path)
        let samples = try decodeAll(d)
        #expect(samples.count == 100_001 * 2)
        #expect(d.notes.count == 1 && d.notes[0].hasPrefix("damaged MP3: skipped 5000 bytes of junk between frames (at byte "), "\(d.notes)")
    }

    @Test func aHeaderDeclaringTooLittleIsNamed() throws {
        let clean = try mp3(["-b:a", "128k"])
        let path = try damaged(clean, junk: [], halveXing: true, name: "wrong-xing.mp3")
        let d = try Mpg123Decoder(path: path)
        let samples = try decodeAll(d)
        #expect(samples.count == (try Self.libsndfile(path).samples.count), "what libsndfile decoded")
        #expect(d.notes.contains { $0.contains("Xing/Info header declares \(d.info.frames) frames, but") }, "\(d.notes)")
    }

    @Test func aLargeTagAtTheEndIsNotDamage() throws {
        // An APEv2 tag with a cover picture (20 kB) after the last frame.
        let clean = try mp3(["-b:a", "128k"])
        let tail = Array("APETAGEX".utf8) + Self.junk(20_000)
        let path = try Fixtures.writeBytes(try Fixtures.bytes(clean) + tail, to: fx.dir["tagged-end.mp3"])
        let d = try Mpg123Decoder(path: path)
        #expect(try decodeAll(d).count == 100_001 * 2)
        #expect(d.notes.isEmpty, "\(d.notes)")
    }

    @Test func aCutStreamIsTruncatedAndJunkItCannotPassIsAnError() throws {
        let clean = try mp3(["-b:a", "128k"])
        let bytes = try Fixtures.bytes(clean)
        let cut = try Fixtures.truncatedCopy(of: clean, bytes: bytes.count / 2, to: fx.dir["cut.mp3"])
        #expect(throws: AudioError.self) { _ = try decodeAll(try Mpg123Decoder(path: cut)) }
        do { _ = try decodeAll(try Mpg123Decoder(path: cut)) } catch let e as AudioError {
            guard case .truncated(let p, let detail) = e else { Issue.record("\(e)"); return }
            #expect(p == cut && detail.hasSuffix("decode of the 100001 (2.268 s) its Xing/Info header declares"), "\(detail)")
        }
        let wrecked = try damaged(clean, junk: Self.junk(100_000), name: "wrecked.mp3")
        do {
            _ = try decodeAll(try Mpg123Decoder(path: wrecked))
            Issue.record("100 kB of junk decoded without an error")
        } catch let e as AudioError {
            #expect(e.description.hasPrefix("\(wrecked): decode failed: damaged MP3: "), "\(e)")
            #expect(FailureClass.of(e) == .input)
        }
    }

    @Test func aacBehindAnID3TagStillGoesToFFmpeg() throws {
        let src = try fx.wav(rate: 44100, channels: 1, frames: 44_100)
        let adts = try fx.ffmpeg(src.path, ["-c:a", "aac", "-f", "adts"], to: "raw.aac")
        // A 10-byte ID3v2 header with no frames, then the ADTS stream.
        let tagged = try Fixtures.writeBytes(Array("ID3".utf8) + [4, 0, 0, 0, 0, 0, 0] + (try Fixtures.bytes(adts)), to: fx.dir["tagged.mp3"])
        #expect(ContentSniffer.sniff(path: tagged) == .mp3)
        #expect(throws: AudioError.self) { _ = try Mpg123Decoder(path: tagged) }
        let d = try DecoderFactory.open(path: tagged, tools: .forTests)
        #expect(d is FFmpegDecoder)
        d.close()
    }
}
