import Foundation
import Testing

// `segno run` over AAC memos with the `segno-decode` helper built beside segno: a few helpers for
// many files, the same bytes as the ffmpeg-program path, a helper killed mid-run, and FFmpeg's
// libraries kept out of segno itself.

@Suite struct DecodeHelperRunTests {
    /// `readelf -d`'s NEEDED libraries of `binary`.
    static func needed(_ binary: String) throws -> [String] {
        let r = try CLI.tool("readelf", ["-d", binary])
        return r.stdoutLines.filter { $0.contains("(NEEDED)") }.compactMap { line in
            line.split(separator: "[").last.map { String($0.dropLast()) }
        }
    }

    @Test func segnoLinksNoFFmpegLibraryAndTheHelperDoes() throws {
        let segno = try CLI.segnoPath()
        let helper = (segno as NSString).deletingLastPathComponent + "/segno-decode"
        let ffmpegLibs = ["libavformat", "libavcodec", "libavutil", "libswresample", "libavfilter", "libavdevice"]
        let own = try Self.needed(segno)
        #expect(!own.isEmpty)
        #expect(own.allSatisfy { lib in !ffmpegLibs.contains { lib.hasPrefix($0) } }, "\(own)")
        // The demuxers come only with the helper. (Debian's libchromaprint, which segno links for
        // fingerprints, itself depends on libavcodec/libavutil for its FFT: not libavformat.)
        let loaded = try CLI.tool("ldd", [segno]).stdout
        #expect(!loaded.contains("libavformat"), "\(loaded)")
        let helperNeeds = try Self.needed(helper)
        #expect(helperNeeds.contains { $0.hasPrefix("libavformat") } && helperNeeds.contains { $0.hasPrefix("libavcodec") }, "\(helperNeeds)")
        #expect(!helperNeeds.contains { $0.hasPrefix("libsndfile") || $0.hasPrefix("libFoundation") }, "a small program: \(helperNeeds)")
    }

    /// `count` AAC memos (1.5 s, 48 kHz mono) under `in/`, and a spec encoding them to FLAC.
    func memos(_ ws: RunWorkspace, count: Int, parallel: Int) throws -> String {
        var rng = SplitMix64(seed: 0xACC)
        try RunWorkspace.writeTone(to: ws["seed.wav"], rate: 48000, frames: 72_000, frequency: 330, rng: &rng)
        #expect(try CLI.tool("ffmpeg", ["-v", "error", "-nostdin", "-i", ws["seed.wav"], "-c:a", "aac", ws["seed.m4a"]]).status == 0)
        for i in 0..<count { try FileManager.default.copyItem(atPath: ws["seed.m4a"], toPath: ws[String(format: "in/memo%03d.m4a", i)]) }
        return try ws.writeSpec("""
            version: 1
            input: { root: in, include: ["*.m4a"], settle: 0s }
            output: { root: out }
            parallel: \(parallel)
            stages:
              - mix: mono
              - resample: { rate: 16000 }
              - encode: { path: "{stem}.flac" }
            """)
    }

    /// A wrapper that logs each helper's pid to `log`, then becomes the real helper.
    func wrapper(_ ws: RunWorkspace, log: String) throws -> String {
        let real = (try CLI.segnoPath() as NSString).deletingLastPathComponent + "/segno-decode"
        let path = ws["helper.sh"]
        try "#!/bin/sh\necho $$ >> '\(log)'\nexec '\(real)' \"$@\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    @Test func aFolderOfMemosUsesOneHelperPerWorkerAndTheSameBytesAsFFmpeg() throws {
        let ws = try RunWorkspace()
        let spec = try memos(ws, count: 24, parallel: 2)
        let log = ws["helpers.log"]
        let run = try ws.segno(["run", spec, "--quiet"], environment: [ "SEGNO_DECODE_HELPER": try wrapper(ws, log: log)])
        #expect(run.exited(0), "\(run.stderr)")
        let pids = (try String(contentsOfFile: log, encoding: .utf8)).split(separator: "\n")
        #expect((1...2).contains(pids.count), "one helper per worker, not one per file: \(pids.count)")
        let viaHelper = try (0..<24).map { try Data(contentsOf: URL(fileURLWithPath: ws[String(format: "out/memo%03d.flac", $0)])) }
        // The ffmpeg program per file gives the very same FLAC bytes.
        try FileManager.default.removeItem(atPath: ws["out"])
        let plain = try ws.segno(["run", spec, "--quiet", "--force"], environment: ["SEGNO_DECODE_HELPER": "off"])
        #expect(plain.exited(0), "\(plain.stderr)")
        let viaProgram = try (0..<24).map { try Data(contentsOf: URL(fileURLWithPath: ws[String(format: "out/memo%03d.flac", $0)])) }
        #expect(viaHelper == viaProgram)
        #expect(pids.count == (try String(contentsOfFile: log, encoding: .utf8)).split(separator: "\n").count, "off means off")
    }

    @Test func aHelperKilledMidRunCostsAtMostOneFile() throws {
        let ws = try RunWorkspace()
        let spec = try memos(ws, count: 40, parallel: 1)
        let log = ws["helpers.log"]
        let child = try SegnoChild(["run", spec, "--quiet"], in: ws.root, logs: ws.logs,
                                   environment: ["SEGNO_DECODE_HELPER": try wrapper(ws, log: log)])
        // Kill the first helper as soon as it has a pid and segno has written some output.
        var victim: pid_t?
        for _ in 0..<20_000 where victim == nil && child.isRunning {
            let outs = (try? FileManager.default.contentsOfDirectory(atPath: ws["out"])) ?? []
            if outs.count >= 3, let line = try? String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").first,
               let pid = pid_t(line) {
                kill(pid, SIGKILL)
                victim = pid
            }
            usleep(1000)
        }
        let end = child.wait()
        try #require(victim != nil, "the run ended before a helper could be killed")
        #expect(end.exited(0) || end.exited(1), "\(end.stderr)")
        let made = try FileManager.default.contentsOfDirectory(atPath: ws["out"]).filter { $0.hasSuffix(".flac") }
        #expect(made.count >= 39, "every other file was decoded: \(made.count)")
        if end.exited(1) {
            #expect(end.stderr.contains("segno-decode"), "\(end.stderr)")
        }
    }
}
