import Foundation
@testable import SegnoAudio
import SegnoAudioTestSupport
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import Testing

/// Salvage on hostile bytes: every corpus file (WAV, AIFF, CAF, RF64, FLAC, MP3, M4A, Ogg Vorbis,
/// Ogg Opus, ADTS AAC) cut at
/// random points and with random byte runs overwritten, decoded with `damaged: salvage` and
/// rebuilt by `MP4Repair`: never a crash, never a loop (the output stays bounded by the file), and
/// memory bounded. A fixed seed and `SEGNO_FUZZ_RUNS` cases per file (default 40: seconds in
/// `make test`; `make quality` runs thousands).
@Suite struct SalvageFuzzTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    /// 1.5 s stereo noise in each format, made by sox and ffmpeg.
    func corpus() throws -> [String] {
        let wav = dir["c.wav"]
        try Fixtures.sox(["-R", "-n", "-r", "22050", "-c", "2", "-b", "16", wav, "synth", "1.5", "pinknoise", "vol", "0.5"])
        var files = [wav]
        for ext in ["aiff", "caf", "flac"] {
            try Fixtures.sox([wav, dir["c." + ext]])
            files.append(dir["c." + ext])
        }
        for (name, args) in [("c.mp3", ["-b:a", "64k"]), ("c.m4a", ["-c:a", "aac", "-b:a", "64k", "-ar", "44100"]), ("rf.wav", ["-rf64", "always"]),
                             ("c.ogg", ["-c:a", "libvorbis", "-page_duration", "100000"]), ("c.opus", ["-c:a", "libopus", "-b:a", "48k", "-page_duration", "100000"]),
                             ("c.aac", ["-c:a", "aac", "-b:a", "64k"])] {
            let r = try Tool.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", wav] + args + [dir[name]])
            guard r.status == 0 else { throw FixtureError("ffmpeg: \(r.stderrText)") }
            files.append(dir[name])
        }
        return files
    }

    /// Peak resident memory of this process (VmHWM), bytes.
    static func peakMemory() -> Int {
        guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = s.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    @Test func damagedFilesNeverCrashLoopOrGrowMemory() throws {
        let runs = Int(ProcessInfo.processInfo.environment["SEGNO_FUZZ_RUNS"] ?? "") ?? 40
        var rng = SplitMix64(seed: 0x5A1_7A6E)
        let files = try corpus()
        let before = Self.peakMemory()
        var decoded = 0, failedCleanly = 0, repaired = 0
        for file in files {
            let original = try Fixtures.bytes(file)
            for run in 0..<runs {
                var bytes = original
                // Cut at a random point (most runs), then overwrite 1–3 runs of random bytes.
                if run % 4 != 3 { bytes = Array(bytes.prefix(Int(rng.next() % UInt64(bytes.count)) + 1)) }
                for _ in 0..<(1 + Int(rng.next() % 3)) where bytes.count > 1 {
                    let at = Int(rng.next() % UInt64(bytes.count))
                    let length = min(bytes.count - at, 1 + Int(rng.next() % 512))
                    for i in at..<(at + length) { bytes[i] = UInt8(truncatingIfNeeded: rng.next()) }
                }
                let path = try Fixtures.writeBytes(bytes, to: dir["fuzz." + (file as NSString).pathExtension])
                do {
                    let d = try DecoderFactory.open(path: path, tools: .forTests, damaged: .salvage)
                    defer { d.close() }
                    var block = AudioBlock(channels: d.info.channels, capacity: 4096)
                    var frames = 0
                    // A decoder that loops would yield without end: far more than the file could hold.
                    let limit = max(bytes.count * 64, 1 << 20)
                    while frames <= limit {
                        let n = try d.read(into: &block, maxFrames: 4096)
                        if n == 0 { break }
                        frames += n
                    }
                    #expect(frames <= limit, "\((file as NSString).lastPathComponent) run \(run): \(frames) frames from \(bytes.count) bytes")
                    decoded += 1
                } catch is AudioError {
                    failedCleanly += 1
                } catch {
                    failedCleanly += 1
                }
                if ["ogg", "opus", "aac"].contains((file as NSString).pathExtension), run % 4 == 0 {
                    // Copying the good pages or frames of whatever is left: a file or an error.
                    if (try? StreamRepair.repair(input: path, output: dir["fixed." + (file as NSString).pathExtension], overwrite: true)) != nil {
                        repaired += 1
                    }
                }
                if file.hasSuffix(".m4a"), run % 8 == 0 {
                    // Rebuilding the index from whatever is left (often nothing decodes: an error).
                    do {
                        _ = try MP4Repair.repair(input: path, reference: nil, output: dir["fixed.m4a"], overwrite: true, helpers: AudioTools.forTests.helpers)
                        repaired += 1
                    } catch {
                        // No frame decodes, or the file is no MP4 any more: an error, as it should be.
                    }
                }
            }
        }
        #expect(decoded > 0 && decoded + failedCleanly == files.count * runs)
        let growth = Self.peakMemory() - before
        #expect(growth < 256 << 20, "peak memory grew by \(growth >> 20) MiB")
        print("salvage fuzz: \(files.count * runs) damaged files, \(decoded) decoded, \(failedCleanly) failed with an error, \(repaired) repaired, peak memory +\(growth >> 20) MiB")
    }
}
