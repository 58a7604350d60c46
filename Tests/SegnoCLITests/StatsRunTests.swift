import Foundation
import SegnoTestSupport
import Testing

/// The `stats` tap in a real run: its sidecar, the metadata sidecar after it, the report's
/// measures and `--force=stats`, all reached through its declaration (no other file names it).
@Suite struct StatsRunTests {
    @Test func aRunWritesTheFiguresAndTheMetadataSidecarAndTheReportShowThem() throws {
        let ws = try RunWorkspace()
        let sox = try CLI.run(try #require(CLI.find("sox"), "sox is not installed (make test-deps)"),
                              ["-n", "-r", "16000", "-b", "16", ws["in/memo.wav"], "synth", "3", "sine", "440", "vol", "0.5"])
        #expect(sox.status == 0, "\(sox.stderr)")
        RunWorkspace.setModified(ws["in/memo.wav"], seconds: 1_700_000_000)
        try ws.writeSpec("""
            version: 1
            input: { root: in }
            output: { root: out }
            stages:
              - stats: { path: "{stem}.stats.json" }
              - metadata: { path: "{stem}.meta.json", levels: 0 }
            """)
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        let stats = try RunWorkspace.json(try String(contentsOfFile: ws["out/memo.stats.json"], encoding: .utf8))
        let peak = try #require((stats["peak_dbfs"] as? NSNumber)?.doubleValue, "\(stats)")
        #expect(abs(peak - 20 * log10(0.5)) < 0.01, "\(stats)")
        let meta = try RunWorkspace.json(try String(contentsOfFile: ws["out/memo.meta.json"], encoding: .utf8))
        let gathered = try #require((meta["measures"] as? [String: Any])?["stats"] as? [String: Any], "\(meta)")
        #expect((gathered["peak_dbfs"] as? NSNumber)?.doubleValue == peak)

        let report = try RunWorkspace.json(try ws.segno(["report", "spec.yaml", "--json"]).stdout)
        let row = try #require((report["recordings"] as? [[String: Any]])?.first)
        let measures = try #require(row["measures"] as? [[Any]], "\(row)")
        #expect(measures.map { $0[0] as? String } == ["peak", "RMS", "true peak", "LRA", "DC", "clipped"], "\(measures)")
        #expect(measures.first?[2] as? String == "dBFS")

        // find filters on the figures, whichever tap keeps them.
        let clean = try ws.segno(["find", "spec.yaml", "--measure", "clipped=0", "--measure", "peak_dbfs>=-7"])
        #expect(clean.exited(0) && clean.stdout.contains("memo.wav"), "\(clean.stdout)\(clean.stderr)")
        let loud = try ws.segno(["find", "spec.yaml", "--measure", "peak_dbfs>-1"])
        #expect(loud.stdout.contains("no recordings match"), "\(loud.stdout)")
        let unknown = try ws.segno(["find", "spec.yaml", "--measure", "loudness>1"])
        #expect(unknown.exited(2) && unknown.stderr.contains("clipped, dc_offset, loudness_range_lu"), "\(unknown.stderr)")
        #expect(try ws.segno(["find", "spec.yaml", "--measure", "clipped"]).exited(2))

        let forced = try ws.segno(["run", "spec.yaml", "--force=stats"])
        #expect(forced.exited(0), "\(forced.stderr)")
        #expect(forced.stdout.contains("1 done"), "\(forced.stdout)")
    }
}
