import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// `segno duplicates` on a corpus built here: distinct pieces (espeak-ng speech and chord
/// sequences), each as the original, an MP3, a 16 kHz copy, a copy at −6 dB with noise at 20 dB
/// SNR and a 10 s excerpt, and radio captures of two pieces back to back (two of them share a
/// piece). Every pair of files that share audio must be found with the right offset (within
/// 0.5 s), and no other pair: precision and recall 1.
@Suite(.serialized) struct DuplicatesTests {
    static let speech = [
        "Minutes of the Tuesday meeting. We went through the budget for the autumn season, agreed to move the rehearsal to Thursday evening, and asked Maria to collect quotes for two new condenser microphones before the end of the month.",
        "Field recording at the harbour, early morning. Gulls over the fish market, a diesel engine idling, and somewhere behind the warehouses a radio playing an old song. The wind is coming from the north west and the tide is low.",
        "Reminder for tomorrow: call the piano tuner at nine, pick up the cables from the repair shop, and send the mixed tracks to the label. Do not forget the invoice for the studio time in March, it is still unpaid.",
        "Interview with the lighthouse keeper, part one. He has lived on the island for thirty two years, he says the winters are long and quiet, and that the best thing about the job is the sound of the sea at night.",
    ]
    static let chordSeeds: [UInt64] = [11, 22, 33, 44]
    static let rate = 22050
    static let pieceSeconds = 24.0
    static let excerpt = (start: 7.0, length: 10.0)
    /// Radio captures: indices of the two pieces, back to back.
    static let radios = [[0, 4], [5, 0], [2, 6], [7, 3]]

    /// Where a piece sits in a file: from `pieceStart` seconds of the piece, at `at` seconds of the file.
    struct Placement { var piece: Int; var at: Double; var pieceStart: Double; var length: Double }

    func makeCorpus(in ws: RunWorkspace) throws -> [String: [Placement]] {
        var pieces: [[Float]] = []
        for (i, text) in Self.speech.enumerated() {
            // Slow enough that every text lasts longer than a piece; cut to the piece's length
            // (padding with silence would make the noisy copies share hiss).
            let r = try CLI.tool("espeak-ng", ["-s", "95", "-g", "4", "-w", ws["speech\(i).wav"], text])
            #expect(r.status == 0, "\(r.stderr)")
            let s = try Pieces.read(ws["speech\(i).wav"])
            #expect(s.rate == Self.rate && s.channels == 1)
            let n = Int(Self.pieceSeconds * Double(Self.rate))
            try #require(s.samples.count >= n, "speech \(i) lasts \(Double(s.samples.count) / Double(Self.rate)) s")
            pieces.append(Array(s.samples.prefix(n)))
        }
        for seed in Self.chordSeeds { pieces.append(Pieces.chords(seed: seed, seconds: Self.pieceSeconds, rate: Self.rate)) }
        var truth: [String: [Placement]] = [:]
        var rng = SplitMix64(seed: 99)
        for (i, x) in pieces.enumerated() {
            let whole = [Placement(piece: i, at: 0, pieceStart: 0, length: Self.pieceSeconds)]
            try Pieces.write(x, rate: Self.rate, to: ws["in/p\(i).wav"])
            truth["p\(i).wav"] = whole
            let mp3 = try CLI.tool("ffmpeg", ["-loglevel", "error", "-y", "-i", ws["in/p\(i).wav"], "-b:a", "96k", ws["in/p\(i)-copy.mp3"]])
            #expect(mp3.status == 0, "\(mp3.stderr)")
            truth["p\(i)-copy.mp3"] = whole
            let low = try CLI.tool("ffmpeg", ["-loglevel", "error", "-y", "-i", ws["in/p\(i).wav"], "-ar", "16000", "-c:a", "flac", ws["in/p\(i)-16k.flac"]])
            #expect(low.status == 0, "\(low.stderr)")
            truth["p\(i)-16k.flac"] = whole
            // −6 dB, then Gaussian noise 20 dB below the signal's RMS.
            let quiet = x.map { $0 * 0.5012 }
            let rms = (quiet.reduce(0) { $0 + Double($1 * $1) } / Double(quiet.count)).squareRoot()
            let noisy = quiet.map { v -> Float in
                let u1 = Double.random(in: 1e-12..<1, using: &rng), u2 = Double.random(in: 0..<1, using: &rng)
                return v + Float(rms / 10 * (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2))
            }
            try Pieces.write(noisy, rate: Self.rate, to: ws["in/p\(i)-noisy.wav"])
            truth["p\(i)-noisy.wav"] = whole
            let from = Int(Self.excerpt.start * Double(Self.rate)), count = Int(Self.excerpt.length * Double(Self.rate))
            try Pieces.write(Array(x[from..<(from + count)]), rate: Self.rate, to: ws["in/p\(i)-cut.wav"])
            truth["p\(i)-cut.wav"] = [Placement(piece: i, at: 0, pieceStart: Self.excerpt.start, length: Self.excerpt.length)]
        }
        for (k, pair) in Self.radios.enumerated() {
            try Pieces.write(pieces[pair[0]] + pieces[pair[1]], rate: Self.rate, to: ws["in/radio\(k).wav"])
            truth["radio\(k).wav"] = pair.enumerated().map { Placement(piece: $0.element, at: Double($0.offset) * Self.pieceSeconds, pieceStart: 0, length: Self.pieceSeconds) }
        }
        return truth
    }

    @Test func findsEveryPairAndNoOther() throws {
        let ws = try RunWorkspace()
        let truth = try makeCorpus(in: ws)
        try ws.writeSpec(RunTests.spec(stages: ["fingerprint: {}"]))
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        let started = Date()
        let r = try ws.segno(["duplicates", "spec.yaml", "--json"])
        #expect(r.exited(0), "\(r.stderr)")
        #expect(Date().timeIntervalSince(started) < 10)
        let obj = try RunWorkspace.json(r.stdout)
        #expect(obj["recordings"] as? Int == truth.count)
        // Expected: every two files with a piece in common, and where the same moment is in each.
        var expected: [String: Double] = [:]
        let names = truth.keys.sorted()
        for (i, a) in names.enumerated() {
            for b in names[(i + 1)...] {
                for pa in truth[a]! { for pb in truth[b]! where pa.piece == pb.piece {
                    // Shared stretch of the piece must be long enough to count.
                    let lo = max(pa.pieceStart, pb.pieceStart), hi = min(pa.pieceStart + pa.length, pb.pieceStart + pb.length)
                    guard hi - lo >= 5 else { continue }
                    expected["\(a)|\(b)"] = (pb.at - pb.pieceStart) - (pa.at - pa.pieceStart)
                } }
            }
        }
        var found: [String: Double] = [:]
        for g in obj["groups"] as? [[String: Any]] ?? [] {
            for m in g["matches"] as? [[String: Any]] ?? [] {
                let a = m["a"] as! String, b = m["b"] as! String
                let key = a < b ? "\(a)|\(b)" : "\(b)|\(a)"
                let offset = (m["offset"] as? Double) ?? Double(m["offset"] as? Int ?? 0)
                found[key] = a < b ? offset : -offset
                #expect(((m["similarity"] as? Double) ?? 1) >= 0.85)
            }
        }
        let missing = Set(expected.keys).subtracting(found.keys).sorted()
        let extra = Set(found.keys).subtracting(expected.keys).sorted()
        #expect(missing.isEmpty, "missed pairs: \(missing)")
        #expect(extra.isEmpty, "false pairs: \(extra)")
        for (key, offset) in expected {
            guard let f = found[key] else { continue }
            #expect(abs(f - offset) <= 0.5, "\(key): offset \(f) s, expected \(offset) s")
        }
        #expect(expected.count > 100)
        // Text form: one line per group.
        let text = try ws.segno(["duplicates", "spec.yaml", "--min-overlap", "30"])
        #expect(text.exited(0))
        #expect(!text.stdout.contains("-cut.wav"), "a 10 s excerpt is below --min-overlap 30")
    }

    @Test func needsAFingerprintTap() throws {
        let ws = try RunWorkspace()
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }"]))
        let r = try ws.segno(["duplicates", "spec.yaml"])
        #expect(r.exited(2))
        #expect(r.stderr.contains("no fingerprint tap"))
    }
}
