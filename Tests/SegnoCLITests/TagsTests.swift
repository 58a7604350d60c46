import Foundation
import SegnoTestSupport
import Testing

/// Everything a recording carries: tags made by mutagen and ffmpeg (Tests/support/tags.py) are
/// read by `info`, `find` and the metadata tap, and written to every output format; mutagen,
/// wavinfo and ffprobe read the outputs back, never segno's own reader.
@Suite(.serialized) struct TagsTests {
    static let title = "비 오는 날 회의", artist = "Zoë Ångström", album = "Memos", comment = "call the dentist on Friday"
    static let helper = DemoSpec.repo.appendingPathComponent("Tests/support/tags.py").path

    /// Runs the helper and returns its JSON output (dump, bwf) or nothing (make).
    static func python(_ args: [String]) throws -> [String: Any] {
        let r = try CLI.tool("python3", [helper] + args)
        #expect(r.status == 0, "tags.py \(args): \(r.stderr)")
        guard !r.stdout.isEmpty else { return [:] }
        return try RunWorkspace.json(r.stdout)
    }

    static func tagged() throws -> RunWorkspace {
        let ws = try RunWorkspace()
        _ = try python(["make", ws["in"]])
        return ws
    }

    static func pictures(_ d: [String: Any]) -> [[String: Any]] { d["pictures"] as? [[String: Any]] ?? [] }

    @Test func infoShowsTagsWrittenByOtherToolsInEveryContainer() throws {
        let ws = try Self.tagged()
        for name in ["flac", "mp3", "m4a", "opus", "ogg", "wav"].map({ "in/tagged.\($0)" }) {
            let r = try ws.segno(["info", "--json", name])
            #expect(r.exited(0), "\(r.stderr)")
            let d = try RunWorkspace.json(r.stdout)
            let tags = d["tags"] as? [String: String] ?? [:]
            #expect(tags["title"] == Self.title && tags["artist"] == Self.artist && tags["comment"] == Self.comment, "\(name): \(tags)")
            #expect(tags["date"] == "2024-05-01", "\(name): \(tags)")
            #expect(!(d["raw_tags"] as? [Any] ?? []).isEmpty, "\(name)")
            let pictures = d["pictures"] as? [[String: Any]] ?? []
            if name.hasSuffix(".wav") {
                #expect((d["bext"] as? [String: Any])?["originator"] as? String == "ZOOM F8n")
                #expect((d["ixml"] as? String)?.contains("<SCENE>12</SCENE>") == true)
            } else {
                #expect(pictures.count == 1 && pictures.first?["mime"] as? String == "image/png", "\(name): \(pictures)")
            }
        }
    }

    @Test func convertCarriesTagsAndPicturesToEveryOutputFormat() throws {
        let ws = try Self.tagged()
        let source = try Self.python(["dump", ws["in/tagged.flac"]])
        let picture = Self.pictures(source).first
        #expect(picture?["size"] as? Int ?? 0 > 50)
        for ext in ["flac", "mp3", "opus", "ogg", "wav", "aiff", "m4a"] {
            let out = "out.\(ext)"
            let r = try ws.segno(["convert", "in/tagged.flac", out])
            #expect(r.exited(0), "\(ext): \(r.stderr)")
            let d = try Self.python(["dump", ws[out]])
            #expect(d["title"] as? String == Self.title && d["artist"] as? String == Self.artist, "\(ext): \(d)")
            #expect(d["album"] as? String == Self.album && d["comment"] as? String == Self.comment, "\(ext): \(d)")
            #expect((d["date"] as? String)?.hasPrefix("2024-05-01") == true, "\(ext): \(d)")
            let p = Self.pictures(d)
            #expect(p.count == 1 && p.first?["sha256"] as? String == picture?["sha256"] as? String, "\(ext): \(p)")
            if ["mp3", "wav", "aiff"].contains(ext) { #expect(d["id3_version"] as? String == "2.4", "\(ext)") }
        }
        // CAF: libsndfile's info chunk, read by ffprobe (mutagen has no CAF).
        #expect(try ws.segno(["convert", "in/tagged.mp3", "out.caf"]).exited(0))
        let probe = try CLI.tool("ffprobe", ["-v", "error", "-show_entries", "format_tags", "-of", "json", ws["out.caf"]])
        let tags = (try RunWorkspace.json(probe.stdout)["format"] as? [String: Any])?["tags"] as? [String: String] ?? [:]
        #expect(tags["title"] == Self.title && tags["artist"] == Self.artist, "\(tags)")
    }

    @Test func everySourceFormatReachesAFlacAndAnMP3() throws {
        let ws = try Self.tagged()
        for src in ["mp3", "m4a", "opus", "ogg", "wav"] {
            for ext in ["flac", "mp3"] {
                let out = "from-\(src).\(ext)"
                let r = try ws.segno(["convert", "in/tagged.\(src)", out])
                #expect(r.exited(0), "\(src)→\(ext): \(r.stderr)")
                let d = try Self.python(["dump", ws[out]])
                #expect(d["title"] as? String == Self.title && d["comment"] as? String == Self.comment, "\(src)→\(ext): \(d)")
                #expect(Self.pictures(d).count == (src == "wav" ? 0 : 1), "\(src)→\(ext)")
            }
        }
    }

    @Test func noTagsDropsThemAndTagSetsThemWithTemplates() throws {
        let ws = try Self.tagged()
        #expect(try ws.segno(["convert", "in/tagged.mp3", "bare.flac", "--no-tags"]).exited(0))
        let bare = try Self.python(["dump", ws["bare.flac"]])
        #expect(bare["title"] == nil && Self.pictures(bare).isEmpty, "\(bare)")
        let set = try ws.segno(["convert", "in/tagged.mp3", "set.mp3", "--tag", "title=Kim: {tag:album}", "--tag", "comment=", "--tag", "artist={title}"])
        #expect(set.exited(0), "\(set.stderr)")
        let d = try Self.python(["dump", ws["set.mp3"]])
        #expect(d["title"] as? String == "Kim: Memos", "\(d)")
        #expect(d["artist"] as? String == Self.title, "\(d)")
        #expect(d["comment"] == nil, "an empty --tag removes the tag: \(d)")
        #expect(Self.pictures(d).count == 1)
        let bad = try ws.segno(["convert", "in/tagged.mp3", "x.flac", "--tag", "no equals sign"])
        #expect(bad.exited(2), "\(bad.stderr)")
        #expect(bad.stderr.contains("--tag"), "\(bad.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws["x.flac"]))
    }

    @Test func broadcastWaveKeepsBextWithTheTimeReferenceScaledAndIXML() throws {
        let ws = try RunWorkspace()
        _ = try Self.python(["bwfmake", ws["take.wav"]])
        let src = try Self.python(["bwf", ws["take.wav"]])
        let r = try ws.segno(["convert", "take.wav", "take16.wav", "--rate", "16000"])
        #expect(r.exited(0), "\(r.stderr)")
        let out = try Self.python(["bwf", ws["take16.wav"]])
        #expect(out["sample_rate"] as? Int == 16000)
        for key in ["description", "originator", "originator_reference", "date", "time"] {
            #expect(out[key] as? String == src[key] as? String, "\(key): \(out[key] ?? "nil")")
        }
        #expect(src["time_reference"] as? Int == 1_728_000_123)
        // 1,728,000,123 samples at 48 kHz = 576,000,041 at 16 kHz (rounded to the nearest sample).
        #expect(out["time_reference"] as? Int == 576_000_041, "\(out["time_reference"] ?? "nil")")
        #expect((out["coding_history"] as? String)?.hasPrefix("A=PCM,F=48000,W=16,M=mono,T=ZOOM F8n") == true)
        // iXML: byte for byte but for the rate-dependent elements.
        let a = src["ixml"] as? String ?? "", b = out["ixml"] as? String ?? ""
        let expected = a.replacingOccurrences(of: "<FILE_SAMPLE_RATE>48000<", with: "<FILE_SAMPLE_RATE>16000<")
            .replacingOccurrences(of: "<BWF_TIME_REFERENCE_LOW>1728000123<", with: "<BWF_TIME_REFERENCE_LOW>576000041<")
        #expect(a != expected && b == expected, "\(b)")
        // Without a rate change the iXML is identical, and so is the time reference.
        #expect(try ws.segno(["convert", "take.wav", "take24.wav", "--bits", "24"]).exited(0))
        let same = try Self.python(["bwf", ws["take24.wav"]])
        #expect(same["ixml"] as? String == a && same["time_reference"] as? Int == 1_728_000_123)
        // ffprobe (another reader) sees the INFO title and the bext fields.
        let probe = try CLI.tool("ffprobe", ["-v", "error", "-show_entries", "format_tags", "-of", "json", ws["take16.wav"]])
        let tags = (try RunWorkspace.json(probe.stdout)["format"] as? [String: Any])?["tags"] as? [String: String] ?? [:]
        #expect(tags["title"] == Self.title && tags["time_reference"] == "576000041", "\(tags)")
    }

    @Test func aRunCarriesTagsSearchesThemAndReRunsTheEncodeWhenSetChanges() throws {
        let ws = try Self.tagged()
        for f in ["tone.wav", "tagged.ogg", "tagged.opus"] { try FileManager.default.removeItem(atPath: ws["in/" + f]) }
        for ext in ["flac", "mp3", "m4a", "wav"] { try FileManager.default.moveItem(atPath: ws["in/tagged.\(ext)"], toPath: ws["in/\(ext)-memo.\(ext)"]) }
        func spec(_ comment: String) -> String {
            RunTests.spec(stages: ["encode: { path: \"{stem}.flac\", set: { comment: \"\(comment)\" } }",
                                   "encode: { path: \"mp3/{stem}.mp3\" }",
                                   "metadata: { path: \"{stem}.json\" }"])
        }
        try ws.writeSpec(spec("processed {tag:album}"))
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        for ext in ["flac", "mp3", "m4a", "wav"] {
            let flac = try Self.python(["dump", ws["out/\(ext)-memo.flac"]])
            #expect(flac["title"] as? String == Self.title, "\(ext): \(flac)")
            #expect(flac["comment"] as? String == (ext == "wav" ? "processed " : "processed Memos"), "\(ext): \(flac)")
            let mp3 = try Self.python(["dump", ws["out/mp3/\(ext)-memo.mp3"]])
            #expect(mp3["comment"] as? String == Self.comment && Self.pictures(mp3).count == (ext == "wav" ? 0 : 1), "\(ext): \(mp3)")
        }
        // The metadata tap: the tags and the picture's description.
        let meta = try RunWorkspace.json(String(contentsOfFile: ws["out/m4a-memo.json"], encoding: .utf8))
        #expect((meta["tags"] as? [String: String])?["artist"] == Self.artist)
        #expect((meta["pictures"] as? [[String: Any]])?.first?["mime"] as? String == "image/png")
        #expect(meta["title"] as? String == Self.title)
        // find: title, artist (accents either way), comment words.
        let find = try ws.segno(["find", "spec.yaml", "회의", "--json"])
        #expect(find.exited(0), "\(find.stderr)")
        #expect((try RunWorkspace.json(find.stdout)["results"] as? [Any])?.count == 4, "\(find.stdout)")
        let byArtist = try ws.segno(["find", "spec.yaml", "angstrom", "dentist", "--json"])
        #expect((try RunWorkspace.json(byArtist.stdout)["results"] as? [Any])?.count == 4, "\(byArtist.stdout)")
        // Changing a set value re-runs that encode only; the MP3s and sidecars stay.
        let before = try RunWorkspace.stamps(ws["out"])
        try ws.writeSpec(spec("checked"))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        let after = try RunWorkspace.stamps(ws["out"])
        #expect(before["mp3/m4a-memo.mp3"] == after["mp3/m4a-memo.mp3"] && before["m4a-memo.json"] == after["m4a-memo.json"])
        #expect(before["m4a-memo.flac"] != after["m4a-memo.flac"])
        #expect(try Self.python(["dump", ws["out/m4a-memo.flac"]])["comment"] as? String == "checked")
    }

    @Test func damagedTagsWarnOnceNamingTheFileAndTheTagAndTheAudioIsStillConverted() throws {
        let ws = try Self.tagged()
        _ = try Self.python(["damaged", ws["in"]])
        let cases: [(file: String, warning: String?, title: String?)] = [
            ("bad-utf8.flac", "Vorbis comment TITLE is not valid UTF-8", "\u{FFFD}\u{FFFD}\u{FFFD} 오는 날 회의"),
            ("huge-picture.mp3", "picture of 52428802 bytes is over", Self.title),
            ("bad-frame.mp3", "ID3v2 tag is damaged", nil),
            ("duplicate-keys.flac", nil, "one"),
            ("list-past-end.wav", "LIST chunk claims 1073741824 bytes, past the end of the file", Self.title),
        ]
        for c in cases {
            let r = try ws.segno(["convert", "in/" + c.file, c.file + ".mp3"])
            #expect(r.exited(0), "\(c.file): \(r.stderr)")
            let lines = r.stderr.split(separator: "\n")
            if let w = c.warning {
                #expect(lines.count == 1 && lines[0].contains(c.file) && lines[0].contains(w), "\(c.file): \(r.stderr)")
            } else {
                #expect(lines.isEmpty, "\(c.file): \(r.stderr)")
            }
            let d = try Self.python(["dump", ws[c.file + ".mp3"]])
            #expect(d["title"] as? String == c.title, "\(c.file): \(d)")
            let frames = try ws.segno(["info", "--json", c.file + ".mp3"])
            #expect(try RunWorkspace.json(frames.stdout)["frames"] as? Int == 48000, "\(c.file)")
        }
        // The big picture is left out; the small one is kept.
        #expect(Self.pictures(try Self.python(["dump", ws["huge-picture.mp3.mp3"]])).count == 1)
    }

    @Test func aiffCafRF64AndMetaflacTagsAreReadAndCarried() throws {
        let ws = try RunWorkspace()
        _ = try Self.python(["others", ws["in"]])
        for name in ["other.aiff", "other.caf", "other-rf64.wav", "metaflac.flac"] {
            let r = try ws.segno(["info", "--json", "in/" + name])
            let tags = try RunWorkspace.json(r.stdout)["tags"] as? [String: String] ?? [:]
            #expect(tags["title"] == Self.title && tags["artist"] == Self.artist, "\(name): \(r.stdout)")
            let out = name + ".mp3"
            #expect(try ws.segno(["convert", "in/" + name, out]).exited(0))
            let d = try Self.python(["dump", ws[out]])
            #expect(d["title"] as? String == Self.title, "\(name): \(d)")
            #expect(Self.pictures(d).count == (name == "metaflac.flac" ? 1 : 0), "\(name)")
        }
        // RF64 to RF64 keeps bext (wavinfo reads RF64); the time reference is unchanged at one rate.
        #expect(try ws.segno(["convert", "in/other-rf64.wav", "copy.rf64"]).exited(0))
        let b = try Self.python(["bwf", ws["copy.rf64"]])
        #expect(b["originator"] as? String == "ZOOM F8n" && b["time_reference"] as? Int == 96000, "\(b)")
    }
}
