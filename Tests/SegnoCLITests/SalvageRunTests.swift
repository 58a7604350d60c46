import Foundation
import SegnoAudioTestSupport
import SegnoCoreTestSupport
import Testing

/// Damaged recordings in a run and on the command line: `input.damaged: salvage` processes what
/// they hold and marks them salvaged (state, metadata tap, status, outputs, run report); the
/// default fails them as input failures with a message naming the way out.
@Suite struct SalvageRunTests {
    /// A 4 s stereo noise WAV and FLAC under `in/`, and cut copies of each (what a crash leaves).
    func damagedRecordings(_ ws: RunWorkspace) throws -> (wavOriginal: String, flacOriginal: String) {
        let wav = ws["orig.wav"], flac = ws["orig.flac"]
        _ = try Audio.output(of: "sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "4", "pinknoise", "vol", "0.5"], what: "make a WAV")
        _ = try Audio.output(of: "sox", [wav, flac], what: "make a FLAC")
        for (source, name) in [(wav, "memo.wav"), (flac, "song.flac")] {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
            try bytes.prefix(bytes.count * 6 / 10 + 1).write(to: URL(fileURLWithPath: ws["in/" + name]))
        }
        return (wav, flac)
    }

    func spec(_ damaged: String?) -> String {
        """
        version: 1
        name: salvage
        input:
          root: in
          settle: 0s
        \(damaged.map { "  damaged: \($0)" } ?? "")
        output:
          root: out
        stages:
          - encode: { path: "{stem}.wav", format: wav, bits: 16 }
          - metadata: { path: "{stem}.meta.json" }
        """
    }

    @Test func theDefaultFailsDamagedRecordingsAndNamesTheWayOut() throws {
        let ws = try RunWorkspace()
        _ = try damagedRecordings(ws)
        let spec = try ws.writeSpec(spec(nil))
        let run = try ws.segno(["run", spec, "--quiet"])
        #expect(run.exited(1), "\(run.stderr)")
        #expect(run.stderr.contains("memo.wav") && run.stderr.contains("truncated"), "\(run.stderr)")
        // run takes no --salvage: the way out is the spec's key (issue 31 item 9).
        #expect(!run.stderr.contains("--salvage") && run.stderr.contains("damaged: salvage"), "\(run.stderr)")
        // `segno repair` is named only where it helps (it rebuilds MP4 indexes; see RepairTests).
        #expect(!run.stderr.contains("segno repair"), "\(run.stderr)")
        let status = try ws.segno(["status", spec, "--failed"])
        #expect(status.stdout.contains("[input;"), "damaged files stay input failures: \(status.stdout)")
    }

    @Test func salvageProcessesWhatTheyHoldAndMarksThemEverywhere() throws {
        let ws = try RunWorkspace()
        let originals = try damagedRecordings(ws)
        let spec = try ws.writeSpec(spec("salvage"))
        let report = ws["run.json"]
        let run = try ws.segno(["run", spec, "--report", report])
        #expect(run.exited(0), "\(run.stderr)")
        #expect(run.stderr.contains("salvaged"), "a warning says what was salvaged: \(run.stderr)")

        // The audio: every recovered sample is the original's (decoded by sox), in place.
        for (name, original) in [("memo", originals.wavOriginal), ("song", originals.flacOriginal)] {
            let reference = try Fixtures.soxDecode(original)
            let got = try Fixtures.soxDecode(ws["out/\(name).wav"])
            #expect(got.count > reference.count / 2 && got.count < reference.count, "\(name): \(got.count) of \(reference.count)")
            #expect(got == Array(reference.prefix(got.count)), "\(name): recovered samples differ from the original's")
        }
        // The metadata tap.
        let meta = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: ws["out/memo.meta.json"]))) as? [String: Any]
        let salvaged = try #require(meta?["salvaged"] as? [String: Any], "metadata has no salvaged object")
        #expect((salvaged["frames_lost"] as? Int ?? 0) > 0)
        #expect((salvaged["at"] as? Double ?? 0) > 2)
        // The state, through status and outputs.
        let status = try ws.segno(["status", spec, "--json"])
        let st = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(st?["salvaged"] as? Int == 2, "\(status.stdout)")
        #expect(st?["done"] as? Int == 2)
        let outputs = try ws.segno(["outputs", spec])
        #expect(outputs.stdout.components(separatedBy: "salvaged: ").count == 3, "\(outputs.stdout)")
        // The run report.
        let rj = try String(contentsOfFile: report, encoding: .utf8)
        #expect(rj.components(separatedBy: "\"salvaged\":{\"frames_lost\"").count == 3, "\(rj)")
        // A second run has nothing to do.
        let again = try ws.segno(["run", spec, "--report", ws["again.json"]])
        #expect(again.exited(0))
        let aj = try String(contentsOfFile: ws["again.json"], encoding: .utf8)
        #expect(aj.contains("\"done\":0"), "\(aj)")
    }

    @Test func switchingToSalvageRetriesRecordingsParkedAsDamaged() throws {
        let ws = try RunWorkspace()
        _ = try damagedRecordings(ws)
        let failing = try ws.writeSpec(spec(nil))
        #expect(try ws.segno(["run", failing, "--quiet"]).exited(1))
        let salvaging = try ws.writeSpec(spec("salvage"))
        let run = try ws.segno(["run", salvaging, "--quiet"])
        #expect(run.exited(0), "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: ws["out/memo.wav"]))
    }

    @Test func aMemoWithoutItsIndexIsProcessedFromTheRebuiltIndexWithTheSpecsReference() throws {
        let ws = try RunWorkspace()
        let wav = ws["src.wav"], healthy = ws["healthy.m4a"]
        _ = try Audio.output(of: "sox", ["-R", "-n", "-r", "48000", "-c", "1", "-b", "16", wav, "synth", "4", "pinknoise", "vol", "0.5"], what: "make a WAV")
        _ = try Audio.output(of: "ffmpeg", ["-nostdin", "-v", "error", "-i", wav, "-c:a", "aac", "-b:a", "64k", healthy], what: "encode AAC")
        // The same recording with its moov cut away (ffmpeg writes it last) and its last frame cut.
        var b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: healthy)))
        var at = 0
        while at + 8 <= b.count {
            let size = Int(b[at]) << 24 | Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3])
            if String(decoding: b[(at + 4)..<(at + 8)], as: UTF8.self) == "mdat" { b = Array(b.prefix(at + size - 100)); break }
            at += max(size, 8)
        }
        try Data(b).write(to: URL(fileURLWithPath: ws["in/memo.m4a"]))
        let spec = try ws.writeSpec(spec("salvage").replacingOccurrences(of: "  damaged: salvage", with: "  damaged: salvage\n  reference: healthy.m4a"))
        let run = try ws.segno(["run", spec])
        #expect(run.exited(0), "\(run.stderr)")
        // The original decoded by ffmpeg; segno wrote 16-bit samples (within one step of it).
        let reference = try Audio.output(of: "ffmpeg", ["-nostdin", "-v", "error", "-i", healthy, "-f", "f32le", "-"], what: "decode")
            .withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let got = try Fixtures.soxDecode(ws["out/memo.wav"])
        #expect(got.count > reference.count * 9 / 10 && got.count < reference.count)
        #expect(maxAbsDifference(got, Array(reference.prefix(got.count))) <= 1.0 / 32768 + 1e-6)
        let meta = try String(contentsOfFile: ws["out/memo.meta.json"], encoding: .utf8)
        #expect(meta.contains("index-rebuilt"), "\(meta)")
    }

    @Test func convertAndWaveformTakeSalvage() throws {
        let ws = try RunWorkspace()
        let originals = try damagedRecordings(ws)
        let failing = try ws.segno(["convert", ws["in/song.flac"], ws["plain.wav"]])
        #expect(failing.exited(1))
        #expect(failing.stderr.contains("--salvage"), "\(failing.stderr)")
        let convert = try ws.segno(["convert", "--salvage", ws["in/song.flac"], ws["song.wav"]])
        #expect(convert.exited(0), "\(convert.stderr)")
        #expect(convert.stderr.contains("salvaged:"), "\(convert.stderr)")
        let reference = try Fixtures.soxDecode(originals.flacOriginal)
        let got = try Fixtures.soxDecode(ws["song.wav"])
        #expect(got.count > reference.count / 2 && got == Array(reference.prefix(got.count)))
        let wave = try ws.segno(["waveform", "--salvage", ws["in/memo.wav"], "-o", ws["memo.json"]])
        #expect(wave.exited(0), "\(wave.stderr)")
        #expect(FileManager.default.fileExists(atPath: ws["memo.json"]))
    }
}
