import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// `segno report`: the page a real run writes, loaded in headless Chromium — no console errors,
/// the counts of `segno status --json`, every waveform canvas drawn, every player's file present —
/// and the state left exactly as it was.
@Suite struct ReportTests {
    /// Checks what every report page must hold, against `segno status --json`.
    func checkPage(_ page: Chromium.Page, report: String, status: [String: Any], waves: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect((page.check["errors"] as? [Any])?.isEmpty == true, "page errors: \(page.check["errors"] ?? "")", sourceLocation: sourceLocation)
        #expect(page.consoleLines.isEmpty, "console: \(page.consoleLines)", sourceLocation: sourceLocation)
        for key in ["recordings", "done", "failed", "partial"] {
            #expect(page.number(id: "count-\(key)") == status.int(key), "count \(key)", sourceLocation: sourceLocation)
        }
        let canvases = page.check["canvases"] as? [Int] ?? []
        #expect(canvases.count == waves, "canvases: \(canvases)", sourceLocation: sourceLocation)
        #expect(canvases.allSatisfy { $0 > 200 }, "a blank waveform: \(canvases)", sourceLocation: sourceLocation)
        let dir = (report as NSString).deletingLastPathComponent
        let audio = page.check["audio"] as? [String] ?? []
        for src in audio + page.links("href") {
            let path = dir + "/" + (src.removingPercentEncoding ?? src)
            #expect(FileManager.default.fileExists(atPath: path), "\(src) → \(path) is missing", sourceLocation: sourceLocation)
        }
        #expect(!audio.isEmpty, sourceLocation: sourceLocation)
        // Every player loads its file's header before play (so it shows the duration); none is on a failed row.
        let preload = page.check["preload"] as? [String] ?? []
        #expect(preload.count == audio.count && preload.allSatisfy { $0 == "metadata" }, "preload: \(preload)", sourceLocation: sourceLocation)
        #expect(page.check["failed_players"] as? Int == 0, "a failed recording has a player", sourceLocation: sourceLocation)
    }

    @Test func demoReportLoadsInChromiumAndSecondRunHasNothingToDo() throws {
        let dir = try TempDir()
        let (spec, env) = try DemoSpec.copy(into: dir.path)
        let segno = try CLI.segnoPath()
        let first = try CLI.run(segno, ["run", spec], environment: env)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdoutLines.last == "report: \(dir.path)/out/report.html (open it in a browser)")
        let second = try CLI.run(segno, ["run", spec], environment: env)
        #expect(second.status == 0)
        #expect(second.stdout.contains("nothing to do: \(PipelineExampleTests.demoRecordings) recordings up to date"), "\(second.stdout)")
        let status = try RunWorkspace.json(try CLI.run(segno, ["status", spec, "--json"], environment: env).stdout)
        let report = dir["out/report.html"]
        let page = try Chromium.load(report)
        checkPage(page, report: report, status: status, waves: PipelineExampleTests.demoRecordings)
        #expect(page.check["rows"] as? Int == PipelineExampleTests.demoRecordings)
        // Two runs in the history: the second did nothing.
        #expect(page.dom.contains("#2") && page.dom.contains("#1"))
        try Chromium.screenshot(report, to: dir["shot.png"])
        let png = try Data(contentsOf: URL(fileURLWithPath: dir["shot.png"]))
        #expect(png.count > 10_000 && png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        if let keep = ProcessInfo.processInfo.environment["SEGNO_REPORT_SCREENSHOT"] { try png.write(to: URL(fileURLWithPath: keep)) }
    }

    @Test func failuresShowTheirClassAndTheRetryLineAndTheStateIsUntouched() throws {
        let ws = try RunWorkspace()
        try ws.makeRecordings(count: 4)
        try Data("RIFF\u{0}\u{0}\u{0}\u{0}WAVEjunk, not audio at all".utf8).write(to: URL(fileURLWithPath: ws["in/broken.wav"]))
        for f in try FileManager.default.subpathsOfDirectory(atPath: ws["in"]) { RunWorkspace.setModified(ws["in/" + f], seconds: 1_700_000_000) }
        try ws.writeSpec("""
            version: 1
            input: { root: in }
            output: { root: out }
            report: { path: out/report.html }
            stages:
              - encode: { path: "{dir}/{stem}.flac" }
              - waveform: { path: "{dir}/{stem}.json", pixels_per_second: 20 }
              - metadata: { path: "{dir}/{stem}.meta.json" }
            """)
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(1), "\(run.stderr)")
        let status = try ws.status()
        #expect(status.int("failed") == 1 && status.int("done") == 4)

        // `segno report` reads the state read-only: the state folder is byte-identical afterwards.
        let stateDir = ws["out/.segno"]
        func snapshot() throws -> [String: Data] {
            var out: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: stateDir) {
                var st = stat()
                _ = lstat(stateDir + "/" + name, &st)
                let stamp = "\(st.st_size) \(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec) \(st.st_mode)"
                out[name] = try Data(contentsOf: URL(fileURLWithPath: stateDir + "/" + name)) + Data(stamp.utf8)
            }
            return out
        }
        let before = try snapshot()
        // -o writes into a folder that exists (issue 31 item 11: segno creates none for it).
        try FileManager.default.createDirectory(atPath: ws["pages"], withIntermediateDirectories: true)
        let made = try ws.segno(["report", "spec.yaml", "-o", "pages/all.html"])
        #expect(made.exited(0), "\(made.stderr)")
        let failedOnly = try ws.segno(["report", "spec.yaml", "--failed", "-o", "pages/failed.html"])
        #expect(failedOnly.exited(0))
        let json = try ws.segno(["report", "spec.yaml", "--json"])
        #expect(json.exited(0))
        let after = try snapshot()
        #expect(after == before, "the state folder changed: \(after.keys.sorted())")
        #expect(!FileManager.default.fileExists(atPath: stateDir + "/state.sqlite-wal"))

        // --json: the same counts as status, the failure with its class and the retry line.
        let data = try RunWorkspace.json(json.stdout)
        for key in ["recordings", "done", "failed", "partial"] { #expect(data.int("counts", key) == status.int(key)) }
        let failure = (data["failures"] as? [[String: Any]])?.first
        #expect(failure?["path"] as? String == "broken.wav")
        #expect(failure?["class"] as? String == "input")
        #expect((data["retry"] as? String) == "segno retry \(ws["spec.yaml"])")
        #expect((data["recordings"] as? [Any])?.count == 5)

        // Both pages, the run's own and `segno report`'s in another folder, load and link correctly.
        for (report, rows, waves) in [(ws["out/report.html"], 5, 4), (ws["pages/all.html"], 5, 4), (ws["pages/failed.html"], 1, 0)] {
            let page = try Chromium.load(report)
            if waves > 0 { checkPage(page, report: report, status: status, waves: waves) }
            #expect(page.check["rows"] as? Int == rows)
            #expect(page.dom.contains("segno retry \(ws["spec.yaml"])"))
            #expect(page.dom.contains("broken.wav") && page.dom.contains(">input<"))
        }
    }

    /// A long memo whose every waveform column reaches full scale (noise gated 4 times a second, made
    /// by sox) gets an RMS layer inside the min/max one; a failed recording gets no player; and the
    /// page, with long names, fits an 800 px window.
    @Test func longMemoHasAnRMSLayerFailedHasNoPlayerAndThePageFits800Pixels() throws {
        let ws = try RunWorkspace()
        let folder = "a rather long folder name for the field recordings of the spring survey"
        try FileManager.default.createDirectory(atPath: ws["in/" + folder], withIntermediateDirectories: true)
        let memo = ws["in/\(folder)/gated-noise-memo-recorded-on-the-north-ridge-at-dawn.wav"]
        let sox = try CLI.run(try #require(CLI.find("sox"), "sox is not installed (make test-deps)"), ["-R", "-n", "-r", "16000", "-b", "16", memo, "synth", "60", "whitenoise", "synth", "60", "square", "amod", "4"])
        #expect(sox.status == 0, "\(sox.stderr)")
        try Data("RIFF\u{0}\u{0}\u{0}\u{0}WAVEjunk, not audio at all".utf8).write(to: URL(fileURLWithPath: ws["in/\(folder)/broken-memo-with-a-long-name.wav"]))
        for f in try FileManager.default.subpathsOfDirectory(atPath: ws["in"]) { RunWorkspace.setModified(ws["in/" + f], seconds: 1_700_000_000) }
        try ws.writeSpec("""
            version: 1
            input: { root: in }
            output: { root: out }
            report: { path: out/report.html }
            stages:
              - waveform: { path: "{dir}/{stem}.json", pixels_per_second: 100 }
              - metadata: { path: "{dir}/{stem}.meta.json" }
            """)
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(1), "\(run.stderr)")
        let json = try RunWorkspace.json(try ws.segno(["report", "spec.yaml", "--json"]).stdout)
        let rows = json["recordings"] as? [[String: Any]] ?? []
        let broken = rows.first { ($0["path"] as? String)?.hasSuffix("broken-memo-with-a-long-name.wav") == true }
        #expect(broken?["status"] as? String == "failed")
        #expect(broken?["audio"] is NSNull, "a failed recording has a player: \(broken?["audio"] ?? "")")
        let good = rows.first { $0["status"] as? String == "done" }
        // 6000 waveform pixels folded into the report's columns: min/max reach past half scale in every
        // column (a solid block; sox's noise is repeatable with -R, its column extremes 80–108 of 127);
        // the RMS layer stays well below it.
        let minMax = [UInt8](Data(base64Encoded: good?["wave"] as? String ?? "") ?? Data())
        let rms = [UInt8](Data(base64Encoded: good?["wave_rms"] as? String ?? "") ?? Data())
        #expect(!rms.isEmpty && rms.count * 2 == minMax.count, "rms \(rms.count), min/max \(minMax.count)")
        let halfRanges = stride(from: 0, to: minMax.count, by: 2).map { (Int(minMax[$0 + 1]) - Int(minMax[$0])) / 2 }
        #expect(halfRanges.allSatisfy { $0 > 64 }, "min/max: \(halfRanges)")
        #expect(rms.allSatisfy { $0 > 10 && Double($0) / 255 < 0.8 * Double(halfRanges.min() ?? 0) / 127 }, "rms: \(rms)")

        let page = try Chromium.load(ws["out/report.html"], width: 800)
        #expect((page.check["errors"] as? [Any])?.isEmpty == true, "page errors: \(page.check["errors"] ?? "")")
        let layers = page.check["layers"] as? [[Int]] ?? []
        #expect(layers.count == 1 && layers.allSatisfy { $0[0] > 200 && $0[1] > 200 }, "solid and faint pixels: \(layers)")
        #expect(page.check["failed_rows"] as? Int == 1)
        #expect(page.check["failed_players"] as? Int == 0)
        #expect((page.check["audio"] as? [String])?.count == 1)
        #expect(page.check["inner_width"] as? Int == 800)
        let scroll = page.check["scroll_width"] as? Int ?? .max
        #expect(scroll <= 800, "the page is \(scroll) px wide in an 800 px window")
    }

    /// The RMS layer from an audiowaveform file written here by hand: 8 pixels at full scale, then 8
    /// alternating silent and full; folded to 2 columns, both columns' min/max are full scale, and
    /// the RMS of their per-pixel half-ranges is 1 and √½.
    @Test func rmsLayerIsTheQuadraticMeanOfThePixelsFoldedIntoAColumn() throws {
        let dir = try TempDir()
        var data: [Int] = []
        for _ in 0..<8 { data += [-32768, 32767] }
        for i in 0..<8 { data += i % 2 == 0 ? [0, 0] : [-32768, 32767] }
        let file = dir["w.json"]
        let text = "{\"version\":2,\"channels\":1,\"sample_rate\":8000,\"samples_per_pixel\":80,\"bits\":16,\"length\":16,\"data\":\(data)}"
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let layers = try #require(ReportWaveform.fromPeaksFile(file, columns: 2))
        #expect([UInt8](Data(base64Encoded: layers.minMax) ?? Data()) == [1, 255, 1, 255])
        #expect([UInt8](Data(base64Encoded: layers.rms) ?? Data()) == [255, UInt8((255 * 0.5.squareRoot()).rounded())])
    }

    @Test func noStateAndUnknownRunAreOneLineErrors() throws {
        let ws = try RunWorkspace()
        try ws.writeSpec("""
            version: 1
            input: { root: in }
            output: { root: out }
            stages:
              - encode: { path: "{stem}.flac" }
            """)
        // Nothing has run: said as status says it, exit 0, no page (issue 31 item 7).
        let none = try ws.segno(["report", "spec.yaml"])
        #expect(none.exited(0))
        #expect(none.stdout.contains("no state yet"))
        #expect(!FileManager.default.fileExists(atPath: ws["out"]))
        try ws.makeRecordings(count: 1)
        RunWorkspace.setModified(ws["in/memo 000.wav"], seconds: 1_700_000_000)
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        let bad = try ws.segno(["report", "spec.yaml", "--run", "99"])
        #expect(bad.exited(2))
        #expect(bad.stderr.contains("no run 99"))
        let one = try ws.segno(["report", "spec.yaml", "--run", "1", "--json"])
        #expect(one.exited(0))
        #expect((try RunWorkspace.json(one.stdout)["runs"] as? [Any])?.count == 1)
    }

    @Test func reportPathIsCheckedWithTheSpec() throws {
        let ws = try RunWorkspace()
        try ws.writeSpec("""
            version: 1
            input: { root: in }
            output: { root: out }
            report: { path: out/, title: x }
            stages:
              - encode: { path: "{stem}.flac" }
            """)
        let r = try ws.segno(["validate", "spec.yaml"])
        #expect(r.exited(2))
        #expect(r.stderr.contains("report"), "\(r.stderr)")
    }
}
