import Foundation
@testable import SegnoAudio
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoDSP
import Testing

// The `segno-decode` helper (built next to the test binary) against the `ffmpeg` program path,
// on files ffmpeg makes here. Each test has its own pool, so helper counts and process ids are
// this test's alone.

@Suite struct DecodeHelperTests {
    let fx: PhoneFixtures
    let tools: FFmpegTools
    let helperPath: String

    init() throws {
        fx = try PhoneFixtures()
        tools = try #require(FFmpegTools.locate(searchPath: AudioTools.forTests.searchPath))
        helperPath = try #require(DecodeHelperPool.locate(environment: [:]), "segno-decode is built next to the tests")
    }

    /// Opens `path` through the factory with `pool` (nil: the ffmpeg program) and decodes it all.
    func decode(_ path: String, _ pool: DecodeHelperPool?) throws -> (samples: [Float], decoder: FFmpegDecoder) {
        let d = try #require(try DecoderFactory.open(path: path, searchPath: ProcessInfo.processInfo.environment["PATH"],
                                                     helpers: pool) as? FFmpegDecoder)
        defer { d.close() }
        return (try decodeAll(d, blockFrames: 3000), d)
    }

    /// An Opus-in-WebM file, as a browser's MediaRecorder writes.
    func webm(_ src: String) throws -> String { try fx.ffmpeg(src, ["-c:a", "libopus", "-b:a", "32k"], to: "browser.webm") }

    /// Debian's ffmpeg has no AMR encoder; random 12.2 kbit/s AMR-NB frames make a valid stream.
    func amr(frames: Int) throws -> String {
        var bytes = Array("#!AMR\n".utf8)
        var s: UInt64 = 0x5EED
        for _ in 0..<frames {
            bytes.append(0x3C)
            for _ in 0..<31 { s ^= s << 13; s ^= s >> 7; s ^= s << 17; bytes.append(UInt8(truncatingIfNeeded: s)) }
        }
        return try Fixtures.writeBytes(bytes, to: fx.dir["voice.amr"])
    }

    @Test func samplesAreBitIdenticalToTheFFmpegProgram() throws {
        let mono = try fx.wav("mono.wav", rate: 48000, channels: 1, frames: 150_001)
        let stereo = try fx.wav("stereo.wav", rate: 44100, channels: 2, frames: 70_003)
        let files = [
            try fx.ffmpeg(mono.path, ["-c:a", "aac", "-b:a", "64k"], to: "memo.m4a"),
            try fx.ffmpeg(mono.path, ["-c:a", "aac", "-movie_timescale", "48000"], to: "exact.m4a"),
            try fx.ffmpeg(stereo.path, ["-c:a", "aac"], to: "stereo.m4a"),
            try fx.ffmpeg(stereo.path, ["-c:a", "alac"], to: "alac.m4a"),
            try fx.ffmpeg(stereo.path, ["-c:a", "alac"], to: "alac.caf"),
            try fx.ffmpeg(mono.path, ["-c:a", "aac", "-f", "adts"], to: "raw.aac"),
            try fx.ffmpeg(mono.path, ["-c:a", "aac"], to: "call.3gp"),
            try webm(stereo.path),
            try amr(frames: 250),
        ]
        let pool = DecodeHelperPool(executable: helperPath)
        defer { pool.shutdown() }
        for f in files {
            let viaHelper = try decode(f, pool)
            let viaProgram = try decode(f, nil)
            #expect(viaHelper.decoder.helperProcessID != nil && viaHelper.decoder.decoderProcessID == nil, "\(f)")
            #expect(viaProgram.decoder.helperProcessID == nil && viaProgram.decoder.decoderProcessID != nil, "\(f)")
            #expect(viaHelper.samples.count == viaProgram.samples.count, "\(f): frame counts differ")
            #expect(viaHelper.samples == viaProgram.samples, "\(f): samples differ")
            #expect(!viaHelper.samples.isEmpty)
        }
        // ALAC is lossless through the helper too.
        #expect(try decode(files[3], pool).samples == stereo.samples)
        #expect(pool.startedCount == 1, "one helper served every file")
    }

    @Test func fiftyFilesThroughOneHelper() throws {
        let src = try fx.wav(rate: 16000, channels: 1, frames: 16_000)
        let m4a = try fx.ffmpeg(src.path, ["-c:a", "aac", "-movie_timescale", "16000"], to: "one.m4a")
        let pool = DecodeHelperPool(executable: helperPath)
        var pids = Set<pid_t>()
        for i in 0..<50 {
            let copy = fx.dir["memo\(i).m4a"]
            try FileManager.default.copyItem(atPath: m4a, toPath: copy)
            let (samples, d) = try decode(copy, pool)
            #expect(samples.count == 16_000)
            pids.insert(try #require(d.helperProcessID))
        }
        #expect(pids.count == 1, "the same helper process decoded all 50 files")
        #expect(pool.startedCount == 1)
        let pid = try #require(pids.first)
        #expect(FFmpegDecoderDamageTests.isUnreapedChild(pid), "idle in the pool")
        pool.shutdown()
        #expect(!FFmpegDecoderDamageTests.isUnreapedChild(pid), "stopped and reaped by shutdown")
    }

    @Test func aCorruptFileFailsAndTheNextOneDecodes() throws {
        let src = try fx.wav(rate: 48000, channels: 1, frames: 96_000)
        let good = try fx.ffmpeg(src.path, ["-c:a", "aac", "-movie_timescale", "48000"], to: "good.m4a")
        let fast = try fx.ffmpeg(src.path, ["-c:a", "aac", "-movflags", "+faststart"], to: "fast.m4a")
        // The index first, then garbage over the middle of the audio; and an index-first file cut in half.
        var bytes = try Fixtures.bytes(fast)
        for i in (bytes.count / 3)..<(bytes.count / 3 + 4000) { bytes[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 7) }
        let damaged = try Fixtures.writeBytes(bytes, to: fx.dir["damaged.m4a"])
        let cut = try Fixtures.truncatedCopy(of: fast, bytes: try Fixtures.bytes(fast).count / 2, to: fx.dir["cut.m4a"])
        let pool = DecodeHelperPool(executable: helperPath)
        defer { pool.shutdown() }
        let first = try decode(good, pool)
        #expect(first.samples.count == 96_000)
        let pid = try #require(first.decoder.helperProcessID)
        for bad in [damaged, cut] {
            let e = try #require(throws: AudioError.self) { _ = try decode(bad, pool) }
            expectOneLine(e, naming: bad)
            #expect(e.description.contains("segno-decode"), "\(e)")
            let after = try decode(good, pool)
            #expect(after.samples == first.samples)
            #expect(after.decoder.helperProcessID == pid, "the helper survived the bad file")
        }
        // The same failures as through the ffmpeg program: truncated stays truncated.
        let viaProgram = try #require(throws: AudioError.self) { _ = try decode(cut, nil) }
        let viaHelper = try #require(throws: AudioError.self) { _ = try decode(cut, pool) }
        if case .truncated = viaProgram {
            guard case .truncated = viaHelper else { Issue.record("program: \(viaProgram); helper: \(viaHelper)"); return }
        }
        #expect(pool.startedCount == 1)
    }

    @Test func aHelperKilledMidFileFailsThatFileOnly() throws {
        let src = try fx.wav(rate: 48000, channels: 2, frames: 480_000)
        let m4a = try fx.ffmpeg(src.path, ["-c:a", "aac"], to: "long.m4a")
        let pool = DecodeHelperPool(executable: helperPath)
        defer { pool.shutdown() }
        let d = try #require(try DecoderFactory.open(path: m4a, searchPath: ProcessInfo.processInfo.environment["PATH"],
                                                     helpers: pool) as? FFmpegDecoder)
        var block = AudioBlock(channels: 2, capacity: 1024)
        #expect(try d.read(into: &block, maxFrames: 1024) == 1024)
        let victim = try #require(d.helperProcessID)
        kill(victim, SIGKILL)
        let e = try #require(throws: AudioError.self) { while try d.read(into: &block, maxFrames: 1024) > 0 {} }
        expectOneLine(e, naming: m4a)
        #expect(e.description.contains("killed by signal 9"), "\(e)")
        d.close()
        #expect(!FFmpegDecoderDamageTests.isUnreapedChild(victim), "the dead helper was reaped")
        let next = try decode(m4a, pool)
        let reference = try decode(m4a, nil).samples
        #expect(next.samples == reference)
        let second = try #require(next.decoder.helperProcessID)
        #expect(second != victim)
        // Killed while idle: the next file is sent to a new helper without failing.
        kill(second, SIGKILL)
        let again = try decode(m4a, pool)
        #expect(again.samples == next.samples)
        #expect(again.decoder.helperProcessID != second)
        #expect(pool.startedCount == 3)
    }

    @Test func abandonedMidStreamTheHelperIsKilledAndReplaced() throws {
        let src = try fx.wav(rate: 48000, channels: 1, frames: 96_000)
        let m4a = try fx.ffmpeg(src.path, ["-c:a", "aac"], to: "memo.m4a")
        let pool = DecodeHelperPool(executable: helperPath)
        defer { pool.shutdown() }
        let d = try #require(try DecoderFactory.open(path: m4a, searchPath: ProcessInfo.processInfo.environment["PATH"],
                                                     helpers: pool) as? FFmpegDecoder)
        var block = AudioBlock(channels: 1, capacity: 1024)
        _ = try d.read(into: &block, maxFrames: 1024)
        let pid = try #require(d.helperProcessID)
        d.close()
        #expect(!FFmpegDecoderDamageTests.isUnreapedChild(pid), "killed and reaped, not left writing")
        let whole = try decode(m4a, pool)
        #expect(whole.decoder.helperProcessID != pid)
        #expect(whole.samples.count == (try decode(m4a, nil)).samples.count)
    }

    @Test func withoutTheHelperFilesGoToTheFFmpegProgram() throws {
        let src = try fx.wav(rate: 16000, channels: 1, frames: 20_000)
        let m4a = try fx.ffmpeg(src.path, ["-c:a", "aac", "-movie_timescale", "16000"], to: "m.m4a")
        // Not found (or switched off), and a program that is not segno-decode.
        #expect(DecodeHelperPool.locate(environment: [DecodeHelperPool.environmentVariable: "off"]) == nil)
        #expect(DecodeHelperPool.locate(environment: [DecodeHelperPool.environmentVariable: "/x/y"]) == "/x/y")
        let missing = DecodeHelperPool(executable: fx.dir["no-such-helper"])
        let impostor = DecodeHelperPool(executable: "/bin/echo")
        for pool in [DecodeHelperPool(executable: nil), missing, impostor] {
            let (samples, d) = try decode(m4a, pool)
            #expect(samples.count == 20_000)
            #expect(d.helperProcessID == nil && d.decoderProcessID != nil)
        }
        #expect(missing.describe(fingerprints: AudioTools.forTests.fingerprintHelpers).contains("not used"))
        #expect(impostor.describe(fingerprints: AudioTools.forTests.fingerprintHelpers).contains("not used"))
        #expect(DecodeHelperPool(executable: helperPath).describe(fingerprints: AudioTools.forTests.fingerprintHelpers).contains("libavcodec"))
        let lines = DecoderFactory.availableDecoders(tools: AudioTools(helpers: DecodeHelperPool(executable: nil),
                                                                       fingerprintHelpers: AudioTools.forTests.fingerprintHelpers,
                                                                       searchPath: AudioTools.forTests.searchPath))
        #expect(lines.last?.hasPrefix("segno-decode: not found") == true)
    }
}

/// Fingerprints through the helper (`Chromaprinter` with a pool of its own): any block sizes,
/// one helper for fingerprints and decodes, and failures that cost one fingerprint only.
@Suite struct FingerprintThroughHelperTests {
    let fx: PhoneFixtures
    let helperPath: String

    init() throws {
        fx = try PhoneFixtures()
        helperPath = try #require(DecodeHelperPool.locate(environment: [:]), "segno-decode is built next to the tests")
    }

    /// Items of `samples` fed in blocks of the given frame counts (cycled).
    func items(_ samples: [Float], channels: Int, rate: Int, blocks: [Int], pool: DecodeHelperPool) throws -> [UInt32] {
        let printer = try Chromaprinter(format: AudioFormat(sampleRate: rate, channels: channels), helpers: pool)
        var at = 0, k = 0
        while at < samples.count / channels {
            let n = min(blocks[k % blocks.count], samples.count / channels - at)
            try printer.feed(AudioBlock(interleaved: Array(samples[(at * channels)..<((at + n) * channels)]), channels: channels))
            at += n
            k += 1
        }
        return try printer.finish().items
    }

    @Test func blockSizesDoNotMatterAndOneHelperServesFingerprintsAndDecodes() throws {
        let pool = DecodeHelperPool(executable: helperPath)
        defer { pool.shutdown() }
        for channels in [1, 2, 6] {
            let x = PhoneFixtures.signal(rate: 22050, channels: channels, frames: 22050 * 8)
            let whole = try items(x, channels: channels, rate: 22050, blocks: [x.count / channels], pool: pool)
            #expect(whole.count > 40)
            // Odd sizes that straddle the 64 Ki-sample messages.
            #expect(try items(x, channels: channels, rate: 22050, blocks: [1, 4096, 10_923, 65_537, 333], pool: pool) == whole, "\(channels) ch")
        }
        let src = try fx.wav(rate: 48000, channels: 1, frames: 48_000)
        let m4a = try fx.ffmpeg(src.path, ["-c:a", "aac"], to: "memo.m4a")
        let d = try DecoderFactory.open(path: m4a, searchPath: ProcessInfo.processInfo.environment["PATH"], helpers: pool)
        _ = try decodeAll(d, blockFrames: 4096)
        d.close()
        #expect(pool.startedCount == 1, "the fingerprints' helper decoded the memo too")
    }

    @Test func aRefusedFormatIsTheSpecsAndAKilledHelperCostsOneFingerprint() throws {
        let pool = DecodeHelperPool(executable: helperPath)
        defer { pool.shutdown() }
        // chromaprint takes no rate of 1000 Hz or less: refused at the start, the helper kept.
        let refused = try #require(throws: FingerprintError.self) { _ = try Chromaprinter(format: AudioFormat(sampleRate: 800, channels: 1), helpers: pool) }
        #expect(refused.failureClass == .spec, "\(refused)")
        let x = PhoneFixtures.signal(rate: 16000, channels: 1, frames: 16000 * 30)
        let reference = try items(x, channels: 1, rate: 16000, blocks: [4096], pool: pool)
        #expect(pool.startedCount == 1)
        // Killed while samples flow: that fingerprint fails (environment), the next gets a new helper.
        let printer = try Chromaprinter(format: AudioFormat(sampleRate: 16000, channels: 1), helpers: pool)
        kill(printer.helperProcessID, SIGKILL)
        let e = try #require(throws: FingerprintError.self) {
            for start in stride(from: 0, to: x.count, by: 4096) { try printer.feed(AudioBlock(interleaved: Array(x[start..<min(x.count, start + 4096)]), channels: 1)) }
            _ = try printer.finish()
        }
        #expect(e.failureClass == .environment)
        #expect(e.description.contains("segno-decode"), "\(e)")
        #expect(try items(x, channels: 1, rate: 16000, blocks: [4096], pool: pool) == reference)
        #expect(pool.startedCount == 2)
        // No helper at all: the reinstall message, an environment failure.
        let none = try #require(throws: FingerprintError.self) {
            _ = try Chromaprinter(format: AudioFormat(sampleRate: 16000, channels: 1), helpers: DecodeHelperPool(executable: nil))
        }
        #expect(none.failureClass == .environment && "\(none)".hasPrefix("segno-decode is missing or too old for fingerprints; reinstall (make install)"))
    }
}
