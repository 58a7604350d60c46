import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Issue 32 item 1's remainder through the command line: QuickTime chapter tracks (ffmpeg with
/// `disable_chpl`, M4A and MOV), Matroska and WebM chapters (ffmpeg `-map_chapters`) and a BWF's
/// iXML sync points (Tests/support/chapters.py, built byte by byte) are shown by `info --json` as
/// ffprobe `-show_chapters` reads them, and survive `convert` into every format with chapters,
/// read back by ffprobe.
@Suite(.serialized) struct ChapterContainersCLITests {
    /// The iXML BWF's markers: the cue point (its iXML twin at the same sample is not doubled), a
    /// RELATIVE point at 2.5 s, an ABSOLUTE one 6.5 s after the `bext` time reference; the
    /// GROUP_OFFSET point is left out.
    static let ixmlMarkers: [(Double, String)] = [(0.5, "clap"), (2.5, "Take 2 & écho"), (6.5, "SLATE_CLAP")]

    static func made() throws -> RunWorkspace {
        let ws = try RunWorkspace()
        try FileManager.default.createDirectory(atPath: ws["out"], withIntermediateDirectories: true)
        _ = try ChaptersTests.python(["containers", ws["in"]])
        return ws
    }

    static func chapters(_ d: [String: Any], _ key: String = "chapters") -> [(Double, Double, String)] {
        (d[key] as? [[String: Any]] ?? []).map {
            (($0["start"] as? NSNumber)?.doubleValue ?? -1, ($0["end"] as? NSNumber)?.doubleValue ?? -1, $0["title"] as? String ?? "")
        }
    }

    @Test func infoShowsChapterTracksMatroskaChaptersAndIXMLMarkersAsFFprobeReadsThem() throws {
        let ws = try Self.made()
        for name in ["track.m4a", "track.mov", "ff.mka", "ff.webm"] {
            let r = try ws.segno(["info", "--json", "in/\(name)"])
            #expect(r.exited(0), "\(name): \(r.stderr)")
            let got = Self.chapters(try RunWorkspace.json(r.stdout))
            let want = try ChaptersTests.probe(ws["in/\(name)"])
            #expect(want.count == 3, "\(name): ffprobe reads \(want)")
            #expect(got.count == want.count && zip(got, want).allSatisfy { abs($0.0 - $1.0) < 0.001 && abs($0.1 - $1.1) < 0.001 && $0.2 == $1.2 },
                    "\(name): segno \(got), ffprobe \(want)")
            let text = try ws.segno(["info", "in/\(name)"])
            #expect(text.stdout.contains("\"Zoë = talks; #2\""), "\(name): \(text.stdout)")
        }
        let r = try ws.segno(["info", "--json", "in/ixml.wav"])
        let d = try RunWorkspace.json(r.stdout)
        let markers = Self.chapters(d, "markers")
        #expect(markers.map(\.2) == Self.ixmlMarkers.map(\.1), "\(d)")
        #expect(zip(markers, Self.ixmlMarkers).allSatisfy { abs($0.0 - $1.0) < 1e-9 }, "\(markers)")
        #expect((d["tag_warnings"] as? [String] ?? []).isEmpty, "\(d)")
    }

    @Test func convertCarriesTheirChaptersAndMarkersIntoEveryFormat() throws {
        let ws = try Self.made()
        // What each source holds, as ffprobe reads it (the chapter tracks start at 0; Matroska
        // keeps 0.5 s), and the iXML BWF's markers as chapters.
        var sources: [(String, [(Double, String)])] = []
        for name in ["track.m4a", "ff.mka", "ff.webm"] { sources.append((name, try ChaptersTests.probe(ws["in/\(name)"]).map { ($0.0, $0.2) })) }
        sources.append(("ixml.wav", Self.ixmlMarkers))
        for (src, want) in sources {
            for ext in ["flac", "mp3", "opus", "wav", "m4a"] {
                let out = "out/\(src)-\(ext).\(ext)"
                let r = try ws.segno(["convert", "in/\(src)", out])
                #expect(r.exited(0), "\(src)→\(ext): \(r.stderr)")
                let got = try ChaptersTests.probe(ws[out])
                // In an M4A ffprobe reads the chapter track, whose first chapter begins at 0.
                let expected: [(Double, String)] = ext == "m4a" ? [(0.0, want[0].1)] + Array(want.dropFirst()) : want
                #expect(ChaptersTests.same(got, expected, tolerance: 0.001), "\(src)→\(ext): \(got), want \(expected)")
            }
        }
        // Back through segno: the WAV written from the iXML BWF holds the three markers once each
        // (its cue points, and the iXML carried beside them at the same samples).
        let back = try RunWorkspace.json(try ws.segno(["info", "--json", "out/ixml.wav-wav.wav"]).stdout)
        #expect(Self.chapters(back, "markers").map(\.2) == Self.ixmlMarkers.map(\.1), "\(back)")
        // A resample rescales the cue points and the iXML sync points alike: still once each.
        #expect(try ws.segno(["convert", "in/ixml.wav", "out/16k.wav", "--rate", "16000"]).exited(0))
        let low = try RunWorkspace.json(try ws.segno(["info", "--json", "out/16k.wav"]).stdout)
        let lowMarkers = Self.chapters(low, "markers")
        #expect(lowMarkers.map(\.2) == Self.ixmlMarkers.map(\.1), "\(low)")
        #expect(zip(lowMarkers, Self.ixmlMarkers).allSatisfy { abs($0.0 - $1.0) < 1e-9 }, "\(lowMarkers)")
    }
}
