import Foundation
@testable import SegnoAudio
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import Testing

/// Damaged Ogg Vorbis, Ogg Opus and ADTS AAC recordings (made by ffmpeg) decoded with
/// `damaged: salvage`, compared sample by sample with ffmpeg's decode of the uncut original
/// (an independent demuxer; its decoders are also the ones the helper runs).
@Suite struct SalvagePacketStreamTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    /// The decode with salvage on, and its report (nil: nothing was lost or skipped, so the
    /// recording is not salvaged: issue 31 item 1).
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

    /// 5 s of stereo pink noise and a tone, encoded by ffmpeg with `args` into `name`.
    func encoded(_ name: String, _ args: [String]) throws -> String {
        let wav = dir["src.wav"]
        if !FileManager.default.fileExists(atPath: wav) {
            try Fixtures.sox(["-R", "-n", "-r", "48000", "-c", "2", "-b", "16", wav, "synth", "5", "pinknoise", "sine", "440", "vol", "0.4"])
        }
        let r = try Tool.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", wav] + args + [dir[name]])
        try #require(r.status == 0, "ffmpeg: \(r.stderrText)")
        return dir[name]
    }

    /// Ogg page offsets in `bytes` (by capture pattern; the file is healthy).
    static func pages(_ bytes: [UInt8]) -> [Int] {
        var out: [Int] = []
        var i = 0
        while i + 27 <= bytes.count {
            if bytes[i] == 0x4F && bytes[i + 1] == 0x67 && bytes[i + 2] == 0x67 && bytes[i + 3] == 0x53 {
                out.append(i)
                let segs = Int(bytes[i + 26])
                var body = 0
                for k in 0..<segs { body += Int(bytes[i + 27 + k]) }
                i += 27 + segs + body
            } else { i += 1 }
        }
        return out
    }

    /// Counts samples equal to the reference (within `tolerance`), silent, and neither.
    static func compare(_ got: [Float], _ reference: [Float], tolerance: Float) -> (same: Int, zero: Int, other: Int) {
        var same = 0, zero = 0, other = 0
        for i in 0..<min(got.count, reference.count) {
            if abs(got[i] - reference[i]) <= tolerance { same += 1 } else if got[i] == 0 { zero += 1 } else { other += 1 }
        }
        return (same, zero, other)
    }

    @Test(arguments: [("v.ogg", ["-c:a", "libvorbis", "-q:a", "4", "-page_duration", "200000"]), ("o.opus", ["-c:a", "libopus", "-b:a", "96k", "-page_duration", "200000"])])
    func anOggWithAPageLostAndJunkKeepsEverySampleInTime(name: String, args: [String]) throws {
        let source = try encoded(name, args)
        let reference = try SalvageDecoderTests.ffmpegDecode(source)
        let bytes = try Fixtures.bytes(source)
        let pages = Self.pages(bytes)
        try #require(pages.count > 12)
        // One whole page removed at a third (a hole in the sequence), 700 junk bytes over a page
        // at two thirds, and the file cut inside its last page.
        let lost = pages.count / 3, junk = pages[pages.count * 2 / 3] + 40
        var damaged = Array(bytes[..<pages[lost]]) + Array(bytes[pages[lost + 1]...])
        let junkAt = junk - (pages[lost + 1] - pages[lost])
        var rng = SplitMix64(seed: 25)
        for i in junkAt..<(junkAt + 700) { damaged[i] = UInt8(truncatingIfNeeded: rng.next()) }
        damaged = Array(damaged.prefix(damaged.count - 30))
        let path = try Fixtures.writeBytes(damaged, to: dir["damaged-" + name])
        let got = try salvage(path)
        #expect(got.info.channels == 2 && got.info.sampleRate == 48000)
        // Time kept: the output is as long as the original's decode up to the cut last page.
        #expect(got.samples.count <= reference.count && got.samples.count >= reference.count - 2 * 48000 / 5,
                "\(got.samples.count) samples vs \(reference.count)")
        // Every sample is the original's or silence, but for a few packets after each gap, where
        // the decoder starts afresh (Opus's predictors need a few frames to settle).
        let tolerance: Float = name.hasSuffix(".ogg") ? 1e-6 : 2e-3
        let c = Self.compare(got.samples, reference, tolerance: tolerance)
        let settle = name.hasSuffix(".ogg") ? 2 * 2 * 2048 : 2 * 2 * 960 * 10
        #expect(c.other <= settle, "\(c.other) samples neither the original's nor silence (\(c))")
        #expect(c.zero > 0 && c.same > got.samples.count * 85 / 100, "\(c)")
        // The end of the recording is in place (compared exactly where the decoders agree).
        let tail = got.samples.count - 48000
        let tailDiff = maxAbsDifference(Array(got.samples[tail..<(tail + 40000)]), Array(reference[tail..<(tail + 40000)]))
        #expect(tailDiff <= tolerance, "the end is shifted or differs: \(tailDiff)")
        let report = try #require(got.report)
        #expect(report.losses.contains { $0.cause == .lostSync && $0.filled && $0.frames > 0 })
        #expect(report.losses.contains { $0.cause == .cutFrame || $0.cause == .truncated })
        #expect(report.framesYielded * 2 == got.samples.count)
        // `info` says how much the pages hold: up to where the last whole page ends.
        let described = SalvageOpener.describe(path: path) ?? ""
        let seconds = Double(described.components(separatedBy: "page ends at ").last?.split(separator: " ").first ?? "") ?? 0
        #expect(abs(seconds - Double(got.samples.count / 2) / 48000) < 0.25, "\(described)")
        // At least as much as ffmpeg's own reading of the damaged file, in the original's place.
        let ffmpeg = (try? SalvageDecoderTests.ffmpegDecode(path)) ?? []
        #expect(c.same >= ffmpeg.count * 95 / 100 - 2 * 48000 / 5, "segno kept \(c.same), ffmpeg decoded \(ffmpeg.count)")
    }

    @Test func aHealthyOggDecodesWhollyWithSalvageOn() throws {
        let source = try encoded("ok.ogg", ["-c:a", "libvorbis"])
        let reference = try SalvageDecoderTests.ffmpegDecode(source)
        for blockFrames in [1, 7, 4096] {
            let got = try salvage(source, blockFrames: blockFrames)
            #expect(got.samples.count == reference.count)
            #expect(maxAbsDifference(got.samples, reference) <= 1e-6)
            #expect(got.report == nil, "a healthy file is not salvaged: \(String(describing: got.report))")
        }
    }

    @Test func anOggWithoutItsHeadersFailsWithAReason() throws {
        let source = try encoded("h.ogg", ["-c:a", "libvorbis"])
        var bytes = try Fixtures.bytes(source)
        for i in 0..<4000 { bytes[i] = 0x55 }
        let path = try Fixtures.writeBytes(bytes, to: dir["headless.ogg"])
        #expect(throws: AudioError.self) { _ = try salvage(path) }
    }

    @Test func anADTSStreamWithJunkAndACutResynchronises() throws {
        // Without perceptual noise substitution, whose noise differs from decode to decode.
        let source = try encoded("a.aac", ["-c:a", "aac", "-b:a", "128k", "-aac_pns", "0"])
        let reference = try SalvageDecoderTests.ffmpegDecode(source)
        var bytes = try Fixtures.bytes(source)
        var rng = SplitMix64(seed: 26)
        let junkAt = bytes.count * 2 / 5
        for i in junkAt..<(junkAt + 3000) { bytes[i] = UInt8(truncatingIfNeeded: rng.next()) }
        let path = try Fixtures.writeBytes(Array(bytes.prefix(bytes.count - 200)), to: dir["damaged.aac"])
        let got = try salvage(path)
        #expect(got.info.channels == 2 && got.info.sampleRate == 48000)
        // The lost frames are estimated from the junk's length: the rest lands within one frame.
        #expect(abs(got.samples.count - reference.count) <= 2 * 2 * 1024, "\(got.samples.count) vs \(reference.count)")
        let tail = got.samples.count - 2 * 48000
        var best = (lag: 0, diff: Float.infinity)
        for lag in stride(from: -2048, through: 2048, by: 2) where tail + lag >= 0 && tail + lag + 40000 <= reference.count {
            let d = maxAbsDifference(Array(got.samples[tail..<(tail + 40000)]), Array(reference[(tail + lag)..<(tail + lag + 40000)]))
            if d < best.diff { best = (lag, d) }
        }
        #expect(best.diff <= 1e-6 && abs(best.lag) <= 2 * 1024, "after the junk: lag \(best.lag), difference \(best.diff)")
        // Before the junk everything is the original's.
        let head = junkAt / 3 * 2 * 1024 / 400
        #expect(maxAbsDifference(Array(got.samples[0..<head]), Array(reference[0..<head])) <= 1e-6)
        let report = try #require(got.report)
        #expect(report.losses.contains { $0.cause == .lostSync && $0.filled && $0.frames > 0 })
        #expect(report.losses.contains { $0.cause == .cutFrame })
        let ffmpeg = (try? SalvageDecoderTests.ffmpegDecode(path)) ?? []
        #expect(got.samples.count >= ffmpeg.count, "segno \(got.samples.count), ffmpeg \(ffmpeg.count)")
    }
}
