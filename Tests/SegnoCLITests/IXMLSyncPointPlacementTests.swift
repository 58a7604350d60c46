import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Decision 0096: a BWF's iXML sync points move with the audio through `pitch: { tempo }` and
/// `pauses`, as its markers (written as `cue ` points) do. The BWF is built and the output's iXML
/// and `cue ` chunk are read by Tests/support/ixml.py (struct and xml.etree, not segno's reader);
/// the expected samples are worked out by hand (tempo) or from the run's own cut list (pauses).
@Suite(.serialized) struct IXMLSyncPointPlacementTests {
    static let helper = DemoSpec.repo.appendingPathComponent("Tests/support/ixml.py").path

    static func python(_ args: [String]) throws -> [String: Any] {
        let r = try CLI.tool("python3", [helper] + args)
        #expect(r.status == 0, "ixml.py \(args): \(r.stderr)")
        return r.stdout.isEmpty ? [:] : try RunWorkspace.json(r.stdout)
    }

    /// The sync points' samples by comment (else function), in file order.
    static func samples(_ read: [String: Any]) -> [(String, Int)] {
        (read["points"] as? [[String: Any]] ?? []).map {
            let c = $0["comment"] as? String ?? ""
            return (c.isEmpty ? $0["function"] as? String ?? "" : c, ($0["sample"] as? NSNumber)?.intValue ?? -1)
        }
    }

    /// A 10 s, 48 kHz source with sync points (samples): four whose digits grow at tempo 0.8,
    /// one on whole samples, an ABSOLUTE one, one near the end, one past the source's end, and a
    /// GROUP_OFFSET (another recorder's clock, left as it is).
    static let points: [(String, String, String, Int)] = [
        ("RELATIVE", "MARKER_GENERIC", "a", 9000), ("RELATIVE", "MARKER_GENERIC", "b", 9999),
        ("RELATIVE", "MARKER_GENERIC", "c", 96000), ("RELATIVE", "MARKER_GENERIC", "d", 99000),
        ("RELATIVE", "MARKER_GENERIC", "take 2", 120_000), ("ABSOLUTE", "SLATE_CLAP", "", 312_000),
        ("RELATIVE", "MARKER_GENERIC", "late", 470_000), ("RELATIVE", "MARKER_GENERIC", "past the end", 500_000),
        ("RELATIVE", "GROUP_OFFSET", "other recorder", 48000),
    ]

    /// `pastTheEnd`: with the point past the source's end (its removal shortens the iXML).
    func workspace(pastTheEnd: Bool) throws -> RunWorkspace {
        let ws = try RunWorkspace()
        try FileManager.default.createDirectory(atPath: ws["in"], withIntermediateDirectories: true)
        let tone = try CLI.tool("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=10:r=48000", "-c:a", "pcm_s16le", ws["tone.wav"]])
        #expect(tone.status == 0, "\(tone.stderr)")
        let json = "[" + Self.points.filter { pastTheEnd || $0.2 != "past the end" }.map { "[\"\($0.0)\",\"\($0.1)\",\"\($0.2)\",\($0.3)]" }.joined(separator: ",") + "]"
        _ = try Self.python(["bwf", ws["tone.wav"], ws["in/take.wav"], json])
        return ws
    }

    @Test(arguments: [1.25, 0.8]) func aTempoChangeMovesEverySyncPoint(tempo: Double) throws {
        // At 1.25 the point past the end is there to be removed; at 0.8 it is left out, so the
        // grown counts make the iXML longer than the chunk written before the audio.
        let ws = try workspace(pastTheEnd: tempo == 1.25)
        _ = try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nretries: 0\nstages:\n"
                             + "  - pitch: { tempo: \(tempo) }\n  - encode: \"{stem}.wav\"\n")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        let out = try Self.python(["read", ws["out/take.wav"]])
        let reference = 3600 * 48000
        #expect((out["time_reference"] as? NSNumber)?.intValue == reference, "\(out)")
        // By hand: each sample divided by the tempo, rounded to the nearest sample; the ABSOLUTE
        // one keeps the time reference (172,800,000) and moves 312,000 / tempo after it. 500,000
        // (10.42 s) lies past the 10 s source: at or after the output's end (8 s), removed.
        let want: [(String, Int)] = tempo == 1.25
            ? [("a", 7200), ("b", 7999), ("c", 76800), ("d", 79200), ("take 2", 96000), ("SLATE_CLAP", reference + 249_600), ("late", 376_000),
               ("other recorder", 48000)]
            : [("a", 11250), ("b", 12499), ("c", 120_000), ("d", 123_750), ("take 2", 150_000), ("SLATE_CLAP", reference + 390_000), ("late", 587_500),
               ("other recorder", 48000)]
        let got = Self.samples(out)
        #expect(got.map(\.0) == want.map(\.0) && got.map(\.1) == want.map(\.1), "tempo \(tempo): \(got)")
        #expect((out["count"] as? NSNumber)?.intValue == 8, "SYNC_POINT_COUNT follows a removal: \(out)")
        // The markers written as cue points sit on the same samples (the ABSOLUTE one less the reference).
        let cues = (out["cues"] as? [NSNumber] ?? []).map(\.intValue)
        let markerSamples = want.filter { $0.0 != "other recorder" }.map { $0.0 == "SLATE_CLAP" ? $0.1 - reference : $0.1 }.sorted()
        #expect(cues == markerSamples, "tempo \(tempo): cues \(cues)")
        // One iXML chunk; at 0.8 the grown counts no longer fit the chunk written before the audio,
        // which became JUNK, and the new one follows the audio.
        let chunks = out["chunks"] as? [String] ?? []
        #expect(chunks.filter { $0 == "iXML" }.count == 1, "\(chunks)")
        #expect(chunks.contains("JUNK") == (tempo == 0.8), "\(chunks)")
        #expect(((chunks.firstIndex(of: "iXML") ?? 0) > (chunks.firstIndex(of: "data") ?? 0)) == (tempo == 0.8), "\(chunks)")
        #expect((run.stdout + run.stderr).contains("iXML sync point \"past the end\"") == (tempo == 1.25), "\(run.stdout)\(run.stderr)")
        // segno reads each marker back once: the cue point and the sync point agree.
        let info = try RunWorkspace.json(try ws.segno(["info", "--json", "out/take.wav"]).stdout)
        #expect((info["markers"] as? [Any])?.count == 7, "\(info["markers"] ?? "")")
    }

    @Test func pausesMoveSyncPointsAlongTheCutList() throws {
        let segno = try CLI.segnoPath()
        let engines = try CLI.run(segno, ["info", "--formats"]).stdout.split(separator: "\n").filter { $0.hasPrefix("pauses vad=webrtc:") }
        if engines.isEmpty || engines.contains(where: { $0.contains("not installed") }) { try Test.cancel("webrtc VAD not installed") }
        let ws = try RunWorkspace()
        try FileManager.default.createDirectory(atPath: ws["in"], withIntermediateDirectories: true)
        let memo = DemoSpec.repo.appendingPathComponent("pipelines/spoken/austen memo.flac").path
        let wav = try CLI.tool("ffmpeg", ["-v", "error", "-y", "-i", memo, "-c:a", "pcm_s16le", ws["memo.wav"]])
        #expect(wav.status == 0, "\(wav.stderr)")
        // 16 kHz: 1 s, 3.3 s, 5.7 s (ABSOLUTE), 8.1 s, 10 s (the memo is 10.08 s).
        let seconds = [1.0, 3.3, 5.7, 8.1, 10.0]
        let points = seconds.enumerated().map { i, s in "[\"\(i == 2 ? "ABSOLUTE" : "RELATIVE")\",\"MARKER_GENERIC\",\"p\(i)\",\(Int(s * 16000))]" }
        _ = try Self.python(["bwf", ws["memo.wav"], ws["in/memo.wav"], "[" + points.joined(separator: ",") + "]"])
        _ = try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nretries: 0\nstages:\n"
                             + "  - pauses: { trim: true, shorten: { longer_than: 0.5s, to: 0.2s }, vad: webrtc }\n  - encode: \"{stem}.wav\"\n")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        // The expected places from the cut list's kept stretches, by hand: inside a stretch,
        // output_start + (t − source_start); in a removed stretch, the next stretch's output_start;
        // at or after the output's end, removed.
        let list = try CutListFile(path: ws["out/memo.cuts.json"])
        let cuts = list.json, place = list.place
        #expect(list.kept.count > 1, "the memo has pauses to cut: \(cuts)")
        let outputLength = list.outputDuration
        let reference = 3600 * 16000
        var want: [(String, Int)] = []
        for (i, s) in seconds.enumerated() where place(s) < outputLength {
            want.append(("p\(i)", Int((place(s) * 16000).rounded()) + (i == 2 ? reference : 0)))
        }
        #expect(want.count >= 3 && want.count < seconds.count, "some points move, one falls in the trimmed end: \(want) \(cuts)")
        #expect(want.contains { $0.0 == "p3" && $0.1 < Int(8.1 * 16000) - 8000 }, "a cut moves p3 earlier: \(want)")
        let out = try Self.python(["read", ws["out/memo.wav"]])
        let got = Self.samples(out)
        // The cut list's times have 2 decimals (0.01 s = 160 samples) and segno's own are exact, so within one sample.
        #expect(got.count == want.count && zip(got, want).allSatisfy { $0.0 == $1.0 && abs($0.1 - $1.1) <= 1 }, "\(got) want \(want)")
        let cues = (out["cues"] as? [NSNumber] ?? []).map(\.intValue)
        let relative = got.map { $0.0 == "p2" ? $0.1 - reference : $0.1 }.sorted()
        #expect(cues == relative, "the cue points and the sync points agree: \(cues) \(relative)")
    }
}
