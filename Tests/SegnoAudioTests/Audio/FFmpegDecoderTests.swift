import Foundation
@testable import SegnoAudio
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import Testing

// Phone formats through the ffmpeg program. Every fixture is made here by ffmpeg from a WAV that
// libsndfile writes, so the original PCM (and its frame count) is known exactly; ffmpeg's own
// decode (`ffmpeg -i x -f f32le -`) is the independent reference for the samples.

/// Every error names the file and fits on one line.
func expectOneLine(_ e: AudioError, naming path: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(e.path == path, sourceLocation: sourceLocation)
    #expect(e.description.hasPrefix(AudioError.quoted(path) + ": "), "\(e.description)", sourceLocation: sourceLocation)
    #expect(!e.description.contains("\n"), "\(e.description)", sourceLocation: sourceLocation)
}

@Suite struct FFmpegDecoderFormatTests {
    let fx: PhoneFixtures
    init() throws { fx = try PhoneFixtures() }

    /// Checks the frame count against the original and the samples against ffmpeg's own decode.
    func expectMatchesReference(_ path: String, originalFrames: Int, channels: Int, tolerance: ClosedRange<Int> = 0...0,
                                sourceLocation: SourceLocation = #_sourceLocation) throws -> [Float] {
        let (info, got, _) = try factoryDecode(path)
        let frames = got.count / channels
        #expect(info.channels == channels, sourceLocation: sourceLocation)
        #expect(tolerance.contains(frames - originalFrames),
                "decoded \(frames) frames, the original had \(originalFrames)", sourceLocation: sourceLocation)
        let ref = try PhoneFixtures.reference(path)
        // The reference keeps what ffmpeg keeps (its end padding after an edit list); compare the common part.
        #expect(ref.count >= got.count, sourceLocation: sourceLocation)
        let n = min(ref.count, got.count)
        #expect(maxAbsDifference(Array(got[0..<n]), Array(ref[0..<n])) <= 1e-4, sourceLocation: sourceLocation)
        return got
    }

    /// ffmpeg's MP4 muxer writes the edit list's length in milliseconds unless the movie timescale
    /// is the audio's rate: the decoded length is then within a millisecond of the original.
    static func msTolerance(_ rate: Int) -> ClosedRange<Int> { -(rate / 1000 + 1)...(rate / 1000 + 1) }

    @Test func aacMono48kLikeVoiceMemos() throws {
        let src = try fx.wav(rate: 48000, channels: 1, frames: 154_416)
        let m4a = try fx.ffmpeg(src.path, ["-c:a", "aac", "-b:a", "64k", "-movie_timescale", "48000"], to: "memo.m4a")
        let d = try DecoderFactory.open(path: m4a, tools: .forTests)
        #expect(d is FFmpegDecoder)
        #expect(d.info.container == "MP4")
        #expect(d.info.codec == "AAC")
        #expect(d.info.sampleKind == .lossy)
        #expect(d.info.sampleRate == 48000)
        #expect(d.info.frames == 154_416, "the edit list declares the exact length")
        d.close()
        let got = try expectMatchesReference(m4a, originalFrames: 154_416, channels: 1)
        // Gapless: the priming is gone, so the decode lines up with the original at lag 0 and not
        // one AAC frame (1024) or Apple's usual priming (2112) away.
        func error(lag: Int) -> Double {
            var e = 0.0
            for i in 4096..<(got.count - 4096) { let d = Double(got[i] - src.samples[i + lag]); e += d * d }
            return e
        }
        let atZero = error(lag: 0)
        for lag in [-2112, -1024, -1, 1, 1024, 2112] {
            #expect(atZero < error(lag: lag) / 2, "lag \(lag) fits better than 0")
        }
    }

    @Test func aacStereo44k() throws {
        let src = try fx.wav(rate: 44100, channels: 2, frames: 100_003)
        let m4a = try fx.ffmpeg(src.path, ["-c:a", "aac"], to: "stereo.m4a")
        _ = try expectMatchesReference(m4a, originalFrames: 100_003, channels: 2, tolerance: Self.msTolerance(44100))
        let exact = try fx.ffmpeg(src.path, ["-c:a", "aac", "-movie_timescale", "44100"], to: "exact.m4a")
        let got = try expectMatchesReference(exact, originalFrames: 100_003, channels: 2)
        #expect(got.count == 200_006)
    }

    @Test(arguments: [16, 24])
    func alacInM4AIsExact(bits: Int) throws {
        let x = Signal.quantised(Signal.noise(frames: 50_000, channels: 2, amplitude: 0.7), bits: bits)
        let wav = try Fixtures.write(x, channels: 2, rate: 44100, to: fx.dir["s.wav"], bits: bits == 24 ? .b24 : .b16)
        let m4a = try fx.ffmpeg(wav, ["-c:a", "alac"], to: "lossless.m4a")
        let (info, got, _) = try factoryDecode(m4a)
        #expect(info.codec == "ALAC_\(bits)")
        #expect(info.sampleKind == .integer)
        #expect(got == x, "ALAC is lossless: every sample as written")
    }

    @Test func alacAndIMA4InCAFThatLibsndfileRejects() throws {
        let src = try fx.wav(rate: 44100, channels: 2, frames: 44_123)
        let alac = try fx.ffmpeg(src.path, ["-c:a", "alac"], to: "alac.caf")
        let ima = try fx.ffmpeg(src.path, ["-c:a", "adpcm_ima_qt"], to: "ima4.caf")
        for p in [alac, ima] {
            #expect(throws: AudioError.self, "libsndfile refuses \(p)") { try SndFileDecoder(path: p) }
        }
        let a = try factoryDecode(alac)
        #expect(a.info.container == "CAF")
        #expect(a.info.codec == "ALAC_16")
        #expect(a.samples == src.samples, "lossless, and exactly as long as the original")
        let i = try factoryDecode(ima)
        #expect(i.info.codec == "IMA4")
        #expect(i.info.sampleKind == .lossy)
        // IMA4 packs 64 frames per packet and CAF does not record the remainder: at most 63 more.
        _ = try expectMatchesReference(ima, originalFrames: 44_123, channels: 2, tolerance: 0...63)
    }

    @Test func pcmInCAFStaysWithLibsndfile() throws {
        let x = PhoneFixtures.signal(rate: 16000, channels: 1, frames: 1000)
        let caf = try Fixtures.write(x, rate: 16000, to: fx.dir["pcm.caf"])
        let d = try DecoderFactory.open(path: caf, tools: .forTests)
        defer { d.close() }
        #expect(d is SndFileDecoder)
    }

    @Test func aacIn3GP() throws {
        let src = try fx.wav(rate: 16000, channels: 1, frames: 33_333)
        let gp = try fx.ffmpeg(src.path, ["-c:a", "aac", "-b:a", "32k"], to: "call.3gp")
        let (info, _, _) = try factoryDecode(gp)
        #expect(info.container == "3GP")
        #expect(info.codec == "AAC")
        _ = try expectMatchesReference(gp, originalFrames: 33_333, channels: 1, tolerance: Self.msTolerance(16000))
    }

    /// Debian's ffmpeg has no AMR encoder; a 12.2 kbit/s AMR-NB frame is any 244 bits after its
    /// table-of-contents byte, so random frames make a valid stream (160 frames each at 8 kHz).
    func amrFile(frames: Int) throws -> String {
        var bytes = Array("#!AMR\n".utf8)
        var s: UInt64 = 0xA3F1
        for _ in 0..<frames {
            bytes.append(0x3C)  // frame type 7 (12.2 kbit/s), quality bit set
            for _ in 0..<31 { s ^= s << 13; s ^= s >> 7; s ^= s << 17; bytes.append(UInt8(truncatingIfNeeded: s)) }
        }
        return try Fixtures.writeBytes(bytes, to: fx.dir["voice.amr"])
    }

    @Test func amrNBRawAndIn3GP() throws {
        let amr = try amrFile(frames: 100)
        let raw = try factoryDecode(amr)
        #expect(raw.info.container == "AMR")
        #expect(raw.info.codec == "AMR-NB")
        #expect(raw.info.sampleRate == 8000)
        #expect(raw.samples.count == 16_000)
        #expect(raw.samples == (try PhoneFixtures.reference(amr)))
        let gp = try fx.ffmpeg(amr, ["-c:a", "copy"], to: "voice.3gp")
        let boxed = try factoryDecode(gp)
        #expect(boxed.info.container == "3GP")
        #expect(boxed.info.codec == "AMR-NB")
        #expect(boxed.samples == raw.samples)
    }

    @Test func moovAtTheEndAndFaststartDecodeAlike() throws {
        let src = try fx.wav(rate: 48000, channels: 1, frames: 60_000)
        let atEnd = try fx.ffmpeg(src.path, ["-c:a", "aac"], to: "end.m4a")
        let fast = try fx.ffmpeg(src.path, ["-c:a", "aac", "-movflags", "+faststart"], to: "fast.m4a")
        let endOrder = MP4Surgery.topLevelBoxes(try Fixtures.bytes(atEnd))
        let fastOrder = MP4Surgery.topLevelBoxes(try Fixtures.bytes(fast))
        #expect(try #require(endOrder.firstIndex(of: "moov")) > (try #require(endOrder.firstIndex(of: "mdat"))))
        #expect(try #require(fastOrder.firstIndex(of: "moov")) < (try #require(fastOrder.firstIndex(of: "mdat"))))
        let a = try factoryDecode(atEnd), b = try factoryDecode(fast)
        #expect(Self.msTolerance(48000).contains(a.samples.count - 60_000))
        #expect(a.samples == b.samples)
    }

    @Test func adtsMisnamedMP3DecodesByContent() throws {
        let src = try fx.wav(rate: 48000, channels: 1, frames: 48_000)
        let adts = try fx.ffmpeg(src.path, ["-c:a", "aac", "-f", "adts"], to: "actually-aac.mp3")
        #expect(ContentSniffer.sniff(path: adts) == .adts)
        let (info, _, d) = try factoryDecode(adts)
        #expect(d is FFmpegDecoder)
        #expect(info.container == "ADTS")
        #expect(info.codec == "AAC")
        // A raw ADTS stream declares nothing: the encoder's priming (1024) and padding stay, as in
        // ffmpeg's own decode — within two AAC frames of the original.
        _ = try expectMatchesReference(adts, originalFrames: 48_000, channels: 1, tolerance: 0...2048)
    }

    @Test func blockSizesDoNotChangeTheStream() throws {
        let src = try fx.wav(rate: 44100, channels: 2, frames: 9_000)
        let m4a = try fx.ffmpeg(src.path, ["-c:a", "aac", "-movie_timescale", "44100"], to: "b.m4a")
        let whole = try factoryDecode(m4a, blockFrames: 4096).samples
        for size in [1, 7, 1000] {
            #expect(try factoryDecode(m4a, blockFrames: size).samples == whole, "block size \(size)")
        }
        #expect(whole.count == 18_000)
    }

    @Test func iTunSMPBGaplessInfoIsHonoured() throws {
        let src = try fx.wav(rate: 48000, channels: 1, frames: 50_000)
        // No edit list: only the iTunes tag says where the audio starts and ends.
        let plain = try fx.ffmpeg(src.path, ["-c:a", "aac", "-use_editlist", "0"], to: "noedit.m4a")
        let padded = (50_000 + 1024 + 1023) / 1024 * 1024 - 50_000 - 1024
        let value = String(format: " 00000000 00000400 %08X %016X 00000000 00000000", padded, 50_000)
        let tagged = try MP4Surgery.addFreeformTag(to: plain, name: "iTunSMPB", value: value, writing: fx.dir["smpb.m4a"])
        let d = try DecoderFactory.open(path: tagged, tools: .forTests)
        #expect(d.info.frames == 50_000)
        d.close()
        _ = try expectMatchesReference(tagged, originalFrames: 50_000, channels: 1)
        // Without the tag the container says nothing exact: within one AAC frame.
        _ = try expectMatchesReference(plain, originalFrames: 50_000, channels: 1, tolerance: -1024...1024)
    }

    @Test func tagsAreRead() throws {
        let src = try fx.wav(rate: 48000, channels: 1, frames: 4_800)
        let m4a = try fx.ffmpeg(src.path, ["-c:a", "aac", "-metadata", "title=Kitchen idea / v2",
                                           "-metadata", "creation_time=2024-05-01T09:30:12Z",
                                           "-metadata", "location=+37.3349-122.0090/"], to: "tagged.m4a")
        let d = try DecoderFactory.open(path: m4a, tools: .forTests)
        defer { d.close() }
        let tags = try #require(d.info.tags)
        #expect(tags["title"] == "Kitchen idea / v2")
        #expect(tags["location"] == "+37.3349-122.0090/")
        #expect(tags["creation_time"]?.hasPrefix("2024-05-01T09:30:12") == true)
        #expect(tags["location-eng"] == nil && tags["major_brand"] == nil && tags["encoder"] == nil)
        var context = RecordingContext(sourcePath: m4a, relativePath: "2024/tagged.m4a", modified: Date(timeIntervalSince1970: 0),
                                       source: d.info, outputRoot: "/out")
        #expect(context.title == "Kitchen idea / v2")
        #expect(try PathTemplate("{dir}/{title}.flac").resolve(context) == "/out/2024/Kitchen idea - v2.flac")
        #expect(try PathTemplate("{recorded}-{stem}.json").resolve(context) == "/out/2024-05-01T09:30:12Z-tagged.json")
        // SourceInfo stays Codable with its tags.
        let back = try JSONDecoder().decode(SourceInfo.self, from: JSONEncoder().encode(d.info))
        #expect(back == d.info)
        context.source?.tags = nil
        #expect(context.title == "tagged")
        #expect(context.recorded == "1970-01-01T00:00:00Z")
        let json = FileInfo.json(path: m4a, .success(d.info))
        #expect(json.contains("\"tags\":{\"creation_time\":\"2024-05-01T09:30:12"))
        #expect(FileInfo.text(path: m4a, .success(d.info)).contains(", title=\"Kitchen idea / v2\""))
        #expect(!FileInfo.json(path: m4a, .success(context.source!)).contains("tags"))
    }

    @Test func namesThatLookLikeOptionsOrProtocols() throws {
        let src = try fx.wav(rate: 8000, channels: 1, frames: 8_000)
        let m4a = try fx.ffmpeg(src.path, ["-c:a", "aac"], to: "m.m4a")
        // Relative names in the working folder, where ffmpeg would read "-x" as an option and
        // "a:b" as protocol "a" without the file: prefix. Cleaned up afterwards.
        let tag = "segno-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let names = ["-\(tag).m4a", "pipe:\(tag).m4a", "\(tag) $(touch x) 'q' \"d\";.m4a", "\(tag)\nline.m4a"]
        defer { for n in names { unlink(n) } }
        for n in names {
            try FileManager.default.copyItem(atPath: m4a, toPath: n)
            let (info, got, _) = try factoryDecode(n)
            #expect(info.codec == "AAC", "\(n)")
            #expect(got.count == 8_000, "\(n)")
        }
        #expect(!FileManager.default.fileExists(atPath: "x"), "no shell ever ran")
    }

    @Test func videoWithoutAudioIsNotAudio() throws {
        let out = fx.dir["video.mp4"]
        let r = try Tool.run("ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc=size=32x32:rate=5:duration=1",
                                        "-c:v", "mpeg4", "file:" + out])
        try #require(r.status == 0, "\(r.stderrText)")
        let e = try #require(throws: AudioError.self) { try DecoderFactory.open(path: out, tools: .forTests) }
        guard case .unrecognised(_, let like, let detail) = e else { Issue.record("got \(e)"); return }
        #expect(like == "MP4/M4A")
        #expect(detail.contains("no audio stream"))
        expectOneLine(e, naming: out)
    }
}

@Suite struct FFmpegDecoderDamageTests {
    let fx: PhoneFixtures
    init() throws { fx = try PhoneFixtures() }

    func memo(_ args: [String] = [], frames: Int = 96_000) throws -> String {
        let src = try fx.wav(rate: 48000, channels: 1, frames: frames)
        return try fx.ffmpeg(src.path, ["-c:a", "aac"] + args, to: "memo\(args.isEmpty ? "" : "-fast").m4a")
    }

    @Test func cutInHalfWithTheIndexAtTheEnd() throws {
        let whole = try memo()
        let cut = try Fixtures.truncatedCopy(of: whole, bytes: try Fixtures.bytes(whole).count / 2, to: fx.dir["cut.m4a"])
        let e = try #require(throws: AudioError.self) { try DecoderFactory.open(path: cut, tools: .forTests) }
        guard case .truncated(_, let detail) = e else { Issue.record("expected .truncated, got \(e)"); return }
        #expect(detail.contains("'moov'"))
        expectOneLine(e, naming: cut)
    }

    @Test func cutInHalfWithTheIndexFirst() throws {
        let whole = try memo(["-movflags", "+faststart"])
        let cut = try Fixtures.truncatedCopy(of: whole, bytes: try Fixtures.bytes(whole).count / 2, to: fx.dir["cut.m4a"])
        // The index is whole, so the file opens; ffmpeg then stops early without complaint
        // (exit 0): the length check must catch it.
        let d = try DecoderFactory.open(path: cut, tools: .forTests)
        defer { d.close() }
        #expect(d.info.frames == 96_000)
        let e = try #require(throws: AudioError.self) { _ = try decodeAll(d) }
        guard case .truncated(_, let detail) = e else { Issue.record("expected .truncated, got \(e)"); return }
        #expect(detail.contains("declares 96000 frames"))
        expectOneLine(e, naming: cut)
    }

    @Test func damagedInTheMiddle() throws {
        let whole = try memo(["-movflags", "+faststart"], frames: 480_000)
        var bytes = try Fixtures.bytes(whole)
        var s: UInt64 = 77
        for i in (bytes.count / 2)..<(bytes.count / 2 + 3000) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; bytes[i] = UInt8(truncatingIfNeeded: s) }
        let bad = try Fixtures.writeBytes(bytes, to: fx.dir["bad.m4a"])
        let d = try DecoderFactory.open(path: bad, tools: .forTests)
        defer { d.close() }
        let e = try #require(throws: AudioError.self) { _ = try decodeAll(d) }
        guard case .decodeFailed(_, let detail) = e else { Issue.record("expected .decodeFailed, got \(e)"); return }
        #expect(detail.contains("ffmpeg") || detail.contains("segno-decode"), "names the decoder: \(detail)")
        expectOneLine(e, naming: bad)
    }

    @Test func truncatedADTS() throws {
        let src = try fx.wav(rate: 48000, channels: 1, frames: 96_000)
        let adts = try fx.ffmpeg(src.path, ["-c:a", "aac", "-f", "adts"], to: "raw.aac")
        let cut = try Fixtures.truncatedCopy(of: adts, bytes: try Fixtures.bytes(adts).count / 2 + 7, to: fx.dir["cut.aac"])
        // A raw stream declares no length: the cut shows as a last frame that ends early.
        let e = try #require(throws: AudioError.self) { _ = try factoryDecode(cut) }
        switch e {
        case .truncated, .decodeFailed: #expect(e.description.contains("ffmpeg") || e.description.contains("segno-decode"))
        default: Issue.record("expected .truncated or .decodeFailed, got \(e)")
        }
        expectOneLine(e, naming: cut)
    }

    @Test func withoutFFmpegOnPATHOneClearLine() throws {
        let m4a = try memo(frames: 4800)
        for searchPath in ["/nonexistent:/also/missing", "", nil] as [String?] {
            let e = try #require(throws: AudioError.self) { try DecoderFactory.open(path: m4a, searchPath: searchPath, helpers: nil) }
            #expect(e == .missingDecoder(path: m4a, detail: "AAC in MP4 needs ffmpeg on PATH; install it with apt-get install ffmpeg"))
            #expect(e.description == "\(m4a): AAC in MP4 needs ffmpeg on PATH; install it with apt-get install ffmpeg")
        }
        // ffmpeg alone is not enough: ffprobe is needed too.
        let bin = fx.dir["bin"]
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin + "/ffmpeg", withDestinationPath: try #require(Tool.find("ffmpeg")))
        #expect(throws: AudioError.self) { try DecoderFactory.open(path: m4a, searchPath: bin, helpers: nil) }
        // Everything libsndfile reads still works.
        let wav = try Fixtures.write(PhoneFixtures.signal(rate: 8000, channels: 1, frames: 100), rate: 8000, to: fx.dir["w.wav"])
        let d = try DecoderFactory.open(path: wav, searchPath: "/nonexistent", helpers: nil)
        #expect(d.info.frames == 100)
        d.close()
        // A missing file is missing, not "needs ffmpeg".
        #expect(throws: AudioError.missing(path: fx.dir["gone.m4a"])) { try DecoderFactory.open(path: fx.dir["gone.m4a"], searchPath: nil, helpers: nil) }
        // `info --formats` says ffmpeg is missing, and still names the helper (fingerprints need it).
        let lines = DecoderFactory.availableDecoders(tools: AudioTools(helpers: AudioTools.forTests.helpers, searchPath: "/nonexistent"))
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("libsndfile: libsndfile-1."))
        #expect(lines[1].hasPrefix("ffmpeg: not found on PATH"))
        #expect(lines[2].hasPrefix("segno-decode: ") && lines[2].contains("fingerprints"), "\(lines[2])")
        let found = DecoderFactory.availableDecoders(tools: .forTests)
        #expect(found[1].contains("ffmpeg version"))
    }

    /// True while `pid` is a child of this process that was not reaped (running or a zombie).
    static func isUnreapedChild(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 && pid_t(fields[1]) == getpid()
    }

    @Test func noZombiesAfterManyFiles() throws {
        let iterations = Int(ProcessInfo.processInfo.environment["SEGNO_ZOMBIE_ITERATIONS"] ?? "") ?? 36
        // Raw AAC goes through ffprobe (MP4Probe reads only MP4), so both children run.
        let src = try fx.wav(rate: 16000, channels: 1, frames: 16_000)
        let good = try fx.ffmpeg(src.path, ["-c:a", "aac", "-f", "adts"], to: "good.aac")
        let whole = try memo(["-movflags", "+faststart"], frames: 48_000)
        let cut = try Fixtures.truncatedCopy(of: whole, bytes: try Fixtures.bytes(whole).count / 2, to: fx.dir["cut.m4a"])
        var pids: [pid_t] = []
        for i in 0..<iterations {
            // The ffmpeg program per file (helpers: nil); DecodeHelperTests reap their helpers.
            let d = try #require(try DecoderFactory.open(path: i % 6 == 5 ? cut : good, searchPath: ProcessInfo.processInfo.environment["PATH"],
                                                         helpers: nil) as? FFmpegDecoder)
            #expect((d.probeProcessID != 0) == (i % 6 != 5), "ffprobe for ADTS, the header for MP4")
            if d.probeProcessID != 0 { pids.append(d.probeProcessID) }
            var block = AudioBlock(channels: 1, capacity: 1024)
            switch i % 6 {
            case 0: d.close()                                                 // opened, never read
            case 1: _ = try d.read(into: &block, maxFrames: 1024); d.close()  // abandoned mid-stream
            case 2: _ = try decodeAll(d); d.close()                           // read to the end
            case 3: _ = try d.read(into: &block, maxFrames: 1024)             // dropped without close
            case 4: _ = try d.read(into: &block, maxFrames: 1024); d.close(); d.close()
            default: #expect(throws: AudioError.self) { _ = try decodeAll(d) }; d.close()
            }
            if let p = d.decoderProcessID { pids.append(p) }
        }
        #expect(pids.count >= iterations * 3 / 2)
        let left = pids.filter(Self.isUnreapedChild)
        #expect(left.isEmpty, "children not reaped: \(left)")
    }
}

@Suite struct FFprobeParseTests {
    func parse(_ json: String, kind: ContentSniffer.Kind = .mp4) throws -> StreamProbe {
        try FFprobe.parse(json: Array(json.utf8), path: "x.m4a", kind: kind)
    }

    @Test func editListLengthIsExactForMP4() throws {
        let p = try parse(#"{"streams":[{"codec_type":"audio","codec_name":"aac","profile":"LC","sample_rate":"44100","channels":2,"time_base":"1/44100","duration_ts":454230,"duration":"10.300000"}],"format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2","duration":"10.3","tags":{"major_brand":"M4A ","encoder":"Lavf"}}}"#)
        #expect(p.info == SourceInfo(container: "MP4", codec: "AAC", sampleRate: 44100, channels: 2, frames: 454_230, sampleKind: .lossy))
        #expect(p.exactFrames == 454_230)
        #expect(p.declaredFrames == 454_230)
    }

    @Test func timescaleOtherThanTheRate() throws {
        let p = try parse(#"{"streams":[{"codec_type":"audio","codec_name":"aac","sample_rate":"48000","channels":1,"time_base":"1/600","duration_ts":1800}],"format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2","tags":{"major_brand":"qt  "}}}"#)
        #expect(p.info.frames == 144_000)
        #expect(p.info.container == "MOV")
    }

    @Test func iTunSMPBWins() throws {
        let p = try parse(#"{"streams":[{"codec_type":"audio","codec_name":"aac","sample_rate":"44100","channels":2,"time_base":"1/44100","duration_ts":455680}],"format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2","tags":{"iTunSMPB":" 00000000 00000840 000001C0 000000000006EE5C 00000000"}}}"#)
        #expect(p.exactFrames == 0x6EE5C)
        #expect(p.info.frames == 0x6EE5C)
        #expect(p.info.tags == nil, "gapless data is not a user tag")
    }

    @Test func rawStreamsDeclareNothing() throws {
        let p = try parse(#"{"streams":[{"codec_type":"audio","codec_name":"aac","profile":"HE-AAC","sample_rate":"48000","channels":1,"time_base":"1/28224000","duration_ts":90620022}],"format":{"format_name":"aac","duration":"3.210743"}}"#, kind: .adts)
        #expect(p.info.container == "ADTS")
        #expect(p.info.codec == "HE-AAC")
        #expect(p.info.frames == 154_116)
        #expect(p.exactFrames == nil && p.declaredFrames == nil)
    }

    @Test func codecNamesAndKinds() {
        #expect(FFprobe.codecLabel("alac", profile: nil, bits: 24) == "ALAC_24")
        #expect(FFprobe.codecLabel("alac", profile: nil, bits: nil) == "ALAC_16")
        #expect(FFprobe.codecLabel("amr_nb", profile: nil, bits: nil) == "AMR-NB")
        #expect(FFprobe.codecLabel("amr_wb", profile: nil, bits: nil) == "AMR-WB")
        #expect(FFprobe.codecLabel("adpcm_ima_qt", profile: nil, bits: nil) == "IMA4")
        #expect(FFprobe.codecLabel("pcm_s24le", profile: nil, bits: nil) == "PCM_24")
        #expect(FFprobe.sampleKind("alac") == .integer)
        #expect(FFprobe.sampleKind("pcm_f32le") == .float)
        #expect(FFprobe.sampleKind("amr_nb") == .lossy)
        #expect(FFprobe.containerName(formatName: "mov,mp4,m4a,3gp,3g2,mj2", brand: "3gp4", kind: .unknown) == "3GP")
        #expect(FFprobe.containerName(formatName: "caf", brand: nil, kind: .caf) == "CAF")
    }

    @Test func noAudioStream() throws {
        let e = try #require(throws: AudioError.self) { try parse(#"{"streams":[],"format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2"}}"#) }
        guard case .unrecognised(_, let like, _) = e else { Issue.record("got \(e)"); return }
        #expect(like == "MP4/M4A")
    }

    @Test func invalidUTF8InTagsIsKept() throws {
        var bytes = Array(#"{"streams":[{"codec_type":"audio","codec_name":"aac","sample_rate":"8000","channels":1}],"format":{"format_name":"aac","tags":{"title":"caf"#.utf8)
        bytes += [0xE9, 0xFF]
        bytes += Array(#"","location-eng":"+1+2/"}}}"#.utf8)
        let p = try FFprobe.parse(json: bytes, path: "x", kind: .adts)
        #expect(p.info.tags?["title"]?.hasPrefix("caf") == true)
        #expect(p.info.tags?["location"] == "+1+2/", "a language-qualified key alone becomes the plain key")
    }
}

/// `MP4Probe` must report exactly what ffprobe reports, or step aside (nil) for ffprobe.
@Suite struct MP4ProbeTests {
    let fx: PhoneFixtures
    init() throws { fx = try PhoneFixtures() }

    func probes(_ path: String) throws -> (native: StreamProbe?, ffprobe: StreamProbe) {
        let tools = try #require(FFmpegTools.locate(searchPath: AudioTools.forTests.searchPath))
        let kind = ContentSniffer.sniff(path: path)
        return (MP4Probe.probe(path: path, kind: kind), try FFprobe.run(path: path, kind: kind, tools: tools))
    }

    func expectSame(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (native, ff) = try probes(path)
        let n = try #require(native, "MP4Probe should read \(path)", sourceLocation: sourceLocation)
        #expect(n.info == ff.info, sourceLocation: sourceLocation)
        #expect(n.exactFrames == ff.exactFrames, sourceLocation: sourceLocation)
        #expect(n.declaredFrames == ff.declaredFrames, sourceLocation: sourceLocation)
    }

    @Test func readsWhatFFprobeReads() throws {
        let mono = try fx.wav("mono.wav", rate: 48000, channels: 1, frames: 77_777)
        let stereo = try fx.wav("stereo.wav", rate: 44100, channels: 2, frames: 44_101)
        let tags = ["-metadata", "title=Café \"memo\"", "-metadata", "date=2024-05-01", "-metadata", "creation_time=2024-05-01T09:30:12Z",
                    "-metadata", "location=+37.3349-122.0090/", "-metadata", "artist=Me", "-metadata", "comment=c"]
        let files = [
            try fx.ffmpeg(mono.path, ["-c:a", "aac"] + tags, to: "a.m4a"),
            try fx.ffmpeg(mono.path, ["-c:a", "aac", "-movflags", "+faststart", "-movie_timescale", "48000"], to: "b.m4a"),
            try fx.ffmpeg(stereo.path, ["-c:a", "aac", "-b:a", "96k"], to: "c.m4a"),
            try fx.ffmpeg(stereo.path, ["-c:a", "alac"] + tags, to: "d.m4a"),
            try fx.ffmpeg(mono.path, ["-c:a", "aac"] + tags, to: "e.3gp"),
            try fx.ffmpeg(mono.path, ["-c:a", "aac", "-use_editlist", "0"], to: "f.m4a"),
            try fx.ffmpeg(mono.path, ["-c:a", "aac"] + tags + ["-f", "mov"], to: "g.mov"),
        ]
        for f in files { try expectSame(f) }
        let smpb = try MP4Surgery.addFreeformTag(to: files[5], name: "iTunSMPB",
                                                 value: " 00000000 00000400 00000000 0000000000012FD1", writing: fx.dir["h.m4a"])
        try expectSame(smpb)
        #expect(try probes(smpb).native?.info.frames == 77_777)
        let a = try #require(try probes(files[0]).native?.info.tags)
        #expect(a["title"] == "Café \"memo\"" && a["location"] == "+37.3349-122.0090/" && a["artist"] == "Me")
    }

    @Test func leavesTheRestToFFprobe() throws {
        let low = try fx.wav("low.wav", rate: 16000, channels: 1, frames: 16_000)
        let mono = try fx.wav("mono.wav", rate: 48000, channels: 1, frames: 48_000)
        // Remuxed from ADTS, the config is two bytes with no word on SBR: at 16 kHz the stream could
        // hide SBR that doubles the rate, so ffprobe (which decodes a little) must say.
        let adts = try fx.ffmpeg(low.path, ["-c:a", "aac", "-f", "adts"], to: "low.aac")
        let lowRate = try fx.ffmpeg(adts, ["-c:a", "copy"], to: "low.m4a")
        try #require(MP4Probe.probe(path: try fx.ffmpeg(low.path, ["-c:a", "aac"], to: "says-no-sbr.m4a"), kind: .mp4) != nil)
        let fragmented = try fx.ffmpeg(mono.path, ["-c:a", "aac", "-movflags", "frag_keyframe+empty_moov"], to: "frag.m4a")
        for f in [lowRate, fragmented] {
            #expect(MP4Probe.probe(path: f, kind: ContentSniffer.sniff(path: f)) == nil, "\(f)")
            let (info, samples, _) = try factoryDecode(f)
            #expect(abs(samples.count / info.channels - (f == lowRate ? 16_000 : 48_000)) <= 2048, "\(f)")
        }
        #expect(MP4Probe.probe(path: fx.dir["missing.m4a"], kind: .mp4) == nil)
        let junk = try Fixtures.writeBytes([0, 0, 0, 16] + Array("ftypM4A ".utf8) + [0, 0, 0, 0] + [0, 0, 0, 255] + Array("moov".utf8), to: fx.dir["junk.m4a"])
        #expect(MP4Probe.probe(path: junk, kind: .mp4) == nil, "a box larger than the file")
    }

    @Test func audioTrackBehindAVideoTrack() throws {
        let out = fx.dir["clip.mp4"]
        let r = try Tool.run("ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc=size=32x32:rate=5:duration=1",
                                        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1",
                                        "-c:v", "mpeg4", "-c:a", "aac", "-shortest", "file:" + out])
        try #require(r.status == 0, "\(r.stderrText)")
        try expectSame(out)
    }
}

/// Edits an MP4 file's box tree, for fixtures ffmpeg cannot write (an iTunes freeform tag).
enum MP4Surgery {
    /// The types of the top-level boxes, in file order ("ftyp", "free", "mdat", "moov").
    static func topLevelBoxes(_ b: [UInt8]) -> [String] {
        var types: [String] = []
        var i = 0
        while i + 8 <= b.count {
            let size = Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3])
            types.append(String(decoding: b[(i + 4)..<(i + 8)], as: UTF8.self))
            guard size >= 8 else { break }
            i += size
        }
        return types
    }

    /// Copies `source` to `path` with a `----` (mean "com.apple.iTunes", name, data) box appended
    /// to moov/udta/meta/ilst. The index must sit after the audio (ffmpeg's default), so no chunk
    /// offset moves.
    static func addFreeformTag(to source: String, name: String, value: String, writing path: String) throws -> String {
        var b = try Fixtures.bytes(source)
        func u32(_ at: Int) -> Int { Int(b[at]) << 24 | Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3]) }
        func find(_ type: String, from: Int, to: Int) throws -> Int {
            var i = from
            while i + 8 <= to {
                if String(decoding: b[(i + 4)..<(i + 8)], as: UTF8.self) == type { return i }
                guard u32(i) >= 8 else { break }
                i += u32(i)
            }
            throw FixtureError("no \(type) box")
        }
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
            let n = UInt32(8 + payload.count)
            return [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + Array(type.utf8) + payload
        }
        let moov = try find("moov", from: 0, to: b.count)
        let udta = try find("udta", from: moov + 8, to: moov + u32(moov))
        let meta = try find("meta", from: udta + 8, to: udta + u32(udta))
        let ilst = try find("ilst", from: meta + 12, to: meta + u32(meta))
        let tag = box("----", box("mean", [0, 0, 0, 0] + Array("com.apple.iTunes".utf8)) + box("name", [0, 0, 0, 0] + Array(name.utf8))
                      + box("data", [0, 0, 0, 1, 0, 0, 0, 0] + Array(value.utf8)))
        b.insert(contentsOf: tag, at: ilst + u32(ilst))
        for at in [moov, udta, meta, ilst] {
            let n = UInt32(u32(at) + tag.count)
            b[at] = UInt8(n >> 24); b[at + 1] = UInt8(n >> 16 & 0xFF); b[at + 2] = UInt8(n >> 8 & 0xFF); b[at + 3] = UInt8(n & 0xFF)
        }
        return try Fixtures.writeBytes(b, to: path)
    }
}
