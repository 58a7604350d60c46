import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoCoreTestSupport
import SegnoDSP
import SegnoTestSupport
import Testing

/// Test signals for fingerprints: chord sequences (three notes with four harmonics each, a new
/// chord every 0.2–0.6 s), so that every piece has its own chroma over time like music.
enum Pieces {
    /// `seconds` of a seeded chord sequence at `rate`, mono, RMS about −12 dBFS.
    static func chords(seed: UInt64, seconds: Double, rate: Int) -> [Float] {
        var rng = SplitMix64(seed: seed)
        let n = Int(seconds * Double(rate))
        var out = [Float](repeating: 0, count: n)
        var pos = 0
        while pos < n {
            let dur = min(n - pos, Int(Double.random(in: 0.2...0.6, using: &rng) * Double(rate)))
            for _ in 0..<3 {
                let note = Double(Int.random(in: 48..<84, using: &rng))
                let f = 440 * pow(2, (note - 69) / 12)
                for h in 1...4 where f * Double(h) < Double(rate) / 2 {
                    let phase = Double.random(in: 0..<6.28, using: &rng)
                    let w = 2 * Double.pi * f * Double(h) / Double(rate)
                    for i in 0..<dur { out[pos + i] += Float(0.3 / Double(h) * sin(w * Double(i) + phase)) }
                }
            }
            pos += dur
        }
        let rms = (out.reduce(0) { $0 + Double($1 * $1) } / Double(max(1, n))).squareRoot()
        let g = Float(0.25 / max(rms, 1e-9))
        return out.map { $0 * g }
    }

    /// Writes interleaved samples with libsndfile (format from the extension).
    static func write(_ samples: [Float], channels: Int = 1, rate: Int, bits: SampleBits = .b16, to path: String) throws {
        try Fixtures.write(samples, channels: channels, rate: rate, to: path, bits: bits, blockFrames: max(1, samples.count / channels))
    }

    /// Decodes a file to interleaved samples with segno's decoder.
    static func read(_ path: String) throws -> (samples: [Float], rate: Int, channels: Int) {
        let d = try DecoderFactory.open(path: path, tools: .forTests)
        defer { d.close() }
        var out: [Float] = []
        var block = AudioBlock(channels: d.info.channels, capacity: 4096)
        while true {
            let n = try d.read(into: &block, maxFrames: 4096)
            if n == 0 { break }
            out += block.samples[0..<(n * d.info.channels)]
        }
        return (out, d.info.sampleRate, d.info.channels)
    }

    /// `fpcalc -raw -length 0` items.
    static func fpcalc(_ path: String) throws -> [UInt32] {
        let r = try CLI.tool("fpcalc", ["-raw", "-length", "0", path])
        guard let line = r.stdoutLines.first(where: { $0.hasPrefix("FINGERPRINT=") }) else { throw CLITestError("fpcalc: \(r.stderr)") }
        return line.dropFirst("FINGERPRINT=".count).split(separator: ",").compactMap { UInt32($0) }
    }

    /// `segno info --fingerprint` items.
    static func segno(_ path: String) throws -> [UInt32] {
        let r = try CLI.segno(["info", "--fingerprint", path])
        guard r.status == 0, let line = r.stdoutLines.first(where: { $0.hasPrefix("FINGERPRINT=") }) else { throw CLITestError("segno: \(r.stderr)") }
        return line.dropFirst("FINGERPRINT=".count).split(separator: ",").compactMap { UInt32($0) }
    }

    /// Bit error rate of two item lists at alignment 0, over the shorter.
    static func bitErrorRate(_ a: [UInt32], _ b: [UInt32]) -> Double {
        let n = min(a.count, b.count)
        guard n > 0 else { return 1 }
        return Double((0..<n).reduce(0) { $0 + ($1 < n ? (a[$1] ^ b[$1]).nonzeroBitCount : 0) }) / Double(32 * n)
    }
}

/// The fingerprint tap and `segno info --fingerprint` against `fpcalc -raw` (Debian's
/// libchromaprint-tools, which decodes with ffmpeg).
@Suite(.serialized) struct FingerprintTests {
    /// WAV and FLAC at several rates, channel counts and depths: item for item equal to fpcalc.
    @Test(arguments: [(8000, 1, "wav", SampleBits.b16), (11025, 2, "flac", .b16), (22050, 1, "flac", .b24),
                      (44100, 2, "wav", .b24), (48000, 6, "wav", .b16), (96000, 2, "flac", .b24)])
    func equalsFpcalcOnPCM(_ rate: Int, _ channels: Int, _ ext: String, _ bits: SampleBits) throws {
        let dir = try TempDir()
        let mono = Pieces.chords(seed: UInt64(rate * 10 + channels), seconds: 12, rate: rate)
        var x = [Float](repeating: 0, count: mono.count * channels)
        for i in 0..<mono.count { for c in 0..<channels { x[i * channels + c] = mono[i] * (c % 2 == 0 ? 1 : 0.7) } }
        let path = dir["piece.\(ext)"]
        try Pieces.write(x, channels: channels, rate: rate, bits: bits, to: path)
        let reference = try Pieces.fpcalc(path)
        #expect(reference.count > 60)
        #expect(try Pieces.segno(path) == reference)
    }

    /// MP3 and AAC made by ffmpeg: segno decodes them with other decoders than fpcalc, so the
    /// items may differ a little: a bit error rate of at most 1 %.
    @Test(arguments: [("mp3", ["-b:a", "128k"]), ("m4a", ["-c:a", "aac", "-b:a", "128k"])])
    func closeToFpcalcOnLossy(_ ext: String, _ codec: [String]) throws {
        let dir = try TempDir()
        try Pieces.write(Pieces.chords(seed: 7, seconds: 15, rate: 44100), rate: 44100, to: dir["src.wav"])
        let r = try CLI.tool("ffmpeg", ["-loglevel", "error", "-y", "-i", dir["src.wav"]] + codec + [dir["x.\(ext)"]])
        #expect(r.status == 0, "\(r.stderr)")
        let reference = try Pieces.fpcalc(dir["x.\(ext)"])
        let ours = try Pieces.segno(dir["x.\(ext)"])
        #expect(abs(ours.count - reference.count) <= 1)
        let ber = Pieces.bitErrorRate(ours, reference)
        #expect(ber <= 0.01, "bit error rate \(ber)")
    }

    /// The tap in a run: a sidecar with fpcalc's items, a row in the state database without a
    /// path, a second run that does nothing, and a rerun when the row is gone.
    @Test func tapStoresItemsAndResumes() throws {
        let ws = try RunWorkspace()
        try Pieces.write(Pieces.chords(seed: 3, seconds: 10, rate: 22050), rate: 22050, to: ws["in/a.wav"])
        try ws.writeSpec(RunTests.spec(stages: ["fingerprint: {}", "gain: -3", "fingerprint: { path: \"{stem}.fp.json\", length: 120 }"]))
        let first = try ws.segno(["run", "spec.yaml"])
        #expect(first.exited(0), "\(first.stderr)")
        let sidecar = try RunWorkspace.json(String(contentsOfFile: ws["out/a.fp.json"], encoding: .utf8))
        let items = (sidecar["items"] as? [Int])?.map { UInt32($0) } ?? []
        #expect(items == (try Pieces.fpcalc(ws["in/a.wav"])))
        #expect((sidecar["fingerprint"] as? String)?.hasPrefix("AQAA") == true)
        let second = try ws.segno(["run", "spec.yaml"])
        #expect(second.stdout.contains("nothing to do: 1 recordings up to date") || second.stdout.contains("nothing to do: 1 recording up to date"),
                "\(second.stdout)")
        // The path-less tap's output is its row: deleting it reruns that tap alone.
        let sql = try CLI.tool("sqlite3", [ws["out/.segno/state.sqlite"], "DELETE FROM fingerprint WHERE stage = 'fingerprint:'"])
        #expect(sql.status == 0, "\(sql.stderr)")
        let third = try ws.segno(["run", "spec.yaml", "--dry-run", "--explain"])
        #expect(third.stdout.contains("fingerprint row"), "\(third.stdout)")
        let fourth = try ws.segno(["run", "spec.yaml"])
        #expect(fourth.exited(0))
        let count = try CLI.tool("sqlite3", [ws["out/.segno/state.sqlite"], "SELECT count(*), sum(length(items)) > 0 FROM fingerprint"])
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "2|1")
    }

    @Test func badOptionsAreSpecErrors() throws {
        let ws = try RunWorkspace()
        try ws.writeSpec(RunTests.spec(stages: ["fingerprint: { algorithm: 9 }"]))
        let r = try ws.segno(["validate", "spec.yaml"])
        #expect(r.exited(2))
        #expect(r.stderr.contains("algorithm"), "\(r.stderr)")
        try ws.writeSpec(RunTests.spec(stages: ["fingerprint: { lenght: 9 }"]))
        #expect(try ws.segno(["validate", "spec.yaml"]).stderr.contains("unknown key"))
    }
}
