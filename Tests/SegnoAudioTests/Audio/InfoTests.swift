import Foundation
@testable import SegnoAudio
import SegnoAudioTestSupport
@testable import SegnoCore
import Testing

// `segno info` frames are exact: every file here is made by ffmpeg (or by hand, for AMR) and
// `FileInfo.inspect` must report exactly the frames segno's own decoder then yields (and, for
// formats decoded through ffmpeg, the frames ffmpeg's own decode gives).

@Suite struct InfoTests {
    let fx: PhoneFixtures
    init() throws { fx = try PhoneFixtures() }

    /// 100,001 frames: not a multiple of any codec's frame size.
    static let frames = 100_001

    /// Inspects `path` exactly and decodes it through the factory; returns (info frames, decoded).
    func infoAndDecoded(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> (info: Int, decoded: Int) {
        let i = try FileInfo.inspect(path: path, tools: .forTests).get()
        #expect(!i.estimated, sourceLocation: sourceLocation)
        let d = try factoryDecode(path)
        return (i.info.frames, d.samples.count / d.info.channels)
    }

    func expectExact(_ path: String, ffmpegToo: Bool = false, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (info, decoded) = try infoAndDecoded(path, sourceLocation: sourceLocation)
        #expect(info == decoded, "\(path): info says \(info), decoder yields \(decoded)", sourceLocation: sourceLocation)
        if ffmpegToo {
            let channels = try FileInfo.inspect(path: path, tools: .forTests).get().info.channels
            let reference = try PhoneFixtures.reference(path).count / channels
            #expect(info == reference, "\(path): info says \(info), ffmpeg yields \(reference)", sourceLocation: sourceLocation)
        }
    }

    @Test func adtsCountsItsFrameHeaders() throws {
        let src = try fx.wav(rate: 44100, channels: 2, frames: Self.frames)
        let aac = try fx.ffmpeg(src.path, ["-c:a", "aac", "-b:a", "96k", "-f", "adts"], to: "voice.aac")
        let fast = try FileInfo.inspect(path: aac, tools: .forTests, fast: true).get()
        #expect(fast.estimated)
        try expectExact(aac, ffmpegToo: true)
    }

    @Test func alacInCAFUsesItsPacketTable() throws {
        let src = try fx.wav(rate: 44100, channels: 2, frames: Self.frames)
        let caf = try fx.ffmpeg(src.path, ["-c:a", "alac"], to: "voice.caf")
        let fast = try FileInfo.inspect(path: caf, tools: .forTests, fast: true).get()
        #expect(fast.estimated)
        #expect(fast.info.frames % 4096 == 0)  // whole packets: the estimate
        let (info, decoded) = try infoAndDecoded(caf)
        #expect(info == Self.frames)
        #expect(decoded == Self.frames)
    }

    /// MP3 without a Xing/Info/VBRI header, as CBR and VBR, MPEG-1 and MPEG-2/2.5, with an ID3v2 tag.
    @Test(arguments: [
        (44100, 2, ["-b:a", "128k"]), (44100, 2, ["-q:a", "5"]), (22050, 1, ["-b:a", "32k"]),
        (8000, 1, ["-b:a", "16k"]), (44100, 1, ["-q:a", "2", "-metadata", "title=Memo"]),
    ])
    func mp3WithoutLengthHeaderCountsItsFrames(rate: Int, channels: Int, options: [String]) throws {
        let src = try fx.wav(rate: rate, channels: channels, frames: Self.frames * rate / 44100)
        let mp3 = try fx.ffmpeg(src.path, ["-c:a", "libmp3lame", "-write_xing", "0"] + options, to: "voice.mp3")
        #expect(!FrameScan.mp3HasLengthHeader(path: mp3))
        #expect(try FileInfo.inspect(path: mp3, tools: .forTests, fast: true).get().estimated)
        try expectExact(mp3, ffmpegToo: true)
        // And no audio is lost: every frame of the stream is decoded.
        let (info, _) = try infoAndDecoded(mp3)
        #expect(info == FrameScan.mp3(path: mp3))
    }

    @Test func mp3WithXingHeaderTrustsIt() throws {
        let src = try fx.wav(rate: 44100, channels: 2, frames: Self.frames)
        let mp3 = try fx.ffmpeg(src.path, ["-c:a", "libmp3lame", "-q:a", "4"], to: "voice.mp3")
        #expect(FrameScan.mp3HasLengthHeader(path: mp3))
        let fast = try FileInfo.inspect(path: mp3, tools: .forTests, fast: true).get()
        #expect(!fast.estimated)
        try expectExact(mp3)
        #expect(try FileInfo.inspect(path: mp3, tools: .forTests).get().info.frames == Self.frames)  // the LAME tag's gapless length
    }

    /// 12.2 kbit/s AMR-NB frames of random bits (Debian's ffmpeg has no AMR encoder).
    func amr(frames: Int, name: String = "voice.amr") throws -> String {
        var bytes = Array("#!AMR\n".utf8)
        var s: UInt64 = 0x77AB
        for _ in 0..<frames {
            bytes.append(0x3C)
            for _ in 0..<31 { s ^= s << 13; s ^= s >> 7; s ^= s << 17; bytes.append(UInt8(truncatingIfNeeded: s)) }
        }
        return try Fixtures.writeBytes(bytes, to: fx.dir[name])
    }

    @Test func amrCountsItsFrames() throws {
        let path = try amr(frames: 1251)
        #expect(try FileInfo.inspect(path: path, tools: .forTests, fast: true).get().estimated)
        try expectExact(path, ffmpegToo: true)
        #expect(try FileInfo.inspect(path: path, tools: .forTests).get().info.frames == 1251 * 160)
    }

    /// What a browser's MediaRecorder uploads (Opus in WebM) and its Matroska cousins.
    @Test func webmAndMatroskaAreDecodedToCount() throws {
        let src = try fx.wav(rate: 48000, channels: 2, frames: Self.frames)
        for (codec, name, container, label) in [("libopus", "memo.webm", "WebM", "Opus"), ("libvorbis", "memo.webm", "WebM", "Vorbis"),
                                                ("libvorbis", "memo.mka", "Matroska", "Vorbis"), ("libopus", "memo.mka", "Matroska", "Opus")] {
            let path = try fx.ffmpeg(src.path, ["-c:a", codec], to: name)
            let fast = try FileInfo.inspect(path: path, tools: .forTests, fast: true).get()
            #expect(fast.estimated)
            #expect(fast.info.container == container && fast.info.codec == label, "\(fast.info)")
            #expect(fast.info.tags == nil, "\(String(describing: fast.info.tags))")
            try expectExact(path, ffmpegToo: true)
            // The samples are ffmpeg's own decode.
            #expect(try factoryDecode(path).samples == (try PhoneFixtures.reference(path)))
        }
    }

    @Test func exactHeadersAreNotEstimates() throws {
        let src = try fx.wav(rate: 44100, channels: 2, frames: Self.frames)
        for (args, name) in [([String](), "a.flac"), (["-c:a", "libvorbis"], "a.ogg"), (["-c:a", "libopus", "-ar", "48000"], "a.opus"),
                             (["-c:a", "aac"], "a.m4a")] {
            let path = try fx.ffmpeg(src.path, args, to: name)
            #expect(try !FileInfo.inspect(path: path, tools: .forTests, fast: true).get().estimated, "\(name)")
            try expectExact(path)
        }
    }

    @Test func aFLACWhoseFramesDoNotDecodeIsAnError() throws {
        let src = try fx.wav(rate: 44100, channels: 2, frames: Self.frames)
        let flac = try fx.ffmpeg(src.path, [], to: "good.flac")
        var b = try Fixtures.bytes(flac)
        // Keep the metadata blocks, zero every audio frame.
        var at = 4
        while true {
            let last = b[at] & 0x80 != 0
            at += 4 + (Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3]))
            if last { break }
        }
        for i in at..<b.count { b[i] = 0 }
        let bad = try Fixtures.writeBytes(b, to: fx.dir["bad.flac"])
        #expect(try FileInfo.inspect(path: bad, tools: .forTests, fast: true).get().info.frames == Self.frames)
        guard case .failure(let e) = FileInfo.inspect(path: bad, tools: .forTests) else { Issue.record("bad.flac passed as ok"); return }
        expectOneLine(e, naming: bad)
    }

    @Test func anMP4WhoseFramesDoNotDecodeIsAnError() throws {
        let src = try fx.wav(rate: 44100, channels: 2, frames: Self.frames)
        let m4a = try fx.ffmpeg(src.path, ["-c:a", "aac"], to: "good.m4a")
        var b = try Fixtures.bytes(m4a)
        // ffmpeg writes `mdat` before `moov`: zero the audio, keep the index.
        let mdat = Array("mdat".utf8)
        let at = try #require((0..<(b.count - 4)).first { Array(b[$0..<($0 + 4)]) == mdat })
        let size = Int(be32(b, at - 4))
        for i in (at + 4)..<(at - 4 + size) { b[i] = 0 }
        let bad = try Fixtures.writeBytes(b, to: fx.dir["bad.m4a"])
        #expect(try FileInfo.inspect(path: bad, tools: .forTests, fast: true).get().info.frames > 0)
        guard case .failure(let e) = FileInfo.inspect(path: bad, tools: .forTests) else { Issue.record("bad.m4a passed as ok"); return }
        expectOneLine(e, naming: bad)
    }

    @Test func jsonSaysEstimatedOnlyWhenItIs() throws {
        let info = SourceInfo(container: "ADTS", codec: "AAC", sampleRate: 44100, channels: 2, frames: 1024, sampleKind: .lossy)
        #expect(FileInfo.json(path: "a.aac", .success(info), estimated: true).contains(#""estimated":true"#))
        #expect(!FileInfo.json(path: "a.aac", .success(info)).contains("estimated"))
        #expect(FileInfo.text(path: "a.aac", .success(info), estimated: true).contains("about 1024 frames"))
    }
}
