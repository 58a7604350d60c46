import Foundation
import SegnoAudioTestSupport
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Every example in pipelines/ runs end to end on the bundled samples, writes what its taps
/// promise, and a second run does nothing. New examples are picked up automatically.
@Suite struct PipelineExampleTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// Examples that process a folder. radio.yaml records stations instead: StreamCaptureTests runs
    /// it against the local Icecast.
    static var examples: [String] {
        let dir = repo.appendingPathComponent("pipelines").path
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".yaml") }.sorted()
            .filter { name in
                let text = (try? String(contentsOfFile: dir + "/" + name, encoding: .utf8)) ?? ""
                return !text.contains("\n  streams:")
            }
    }

    /// Recordings in pipelines/samples that demo.yaml takes (the others take the audio only).
    static let demoRecordings = 4

    func segno(_ args: [String], env: [String: String]) throws -> ProcessResult {
        try CLI.run(try CLI.segnoPath(), args, environment: env)
    }

    @Test func thereAreExamples() {
        #expect(Self.examples.contains("demo.yaml") && Self.examples.contains("voice-memos.yaml"))
    }

    @Test(arguments: examples)
    func exampleRunsAndResumes(_ name: String) throws {
        let dir = try TempDir()
        let spec = Self.repo.appendingPathComponent("pipelines/\(name)").path
        // demo.yaml has a fixed output folder: run it through a copy whose output is ours.
        var specPath = spec
        var env = ["SEGNO_INPUT": Self.repo.appendingPathComponent("pipelines/samples").path, "SEGNO_OUTPUT": dir["out"]]
        if name == "demo.yaml" {
            (specPath, env) = try DemoSpec.copy(into: dir.path)
        }
        // The meetings example runs on two short meetings of packaged voices (MeetingsTests checks what it writes).
        if name == "meetings.yaml" {
            try MeetingsTests.requireEngines()
            try Meetings.write(into: dir["meetings"])
            env["SEGNO_MEETINGS_INPUT"] = dir["meetings"]
        }
        // The spoken-word example runs on its own sample, with the speech engines `make deps` installs.
        if name == "spoken-memos.yaml" {
            let needed = try segno(["info", "--formats"], env: [:]).stdout.split(separator: "\n")
                .filter { ["denoise deepfilter:", "pauses vad=silero:", "transcribe "].contains(where: $0.hasPrefix) }
            let missing = needed.filter { $0.contains("not installed") }
            if needed.count < 4 || !missing.isEmpty {
                try Test.cancel("the speech engines are not installed (make deps): \(missing.joined(separator: "; "))")
            }
            env["SEGNO_SPOKEN_INPUT"] = Self.repo.appendingPathComponent("pipelines/spoken").path
            env["SEGNO_SPOKEN_UPLOAD"] = dir["uploaded"]
        }
        let validate = try segno(["validate", specPath], env: env)
        #expect(validate.status == 0, "\(validate.stderr)")
        let first = try segno(["run", specPath, "--report", dir["report.json"]], env: env)
        #expect(first.status == 0, "\(name): \(first.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir["report.json"]))) as? [String: Any]
        let counts = report?["counts"] as? [String: Any]
        // demo.yaml also takes the sensor series (a CSV) in pipelines/samples.
        let expected = name == "demo.yaml" ? Self.demoRecordings : name == "spoken-memos.yaml" ? 1 : name == "meetings.yaml" ? Meetings.standard.count : 3
        #expect(counts?["done"] as? Int == expected, "\(name): \(String(describing: counts))")
        #expect(counts?["failed"] as? Int == 0)
        // Every output listed in the report exists and is not empty.
        for rec in report?["recordings"] as? [[String: Any]] ?? [] {
            for out in rec["outputs"] as? [String] ?? [] {
                let size = (try? FileManager.default.attributesOfItem(atPath: out)[.size] as? Int) ?? 0
                #expect(size > 0, "\(name): \(out) is missing or empty")
                #expect(out.hasPrefix(dir["out"] + "/"), "\(name): \(out) is outside output.root")
            }
        }
        let second = try segno(["run", specPath], env: env)
        #expect(second.status == 0)
        #expect(second.stdout.contains("nothing to do: \(expected) recordings up to date"), "\(name): \(second.stdout)")
    }
}

/// `segno waveform` on audiowaveform data: converting a 16-bit .dat at zoom 256 to 8-bit JSON at
/// zoom 512 gives the same bytes as computing that JSON from the audio; a zoom that is not a
/// whole multiple is refused with a clear message.
@Suite struct WaveformDataConversionTests {
    @Test func datToCoarserEightBitJSONEqualsDirectComputation() throws {
        let dir = try TempDir()
        try Fixtures.writeSine(to: dir["a.wav"], frequency: 300, rate: 44100, frames: 44100 * 2 + 77, channels: 2)
        let segno = try CLI.segnoPath()
        #expect(try CLI.run(segno, ["waveform", dir["a.wav"], "-o", dir["a16.dat"], "-b", "16", "-z", "256"]).status == 0)
        #expect(try CLI.run(segno, ["waveform", dir["a16.dat"], "-o", dir["a8.json"], "-b", "8", "-z", "512"]).status == 0)
        #expect(try CLI.run(segno, ["waveform", dir["a.wav"], "-o", dir["ref.json"], "-b", "8", "-z", "512"]).status == 0)
        let converted = try Data(contentsOf: URL(fileURLWithPath: dir["a8.json"]))
        #expect(!converted.isEmpty)
        #expect(converted == (try Data(contentsOf: URL(fileURLWithPath: dir["ref.json"]))))
        let bad = try CLI.run(segno, ["waveform", dir["a16.dat"], "-o", dir["x.json"], "-z", "300"])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("a16.dat") && bad.stderr.contains("whole multiple"))
        #expect(!FileManager.default.fileExists(atPath: dir["x.json"]))
    }
}
