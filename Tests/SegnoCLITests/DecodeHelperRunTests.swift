import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

// `segno run` over AAC memos with the `segno-decode` helper built beside segno: a few helpers for
// many files, the same bytes as the ffmpeg-program path, a helper killed mid-run, and FFmpeg's
// libraries and libchromaprint kept out of segno itself (linked, and loaded while fingerprinting).

@Suite struct DecodeHelperRunTests {
    /// `readelf -d`'s NEEDED libraries of `binary`.
    static func needed(_ binary: String) throws -> [String] {
        let r = try CLI.tool("readelf", ["-d", binary])
        return r.stdoutLines.filter { $0.contains("(NEEDED)") }.compactMap { line in
            line.split(separator: "[").last.map { String($0.dropLast()) }
        }
    }

    /// Libraries Debian builds with GPL parts, or that pull them in (libchromaprint needs libavcodec).
    static let gplTree = ["libavformat", "libavcodec", "libavutil", "libswresample", "libavfilter", "libavdevice",
                          "libpostproc", "libchromaprint", "libx264", "libx265"]

    @Test func segnoLinksNoFFmpegLibraryAndTheHelperDoes() throws {
        let segno = try CLI.segnoPath()
        let helper = (segno as NSString).deletingLastPathComponent + "/segno-decode"
        let own = try Self.needed(segno)
        #expect(!own.isEmpty)
        #expect(own.allSatisfy { lib in !Self.gplTree.contains { lib.hasPrefix($0) } }, "\(own)")
        // Nor indirectly, through a library segno links.
        let loaded = try CLI.tool("ldd", [segno]).stdout
        #expect(!Self.gplTree.contains { loaded.contains($0) }, "\(loaded)")
        let helperNeeds = try Self.needed(helper)
        #expect(helperNeeds.contains { $0.hasPrefix("libavformat") } && helperNeeds.contains { $0.hasPrefix("libavcodec") }
                && helperNeeds.contains { $0.hasPrefix("libchromaprint") }, "\(helperNeeds)")
        #expect(!helperNeeds.contains { $0.hasPrefix("libsndfile") || $0.hasPrefix("libFoundation") }, "a small program: \(helperNeeds)")
    }

    /// What the dynamic loader loads (`LD_DEBUG=libs`, one log per process): while segno makes
    /// fingerprints (`info --fingerprint`, and a run with a fingerprint tap over an AAC memo, so
    /// the helper decodes too), neither libchromaprint nor any libav* enters segno's process
    /// (not even by `dlopen`); they are loaded in the helper's.
    @Test func fingerprintingLoadsNoChromaprintNorLibavIntoSegno() throws {
        let ws = try RunWorkspace()
        try Pieces.write(Pieces.chords(seed: 11, seconds: 8, rate: 22050), rate: 22050, to: ws["in/a.wav"])
        #expect(try CLI.tool("ffmpeg", ["-v", "error", "-nostdin", "-i", ws["in/a.wav"], "-c:a", "aac", ws["in/b.m4a"]]).status == 0)
        try ws.writeSpec(RunTests.spec(input: ["include: [\"*.wav\", \"*.m4a\"]"], stages: ["fingerprint: {}"], parallel: 1))
        for (n, args) in [["info", "--fingerprint", ws["in/a.wav"]], ["run", "spec.yaml"]].enumerated() {
            let logs = ws["ld\(n)"]
            try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
            let r = try ws.segno(args, environment: ["LD_DEBUG": "libs", "LD_DEBUG_OUTPUT": logs + "/ld"])
            #expect(r.exited(0), "\(args): \(r.stderr)")
            // One file per process, ld.<pid>, naming the program it initialises.
            var segnoLogs = 0, helperLogs = 0
            for name in try FileManager.default.contentsOfDirectory(atPath: logs) {
                let lines = try String(contentsOfFile: logs + "/" + name, encoding: .utf8).split(separator: "\n")
                let loaded = lines.filter { $0.contains("calling init:") }
                let program = lines.lazy.compactMap { line in line.range(of: "initialize program: ").map { String(line[$0.upperBound...]) } }.first ?? ""
                switch (program as NSString).lastPathComponent {
                case "segno":
                    segnoLogs += 1
                    #expect(loaded.count > 5, "the log lists segno's libraries: \(loaded.count)")
                    #expect(!loaded.contains { l in Self.gplTree.contains { l.contains($0) } },
                            "\(args): \(loaded.filter { l in Self.gplTree.contains { l.contains($0) } })")
                case "segno-decode":
                    helperLogs += 1
                    #expect(loaded.contains { $0.contains("libchromaprint") } && loaded.contains { $0.contains("libavcodec") })
                default: break   // ffprobe, …
                }
            }
            #expect(segnoLogs == 1 && helperLogs >= 1, "\(args): \(segnoLogs) segno logs, \(helperLogs) helper logs")
        }
        let rows = try CLI.tool("sqlite3", [ws["out/.segno/state.sqlite"], "SELECT count(*) FROM fingerprint"])
        #expect(rows.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "2")
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
        Wait.until(timeout: 60, interval: 0.001) {
            let outs = (try? FileManager.default.contentsOfDirectory(atPath: ws["out"])) ?? []
            if outs.count >= 3, let line = try? String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").first,
               let pid = pid_t(line) {
                kill(pid, SIGKILL)
                victim = pid
            }
            return victim != nil || !child.isRunning
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
