import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Issue 32: chapters and markers written by independent tools (ffmpeg's ffmetadata +
/// `-map_chapters`, mutagen's ID3 CHAP/CTOC and CHAPTERnnn comments, a BWF built byte by byte
/// with `cue ` + `adtl`; Tests/support/chapters.py) are read by `info`, survive `convert` and a
/// run into every output format, and are read back by ffprobe `-show_chapters`, mutagen and a
/// plain RIFF parser, never by segno's own reader.
@Suite(.serialized) struct ChaptersTests {
    static let helper = DemoSpec.repo.appendingPathComponent("Tests/support/chapters.py").path
    /// What every made source carries: (start s, end s, title).
    static let expected: [(Double, Double, String)] = [(0, 2.5, "Intro"), (2.5, 6, "Zoë = talks; #2"), (6, 10, "비 오는 날")]
    /// The BWF's cue points as chapters elsewhere: clap 0.5 s (marker), good take 2.5–4.5 s
    /// (ltxt region), door 8.333 s (marker).
    static let cueStarts = [0.5, 2.5, 400_000.0 / 48_000]

    static func python(_ args: [String]) throws -> Any {
        let r = try CLI.tool("python3", [helper] + args)
        #expect(r.status == 0, "chapters.py \(args): \(r.stderr)")
        return r.stdout.isEmpty ? [:] as [String: Any] : try JSONSerialization.jsonObject(with: Data(r.stdout.utf8))
    }

    /// ffprobe's chapters: (start, end, title).
    static func probe(_ path: String) throws -> [(Double, Double, String)] {
        let list = try python(["probe", path]) as? [[String: Any]] ?? []
        return list.map { (($0["start"] as? NSNumber)?.doubleValue ?? -1, ($0["end"] as? NSNumber)?.doubleValue ?? -1, $0["title"] as? String ?? "") }
    }

    static func made() throws -> RunWorkspace {
        let ws = try RunWorkspace()
        for d in ["in", "out"] { try FileManager.default.createDirectory(atPath: ws[d], withIntermediateDirectories: true) }
        _ = try python(["make", ws["in"]])
        return ws
    }

    /// Starts within `tolerance` seconds and titles equal, in order.
    static func same(_ got: [(Double, Double, String)], _ want: [(Double, String)], tolerance: Double) -> Bool {
        got.count == want.count && zip(got, want).allSatisfy { abs($0.0 - $1.0) <= tolerance && $0.2 == $1.1 }
    }

    @Test func infoReadsChaptersAndMarkersWrittenByOtherTools() throws {
        let ws = try Self.made()
        for name in ["ff.mp3", "ff.m4a", "mutagen.mp3", "mutagen.flac", "mutagen.ogg"] {
            let r = try ws.segno(["info", "--json", "in/\(name)"])
            #expect(r.exited(0), "\(r.stderr)")
            let d = try RunWorkspace.json(r.stdout)
            let chapters = d["chapters"] as? [[String: Any]] ?? []
            #expect(chapters.map { $0["title"] as? String ?? "" } == Self.expected.map(\.2), "\(name): \(chapters)")
            #expect(zip(chapters, Self.expected).allSatisfy { abs((($0["start"] as? NSNumber)?.doubleValue ?? -1) - $1.0) < 0.001 }, "\(name): \(chapters)")
            if name.hasSuffix(".mp3") {  // ID3 CHAP has an end; Vorbis comments and chpl do not.
                #expect(chapters.map { ($0["end"] as? NSNumber)?.doubleValue ?? -1 } == Self.expected.map(\.1), "\(name): \(chapters)")
            }
            let text = try ws.segno(["info", "in/\(name)"])
            #expect(text.stdout.contains("chapters: 00:00:00.000 \"Intro\", 00:00:02.500"), "\(name): \(text.stdout)")
        }
        let bwf = try RunWorkspace.json(try ws.segno(["info", "--json", "in/bwf.wav"]).stdout)
        let markers = bwf["markers"] as? [[String: Any]] ?? [], chapters = bwf["chapters"] as? [[String: Any]] ?? []
        #expect(markers.map { $0["title"] as? String ?? "" } == ["clap", "door"], "\(bwf)")
        #expect(chapters.count == 1 && chapters.first?["title"] as? String == "good take", "\(bwf)")
        #expect((chapters.first?["end"] as? NSNumber)?.doubleValue == 4.5, "the ltxt length (96000 samples) gives the end: \(chapters)")
    }

    @Test func convertCarriesChaptersToEveryOutputFormat() throws {
        let ws = try Self.made()
        for src in ["ff.mp3", "mutagen.mp3", "mutagen.flac", "ff.m4a"] {
            for ext in ["flac", "mp3", "opus", "ogg", "wav", "rf64", "m4a"] {
                let out = "out/\(src)-\(ext).\(ext == "rf64" ? "rf64" : ext)"
                let r = try ws.segno(["convert", "in/\(src)", out])
                #expect(r.exited(0), "\(src)→\(ext): \(r.stderr)")
                let got = try Self.probe(ws[out])
                // Milliseconds in ID3, comments and ffmetadata; one sample in cue points.
                #expect(Self.same(got, Self.expected.map { ($0.0, $0.2) }, tolerance: 0.001), "\(src)→\(ext): \(got)")
            }
        }
        // mutagen reads segno's MP3: ID3v2.4, one CHAP per chapter with its TIT2 and end, and a
        // top-level ordered CTOC naming them in order.
        let id3 = try Self.python(["id3", ws["out/mutagen.flac-mp3.mp3"]]) as? [String: Any] ?? [:]
        let chap = id3["chap"] as? [[String: Any]] ?? []
        #expect(chap.map { $0["title"] as? String ?? "" } == Self.expected.map(\.2), "\(id3)")
        #expect(chap.map { $0["start_ms"] as? Int ?? -1 } == [0, 2500, 6000] && chap.map { $0["end_ms"] as? Int ?? -1 } == [2500, 6000, 10000], "\(id3)")
        let toc = (id3["toc"] as? [[String: Any]] ?? []).first
        #expect(toc?["top"] as? Bool == true && toc?["ordered"] as? Bool == true, "\(id3)")
        #expect(toc?["children"] as? [String] == chap.map { $0["id"] as? String ?? "" }, "\(id3)")
        #expect(id3["version"] as? [Int] == [2, 4, 0], "\(id3)")
    }

    @Test func cueMarkersSurviveAndAResampleRescalesTheirSamplePositions() throws {
        let ws = try Self.made()
        // WAV → WAV at 16 kHz: sample positions rescaled (as bext's time reference), seconds kept.
        #expect(try ws.segno(["convert", "in/bwf.wav", "out/16k.wav", "--rate", "16000"]).exited(0))
        let cues = try Self.python(["cues", ws["out/16k.wav"]]) as? [String: Any] ?? [:]
        let points = cues["cues"] as? [[String: Any]] ?? []
        #expect(cues["rate"] as? Int == 16000)
        // In order of start: clap 0.5 s → 8000; good take 2.5 s → 40000 with its 96000 samples →
        // 32000; door 400000 at 48 kHz → 133333.3 → 133333.
        #expect(points.map { $0["offset"] as? Int ?? -1 } == [8000, 40000, 133_333], "\(points)")
        #expect(points.map { $0["label"] as? String ?? "" } == ["clap", "good take", "door"], "\(points)")
        #expect(points.map { $0["length"] as? Int ?? -1 } == [0, 32000, 0], "\(points)")
        // AIFF holds none: the convert says so.
        let aiff = try ws.segno(["convert", "in/bwf.wav", "out/bwf.aiff"])
        #expect(aiff.exited(0) && (aiff.stdout + aiff.stderr).contains("aiff holds no chapters or markers; the source's 3 are not in"), "\(aiff.stdout)\(aiff.stderr)")
        // Into formats with chapters only, the markers join the chapter (ffprobe reads all three).
        for ext in ["mp3", "flac", "m4a", "rf64"] {
            let out = "out/bwf.\(ext)"
            #expect(try ws.segno(["convert", "in/bwf.wav", out]).exited(0), "\(ext)")
            let got = try Self.probe(ws[out])
            // M4A: ffprobe reads the QuickTime chapter track, whose first chapter begins at 0 (its
            // `chpl` box, which segno reads, keeps 0.5 s).
            let starts = ext == "m4a" ? [0] + Self.cueStarts.dropFirst() : Self.cueStarts
            #expect(Self.same(got, zip(starts, ["clap", "good take", "door"]).map { ($0, $1) }, tolerance: 0.001), "\(ext): \(got)")
        }
    }

    @Test func aTempoChangeScalesChapterTimesInEveryOutput() throws {
        let ws = try Self.made()
        try FileManager.default.removeItem(atPath: ws["in/ff.m4a"])
        for n in ["ff.mp3", "mutagen.flac", "mutagen.ogg", "bwf.wav", "tone.wav", "chapters.txt"] { try FileManager.default.removeItem(atPath: ws["in/\(n)"]) }
        _ = try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nretries: 0\nstages:\n"
                             + "  - pitch: { tempo: 1.25 }\n"
                             + "  - encode: \"{stem}.mp3\"\n  - encode: \"{stem}.flac\"\n  - encode: \"{stem}.wav\"\n  - encode: \"{stem}.m4a\"\n"
                             + "  - chapters: \"{stem}.chapters.vtt\"\n  - chapters: \"{stem}.chapters.json\"\n  - chapters: { path: \"{stem}.psc\" }\n")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        // At 1.25× every time is divided by 1.25: 0, 2, 4.8 s; the last ends at 10 / 1.25 = 8 s.
        let want = Self.expected.map { ($0.0 / 1.25, $0.2) }
        for ext in ["mp3", "flac", "wav", "m4a"] {
            let got = try Self.probe(ws["out/mutagen.\(ext)"])
            #expect(Self.same(got, want, tolerance: 0.002), "\(ext): \(got)")
            #expect(abs((got.last?.1 ?? 0) - 8) < 0.03, "\(ext): the last chapter ends with the shortened stream: \(got)")
        }
        // The sidecars carry the same places: WebVTT cues, Podcasting 2.0 JSON, Podlove XML.
        let vtt = try String(contentsOfFile: ws["out/mutagen.chapters.vtt"], encoding: .utf8)
        #expect(vtt.hasPrefix("WEBVTT\n") && vtt.contains("00:00:02.000 --> 00:00:04.800\nZoë = talks; #2\n"), "\(vtt)")
        let json = try RunWorkspace.json(String(contentsOfFile: ws["out/mutagen.chapters.json"], encoding: .utf8))
        let items = json["chapters"] as? [[String: Any]] ?? []
        #expect(json["version"] as? String == "1.2.0" && items.map { ($0["startTime"] as? NSNumber)?.doubleValue ?? -1 } == [0, 2, 4.8], "\(json)")
        #expect(items.map { $0["title"] as? String ?? "" } == Self.expected.map(\.2), "\(json)")
        // find matches a chapter title and prints its time on the source's timeline (2.5 s, not 2 s).
        let find = try ws.segno(["find", "spec.yaml", "talks"])
        #expect(find.stdout.contains("00:00:02.500 chapter \"Zoë = talks; #2\""), "\(find.stdout)\(find.stderr)")
        let none = try ws.segno(["find", "spec.yaml", "nowhere"])
        #expect(!none.stdout.contains("chapter"), "\(none.stdout)")
        let psc = try String(contentsOfFile: ws["out/mutagen.psc"], encoding: .utf8)
        #expect(psc.contains("<psc:chapter start=\"00:00:04.800\" title=\"비 오는 날\"/>"), "\(psc)")
    }

    @Test func afterPausesChapterTimesFollowTheCutList() throws {
        let segno = try CLI.segnoPath()
        let engines = try CLI.run(segno, ["info", "--formats"]).stdout.split(separator: "\n").filter { $0.hasPrefix("pauses vad=webrtc:") }
        if engines.isEmpty || engines.contains(where: { $0.contains("not installed") }) { try Test.cancel("webrtc VAD not installed") }
        let ws = try RunWorkspace()
        try FileManager.default.createDirectory(atPath: ws["in"], withIntermediateDirectories: true)
        let memo = DemoSpec.repo.appendingPathComponent("pipelines/spoken/austen memo.flac").path
        // Chapters every 2.5 s, written into a copy of the memo by ffmpeg.
        let meta = ";FFMETADATA1\n" + (0..<6).map { "[CHAPTER]\nTIMEBASE=1/1000\nSTART=\($0 * 2500)\nEND=\($0 * 2500 + 2500)\ntitle=part \($0)\n" }.joined()
        try meta.write(toFile: ws["meta.txt"], atomically: true, encoding: .utf8)
        let ff = try CLI.tool("ffmpeg", ["-v", "error", "-y", "-i", memo, "-f", "ffmetadata", "-i", ws["meta.txt"], "-map", "0:a",
                                         "-map_chapters", "1", "-c:a", "libmp3lame", ws["in/memo.mp3"]])
        #expect(ff.status == 0, "\(ff.stderr)")
        _ = try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nretries: 0\nstages:\n"
                             + "  - pauses: { trim: true, shorten: { longer_than: 0.5s, to: 0.2s }, vad: webrtc }\n"
                             + "  - encode: \"{stem}.flac\"\n  - encode: \"{stem}.mp3\"\n")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        // The expected places, from the cut list's kept stretches by hand: inside a stretch,
        // output_start + (t − source_start); in a removed stretch, the next stretch's output_start.
        let list = try CutListFile(path: ws["out/memo.cuts.json"])
        let cuts = list.json, place = list.place
        #expect(list.kept.count > 1, "the memo has pauses to cut: \(cuts)")
        let sourceLength = list.sourceDuration, outputLength = list.outputDuration
        #expect(outputLength < sourceLength - 1, "\(cuts)")
        var want: [(Double, String)] = []
        for k in 0..<6 where Double(k) * 2.5 < sourceLength {
            let start = place(Double(k) * 2.5), end = place(min(Double(k + 1) * 2.5, sourceLength))
            if end > start, start < outputLength { want.append((start, "part \(k)")) }
        }
        #expect(want.count >= 3 && want.contains { $0.0 < Double(Int($0.1.last!.wholeNumberValue!)) * 2.5 - 0.5 }, "the cuts move chapters earlier: \(want)")
        for ext in ["flac", "mp3"] {
            let got = try Self.probe(ws["out/memo.\(ext)"])
            #expect(Self.same(got, want, tolerance: 0.002), "\(ext): \(got) want \(want)")
        }
    }

    @Test func hostileChapterDataFailsAlone() throws {
        let ws = try RunWorkspace()
        for d in ["in", "out"] { try FileManager.default.createDirectory(atPath: ws[d], withIntermediateDirectories: true) }
        _ = try Self.python(["hostile", ws["in"]])
        // 5000 CHAP frames: the first ChapterLimits.count (999) are kept, with a warning.
        let many = try ws.segno(["info", "--json", "in/many.mp3"])
        #expect(many.exited(0), "\(many.stderr)")
        let m = try RunWorkspace.json(many.stdout)
        #expect((m["chapters"] as? [Any])?.count == 999, "\((m["chapters"] as? [Any])?.count ?? -1)")
        #expect((m["tag_warnings"] as? [String] ?? []).contains { $0.contains("more than 999 chapters") }, "\(m["tag_warnings"] ?? "")")
        // CTOCs nested 600 deep, a CHAP ending before it starts and one past the end: the file
        // is read, the backwards one keeps its start, and converting writes only what fits.
        let nested = try ws.segno(["info", "--json", "in/nested.mp3"])
        #expect(nested.exited(0), "\(nested.stderr)")
        let n = try RunWorkspace.json(nested.stdout)
        let titles = (n["chapters"] as? [[String: Any]] ?? []).map { $0["title"] as? String ?? "" }
        #expect(titles == ["fine", "backwards", "far away"], "\(n)")
        #expect(try ws.segno(["convert", "in/nested.mp3", "out/nested.flac"]).exited(0))
        let kept = try Self.probe(ws["out/nested.flac"])
        #expect(kept.map(\.2) == ["fine", "backwards"] && kept.allSatisfy { $0.1 <= 1.01 }, "far away starts past the 1 s output: \(kept)")
        // A cue chunk claiming 2^32 − 1 points holds one; 10,000 real ones stop at 999.
        let cues = try RunWorkspace.json(try ws.segno(["info", "--json", "in/cues.wav"]).stdout)
        #expect((cues["markers"] as? [Any])?.count == 1, "\(cues)")
        #expect((cues["tag_warnings"] as? [String] ?? []).contains { $0.contains("claims 4294967295 points") }, "\(cues)")
        let manyCues = try RunWorkspace.json(try ws.segno(["info", "--json", "in/manycues.wav"]).stdout)
        #expect((manyCues["markers"] as? [Any])?.count == 999, "\((manyCues["markers"] as? [Any])?.count ?? -1)")
        // CHAPTER001 that is not a time is left out with a warning; CHAPTER002 is read.
        let bad = try RunWorkspace.json(try ws.segno(["info", "--json", "in/badtime.flac"]).stdout)
        #expect((bad["chapters"] as? [[String: Any]] ?? []).map { $0["title"] as? String ?? "" } == ["good"], "\(bad)")
        // A run over all of them: every file is encoded.
        _ = try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: run }\nretries: 0\nstages:\n  - encode: \"{stem}.mp3\"\n")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        for name in ["many", "nested", "cues", "manycues", "badtime", "short"] {
            #expect(FileManager.default.fileExists(atPath: ws["run/\(name).mp3"]), "\(name)")
        }
        #expect((try Self.probe(ws["run/many.mp3"])).count == 999)
        // A CTOC counts its children in one byte: 999 chapters go in four ordered sub-CTOCs under
        // the top-level one, and mutagen reads them all back in order.
        let id3 = try Self.python(["id3", ws["run/many.mp3"]]) as? [String: Any] ?? [:]
        let tocs = id3["toc"] as? [[String: Any]] ?? []
        let top = tocs.first { $0["top"] as? Bool == true }
        #expect(top?["children"] as? [String] == ["toc0", "toc1", "toc2", "toc3"], "\(tocs.map { $0["id"] ?? "" })")
        let named = ["toc0", "toc1", "toc2", "toc3"].flatMap { id in tocs.first { $0["id"] as? String == id }?["children"] as? [String] ?? [] }
        #expect(named == (0..<999).map { "chp\($0)" }, "\(named.count) chapters named")
    }
}

/// Issue 32: a capture of the test station whose title changes three times during one segment
/// yields three chapters named after them, in every output and the sidecar.
@Suite(.serialized, .enabled(if: StreamServers.isConfigured, "needs the local Icecast station (make test starts it)"))
struct StreamChaptersTests {
    @Test func eachTitleTheStationSentBecomesAChapter() throws {
        let dir = try TempDir()
        let mount = StreamServers.mount("chapters", "mp3")
        let feeder = try IcecastFeeder(mount: mount, codec: "mp3")
        defer { feeder.stop() }
        _ = try StreamServers.setTitle(mount, "Morning News")
        try "version: 1\ninput:\n  streams:\n    - { name: st, url: \"\(StreamServers.icecast)\(mount)\" }\n  record: { duration: 9s, segment: 9s, capture: \(dir["cap"]) }\n"
            .appending("output: { root: \(dir["out"]) }\nretries: 0\nstages:\n  - encode: \"{dir}/{stem}.mp3\"\n  - encode: \"{dir}/{stem}.flac\"\n  - chapters: \"{dir}/{stem}.chapters.json\"\n")
            .write(toFile: dir["spec.yaml"], atomically: true, encoding: .utf8)
        let run = try BackgroundRun(["run", dir["spec.yaml"]], environment: [:], in: dir)
        Thread.sleep(until: run.started.addingTimeInterval(3))
        _ = try StreamServers.setTitle(mount, "Weather")
        Thread.sleep(until: run.started.addingTimeInterval(6))
        _ = try StreamServers.setTitle(mount, "Traffic")
        let result = run.wait()
        #expect(result.status == 0, "\(result.stderr)")
        // The window may span more than one segment of the wall-clock grid: each segment's outputs
        // carry its own titles, at the offsets its cue sidecar gives.
        let segs = CapturedSegment.all(dir["cap"], station: "st")
        #expect(Set(segs.flatMap { $0.titles.map(\.title) }) == ["Morning News", "Weather", "Traffic"], "\(segs.map(\.titles))")
        var stem = ""
        for seg in segs {
            stem = (String(seg.path.dropFirst(dir["cap"].count + 1)) as NSString).deletingPathExtension
            for ext in ["mp3", "flac"] {
                let got = try ChaptersTests.probe(dir["out"] + "/\(stem).\(ext)")
                #expect(got.map(\.2) == seg.titles.map(\.title), "\(ext): \(got) for \(seg.titles)")
                #expect(zip(got, seg.titles).allSatisfy { abs($0.0 - $1.offset) <= 0.001 }, "\(ext): \(got) at \(seg.titles)")
            }
        }
        let json = try RunWorkspace.json(String(contentsOfFile: dir["out"] + "/\(stem).chapters.json", encoding: .utf8))
        #expect((json["chapters"] as? [[String: Any]] ?? []).count == segs.last?.titles.count, "\(json)")
    }
}
