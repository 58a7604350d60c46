import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Sensor series (CSV, JSON lines) as input: a synthetic gyroscope with known sines per axis, one
/// gap and one irregular stretch gives the analytic minimum, maximum and RMS per axis, a graph
/// picture, and a malformed row fails that file alone with its line number.
@Suite struct SensorSeriesTests {
    static let amplitudes = [0.8, 2.5, 0.3]
    static let frequencies = [1.0, 2.0, 0.5]
    static let offsets = [0.0, 0.0, 0.1]

    /// The analytic signal of axis `c` at `t` seconds.
    static func value(_ c: Int, _ t: Double) -> Double { offsets[c] + amplitudes[c] * sin(2 * .pi * frequencies[c] * t) }

    /// 10 s at 100 Hz; no rows in (3.0, 3.5); timestamps jittered by up to ±3 ms in [6, 7).
    static func rows() -> [(Double, [Double])] {
        var out: [(Double, [Double])] = []
        var rng = SplitMix64(seed: 42)
        for k in 0...1000 {
            var t = Double(k) / 100
            if t > 3.0 && t < 3.5 { continue }
            if t >= 6 && t < 7 { t += Double(Int(rng.next() % 7) - 3) / 1000 }
            out.append((t, (0..<3).map { value($0, t) }))
        }
        return out
    }

    static func writeCSV(_ path: String, badLine: Int? = nil) throws {
        var text = "t,x,y,z\n"
        for (i, r) in rows().enumerated() {
            if i + 2 == badLine { text += "\(r.0),0.1,x,0.3\n"; continue }
            text += "\(r.0),\(r.1[0]),\(r.1[1]),\(r.1[2])\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func writeJSONL(_ path: String) throws {
        let text = rows().map { "{\"t\": \($0.0), \"x\": \($0.1[0]), \"y\": \($0.1[1]), \"z\": \($0.1[2])}" }.joined(separator: "\n") + "\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// Expected RMS per axis over the 100 Hz grid: the sine, and inside the gap the straight line
    /// between the rows at 3.0 s and 3.5 s (what linear interpolation draws).
    static func expectedRMS(_ c: Int) -> Double {
        var sum = 0.0
        for k in 0...1000 {
            let t = Double(k) / 100
            var v = value(c, t)
            if t > 3.0 && t < 3.5 { v = value(c, 3.0) + (value(c, 3.5) - value(c, 3.0)) * (t - 3.0) / 0.5 }
            sum += v * v
        }
        return (sum / 1001).squareRoot()
    }

    /// Issue 22: `make demo` warned that its gyroscope series missed −16 LUFS. A sensor series has
    /// no loudness: normalize still scales it, silently; the demo's memos still pass through.
    @Test func theDemoPrintsNoLoudnessWarningForItsSensorSeries() throws {
        let dir = try TempDir()
        let (spec, env) = try DemoSpec.copy(into: dir.path)
        let run = try CLI.run(try CLI.segnoPath(), ["run", spec], environment: env)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir["out/gyro walk.flac"]), "the series went through the voice chain")
        #expect(!run.stderr.contains("gyro walk.csv: normalize"), "\(run.stderr)")
    }

    @Test func gyroSeriesGivesAnalyticLevelsAndAGraph() throws {
        let ws = try RunWorkspace()
        try Self.writeCSV(ws["in/gyro.csv"])
        try Self.writeJSONL(ws["in/gyro2.jsonl"])
        try Self.writeCSV(ws["in/broken.csv"], badLine: 812)
        for f in ["gyro.csv", "gyro2.jsonl", "broken.csv"] { RunWorkspace.setModified(ws["in/" + f], seconds: 1_700_000_000) }
        try ws.writeSpec("""
            version: 1
            input: { root: in, include: ["*.{csv,jsonl}"] }
            output: { root: out }
            stages:
              - metadata: { path: "{stem}.meta.json" }
              - waveform: { path: "{stem}.png", picture: graph, width: 600, height: 300 }
              - waveform: { path: "{stem}.json", pixels_per_second: 10 }
            """)
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(1))
        #expect(run.stderr.contains("broken.csv") && run.stderr.contains("line 812: 'x' is not a number"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws["out/broken.meta.json"]))
        for stem in ["gyro", "gyro2"] {
            let meta = try RunWorkspace.json(String(contentsOfFile: ws["out/\(stem).meta.json"], encoding: .utf8))
            #expect(meta["sample_rate"] as? Int == 100)
            #expect(meta["frames"] as? Int == 1001)
            #expect((meta["gaps"] as? String)?.hasPrefix("0.500 s at 3.000 s") == true, "\(meta["gaps"] ?? "none")")
            let axes = meta["axes"] as? [[String: Any]] ?? []
            #expect(axes.map { $0["name"] as? String } == ["x", "y", "z"])
            for (c, axis) in axes.enumerated() {
                // The sine's extremes as the 100 Hz grid samples them (y's peaks fall between grid points).
                let grid = (0...1000).map { Self.value(c, Double($0) / 100) }
                let (lo, hi) = (grid.min()!, grid.max()!)
                #expect(abs((axis["min"] as? Double ?? 0) - lo) < 1e-4, "\(stem) axis \(c) min \(axis)")
                #expect(abs((axis["max"] as? Double ?? 0) - hi) < 1e-4, "\(stem) axis \(c) max \(axis)")
                #expect(abs((axis["rms"] as? Double ?? 0) - Self.expectedRMS(c)) < 2e-3 * Self.amplitudes[c], "\(stem) axis \(c) rms \(axis) vs \(Self.expectedRMS(c))")
            }
            let png = try Data(contentsOf: URL(fileURLWithPath: ws["out/\(stem).png"]))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 2000)
            // IHDR: the size asked for.
            #expect(png[16..<24].elementsEqual([0, 0, 2, 88, 0, 0, 1, 44]))
        }
        let status = try ws.status(failed: true)
        let failure = (status["failures"] as? [[String: Any]])?.first
        #expect(failure?["class"] as? String == "input")
    }

    @Test func infoNamesTheChannelsAndTheRate() throws {
        let dir = try TempDir()
        try Self.writeCSV(dir["g.csv"])
        let r = try CLI.segno(["info", "--json", dir["g.csv"]])
        let o = try RunWorkspace.json(r.stdout)
        #expect(o["sample_rate"] as? Int == 100 && o["channels"] as? Int == 3 && o["frames"] as? Int == 1001)
        #expect((o["tags"] as? [String: Any])?["channels"] as? String == "x,y,z")
        try "t,x\n0,1\n0,2\n".write(toFile: dir["bad.csv"], atomically: true, encoding: .utf8)
        let bad = try CLI.segno(["info", "--json", dir["bad.csv"]])
        #expect(bad.status == 1)
        #expect(bad.stdout.contains("line 3: time 0.0 does not follow 0.0"), "\(bad.stdout)")
    }
}
