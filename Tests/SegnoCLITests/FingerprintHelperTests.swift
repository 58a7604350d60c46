import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Fingerprints through the `segno-decode` helper: the compressed form segno makes itself, and
/// what happens when the helper is missing, too old, or switched off for decoding.
@Suite(.serialized) struct FingerprintHelperTests {
    /// The helper built beside segno.
    static func helperPath() throws -> String {
        (try CLI.segnoPath() as NSString).deletingLastPathComponent + "/segno-decode"
    }

    /// A helper that greets as protocol 1 (a segno-decode installed before fingerprints moved
    /// there), then reads its input to the end.
    static func oldHelper(in dir: String) throws -> String {
        let greeting = "segno-decode 1 libavcodec 5.1.9"
        let path = dir + "/old-segno-decode"
        // 'V', three zero bytes, the length as a little-endian UInt32, the text.
        try "#!/bin/sh\nprintf 'V\\000\\000\\000\\0\(String(greeting.utf8.count, radix: 8))\\000\\000\\000\(greeting)'\nexec cat >/dev/null\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    /// fpcalc's compressed form (its default output) for `path`.
    static func fpcalcCompressed(_ path: String, algorithm: Int) throws -> String {
        let r = try CLI.tool("fpcalc", ["-length", "0", "-algorithm", String(algorithm), path])
        guard let line = r.stdoutLines.first(where: { $0.hasPrefix("FINGERPRINT=") }) else { throw CLITestError("fpcalc: \(r.stderr)") }
        return String(line.dropFirst("FINGERPRINT=".count))
    }

    /// segno makes the compressed form without libchromaprint: the same text as fpcalc's, for
    /// every algorithm and lengths from a few items to many (exceptional bits included).
    @Test func compressedFormEqualsFpcalcs() throws {
        let dir = try TempDir()
        for (seconds, rate) in [(10.0, 11025), (15.0, 44100), (40.0, 22050)] {
            let path = dir["piece\(Int(seconds)).wav"]
            try Pieces.write(Pieces.chords(seed: UInt64(seconds), seconds: seconds, rate: rate), rate: rate, to: path)
            for algorithm in 1...5 {
                let raw = try CLI.tool("fpcalc", ["-raw", "-length", "0", "-algorithm", String(algorithm), path])
                let line = try #require(raw.stdoutLines.first { $0.hasPrefix("FINGERPRINT=") }, "\(seconds) s, algorithm \(algorithm): \(raw.stderr)")
                let items = line.dropFirst("FINGERPRINT=".count).split(separator: ",").compactMap { UInt32($0) }
                #expect(!items.isEmpty)
                let ours = AudioFingerprint(algorithm: algorithm, items: items, duration: seconds).compressed
                #expect(ours == (try Self.fpcalcCompressed(path, algorithm: algorithm)), "\(seconds) s, algorithm \(algorithm)")
            }
        }
        #expect(AudioFingerprint(algorithm: 2, items: [], duration: 0).compressed == "")
    }

    /// No helper: `info --fingerprint` and the tap fail with the reinstall message; the tap's
    /// failure is the environment's, so the next plain run (helper back) makes the fingerprint.
    @Test func missingHelperIsAnEnvironmentFailureRetriedByTheNextRun() throws {
        let ws = try RunWorkspace()
        try Pieces.write(Pieces.chords(seed: 5, seconds: 8, rate: 16000), rate: 16000, to: ws["in/a.wav"])
        try ws.writeSpec(RunTests.spec(stages: ["fingerprint: {}"]))
        let gone = ["SEGNO_DECODE_HELPER": ws["no-such/segno-decode"]]
        let info = try ws.segno(["info", "--fingerprint", ws["in/a.wav"]], environment: gone)
        #expect(info.exited(1))
        #expect(info.stderr.contains("segno-decode is missing or too old for fingerprints; reinstall (make install)"), "\(info.stderr)")
        #expect(info.stderr.contains("a.wav"), "names the file: \(info.stderr)")
        let first = try ws.segno(["run", "spec.yaml"], environment: gone)
        #expect(first.exited(1), "\(first.stderr)")
        #expect(first.stderr.contains("segno-decode is missing or too old for fingerprints"), "\(first.stderr)")
        let cls = try CLI.tool("sqlite3", [ws["out/.segno/state.sqlite"], "SELECT status, failure_class FROM recording"])
        #expect(cls.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "failed|environment", "\(cls.stdout)")
        let second = try ws.segno(["run", "spec.yaml"])
        #expect(second.exited(0), "\(second.stderr)")
        let rows = try CLI.tool("sqlite3", [ws["out/.segno/state.sqlite"], "SELECT count(*) FROM fingerprint"])
        #expect(rows.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
    }

    /// A helper of protocol 1 is refused cleanly: fingerprints fail with the reinstall message
    /// and the reason; `info --formats` says it is not used.
    @Test func anOldHelperIsRefused() throws {
        let dir = try TempDir()
        let old = try Self.oldHelper(in: dir.path)
        let wav = dir["a.wav"]
        try Pieces.write(Pieces.chords(seed: 6, seconds: 6, rate: 16000), rate: 16000, to: wav)
        let r = try CLI.run(try CLI.segnoPath(), ["info", "--fingerprint", wav], environment: ["SEGNO_DECODE_HELPER": old])
        #expect(r.status == 1)
        #expect(r.stderr.contains("segno-decode is missing or too old for fingerprints; reinstall (make install)"), "\(r.stderr)")
        #expect(r.stderr.contains("segno-decode 1"), "says which protocol it met: \(r.stderr)")
        let formats = try CLI.run(try CLI.segnoPath(), ["info", "--formats"], environment: ["SEGNO_DECODE_HELPER": old])
        #expect(formats.stdout.contains("not used") && formats.stdout.contains("fingerprints cannot be made"), "\(formats.stdout)")
    }

    /// `SEGNO_DECODE_HELPER=off` sends decoding to the ffmpeg program, but fingerprints have no
    /// other path: they still use the helper beside segno (and `info --formats` says so).
    @Test func offStillFingerprintsWithTheHelperBesideSegno() throws {
        let dir = try TempDir()
        let wav = dir["a.wav"]
        try Pieces.write(Pieces.chords(seed: 8, seconds: 10, rate: 22050), rate: 22050, to: wav)
        let r = try CLI.run(try CLI.segnoPath(), ["info", "--fingerprint", wav], environment: ["SEGNO_DECODE_HELPER": "off"])
        #expect(r.status == 0, "\(r.stderr)")
        let items = r.stdoutLines.first { $0.hasPrefix("FINGERPRINT=") }?.dropFirst("FINGERPRINT=".count).split(separator: ",").compactMap { UInt32($0) }
        #expect(items == (try Pieces.fpcalc(wav)))
        let formats = try CLI.run(try CLI.segnoPath(), ["info", "--formats"], environment: ["SEGNO_DECODE_HELPER": "off"])
        let helper = try Self.helperPath()
        #expect(formats.stdout.contains("SEGNO_DECODE_HELPER=off") && formats.stdout.contains("fingerprints still use \(helper)"),
                "\(formats.stdout)")
    }
}
