import Foundation
@testable import SegnoAudio
@testable import SegnoCore
import SegnoCoreTestSupport
import Testing

/// Issue 32 item 1's remainder: QuickTime chapter tracks, Matroska/WebM chapters and iXML sync
/// points, read from files ffmpeg wrote (compared with ffprobe `-show_chapters`, an independent
/// reader) and from BWF and Matroska files built byte by byte here; and the hostile variants of
/// each, which must give warnings and bounded results, never a crash.
@Suite struct ChapterContainersTests {
    static let meta = ";FFMETADATA1\n" + [(500, 2500, "Intro"), (2500, 6000, "Zoë = talks; #2"), (6000, 10000, "비 오는 날")]
        .map { "[CHAPTER]\nTIMEBASE=1/1000\nSTART=\($0.0)\nEND=\($0.1)\ntitle=\($0.2)\n" }.joined()
    static let titles = ["Intro", "Zoë = talks; #2", "비 오는 날"]

    /// A 10 s tone with the three chapters, written by ffmpeg with `args` into `name`.
    static func ffmpeg(_ dir: TempDir, _ name: String, _ args: [String]) throws -> String {
        try meta.write(toFile: dir["meta.txt"], atomically: true, encoding: .utf8)
        let r = try ProcessRunner.tool("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=10:r=48000", "-f", "ffmetadata", "-i", dir["meta.txt"],
                                                  "-map", "0:a", "-map_chapters", "1"] + args + [dir[name]])
        #expect(r.status == 0, "\(r.stderr)")
        return dir[name]
    }

    /// ffprobe's chapters: start, end, title.
    static func probe(_ path: String) throws -> [Chapter] {
        let r = try ProcessRunner.tool("ffprobe", ["-v", "error", "-show_chapters", "-of", "json", path])
        let d = try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any] ?? [:]
        return (d["chapters"] as? [[String: Any]] ?? []).map {
            Chapter(start: Double($0["start_time"] as? String ?? "") ?? -1, end: Double($0["end_time"] as? String ?? ""),
                    title: ($0["tags"] as? [String: Any])?["title"] as? String ?? "")
        }
    }

    static func same(_ a: [Chapter], _ b: [Chapter]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy {
            abs($0.start - $1.start) < 0.001 && abs(($0.end ?? -1) - ($1.end ?? -1)) < 0.001 && $0.title == $1.title
        }
    }

    // MARK: QuickTime chapter tracks

    @Test func aQuickTimeChapterTrackIsReadAsFFprobeReadsIt() throws {
        let dir = try TempDir()
        // Without `chpl` (disable_chpl), the text track is all there is: M4A and MOV.
        for (name, codec) in [("track.m4a", "aac"), ("track.mov", "aac"), ("alac.m4a", "alac")] {
            let path = try Self.ffmpeg(dir, name, ["-c:a", codec, "-movflags", "+disable_chpl"])
            let m = TagReader.read(path: path)
            let want = try Self.probe(path)
            #expect(want.map(\.title) == Self.titles, "\(name): ffprobe reads \(want)")
            #expect(Self.same(m.chapterList.chapters, want), "\(name): \(m.chapterList.chapters) vs ffprobe \(want)")
            #expect(m.warnings.isEmpty, "\(name): \(m.warnings)")
        }
    }

    @Test func withBothFormsTheChplWinsAndNothingIsDoubled() throws {
        let dir = try TempDir()
        let path = try Self.ffmpeg(dir, "both.m4a", ["-c:a", "aac"])
        let chapters = TagReader.read(path: path).chapterList.chapters
        // The chpl keeps the first chapter's true start (0.5 s); the track starts its first sample at 0.
        #expect(chapters.map(\.title) == Self.titles, "\(chapters)")
        #expect(chapters.map(\.start) == [0.5, 2.5, 6.0], "\(chapters)")
    }

    @Test func utf16TitlesAreDecodedByTheirByteOrderMark() {
        let big: [UInt8] = [0, 6, 0xFE, 0xFF, 0x00, 0x5A, 0x00, 0xEB]
        let little: [UInt8] = [0, 6, 0xFF, 0xFE, 0x5A, 0x00, 0xEB, 0x00, 0, 0, 0, 12]
        #expect(MP4ChapterTrack.text(big) == "Zë")
        #expect(MP4ChapterTrack.text(little) == "Zë")
        #expect(MP4ChapterTrack.text([0, 200, 0x41, 0x42]) == "AB", "a length past the sample is cut to it")
        #expect(MP4ChapterTrack.text([0]) == "")
    }

    /// The chapter track's sample tables (the second track's) patched in a copy of `source`.
    static func patched(_ source: String, _ dir: TempDir, _ name: String, _ edit: (inout [UInt8], _ chapterTrack: Int) -> Void) throws -> String {
        var b = try [UInt8](Data(contentsOf: URL(fileURLWithPath: source)))
        let tref = try #require(find("tref", in: b, from: 0))
        let second = try #require(find("trak", in: b, from: tref))
        edit(&b, second)
        try Data(b).write(to: URL(fileURLWithPath: dir[name]))
        return dir[name]
    }

    static func find(_ type: String, in b: [UInt8], from: Int) -> Int? {
        let t = Array(type.utf8)
        return (from..<(b.count - 4)).first { b[$0] == t[0] && Array(b[$0..<($0 + 4)]) == t }
    }

    static func put32(_ b: inout [UInt8], _ at: Int, _ v: UInt32) {
        for k in 0..<4 { b[at + k] = UInt8(truncatingIfNeeded: v >> (24 - 8 * k)) }
    }

    @Test func hostileChapterTracksGiveWarningsNotCrashes() throws {
        let dir = try TempDir()
        let src = try Self.ffmpeg(dir, "track.m4a", ["-c:a", "aac", "-movflags", "+disable_chpl"])
        // Counts claiming 2^32 − 1 entries in every table: read as far as the boxes hold.
        let counts = try Self.patched(src, dir, "counts.m4a") { b, t in
            for box in ["stts", "stsz", "stsc", "stco"] { Self.put32(&b, Self.find(box, in: b, from: t)! + (box == "stsz" ? 12 : 8), .max) }
        }
        var m = TagReader.read(path: counts)
        #expect(m.chapterList.chapters.isEmpty || m.chapterList.chapters.count <= 3, "\(m.chapterList.chapters)")
        #expect(!m.warnings.isEmpty, "tables past their boxes are named")
        // A chunk offset past the end of the file: a warning, no chapter.
        let far = try Self.patched(src, dir, "far.m4a") { b, t in Self.put32(&b, Self.find("stco", in: b, from: t)! + 12, 0x7FFF_0000) }
        m = TagReader.read(path: far)
        #expect(m.chapterList.chapters.isEmpty && m.warnings.contains { $0.contains("past the end of the file") }, "\(m.warnings)")
        // A sample claiming 4 GiB: only `sampleBytes` are read, and the title is cut to what is there.
        let huge = try Self.patched(src, dir, "huge.m4a") { b, t in Self.put32(&b, Self.find("stsz", in: b, from: t)! + 16, .max) }
        m = TagReader.read(path: huge)
        #expect(m.chapterList.chapters.first.map { $0.title.hasPrefix("Intro") && $0.title.utf8.count <= ChapterLimits.titleBytes } ?? true, "\(m.chapterList.chapters)")
        // A timescale of 0: named, not divided by.
        let zero = try Self.patched(src, dir, "zero.m4a") { b, t in
            let mdhd = Self.find("mdhd", in: b, from: t)!
            Self.put32(&b, mdhd + 4 + 12, 0)
        }
        m = TagReader.read(path: zero)
        #expect(m.chapterList.chapters.isEmpty && m.warnings.contains { $0.contains("timescale") }, "\(m.warnings)")
        // Cut inside the chapter samples (they follow the audio in ffmpeg's layout: the moov is last,
        // so cut the moov's tail instead): nothing past the cut is read, and the reader returns.
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: src)))
        for cut in stride(from: bytes.count - 1, to: bytes.count - 700, by: -37) {
            try Data(bytes[0..<cut]).write(to: URL(fileURLWithPath: dir["cut.m4a"]))
            _ = TagReader.read(path: dir["cut.m4a"])
        }
    }

    // MARK: Matroska

    @Test func matroskaAndWebMChaptersAreReadAsFFprobeReadsThem() throws {
        let dir = try TempDir()
        for (name, codec) in [("t.mka", "flac"), ("t.webm", "libopus"), ("t.mkv", "pcm_s16le")] {
            let path = try Self.ffmpeg(dir, name, ["-c:a", codec])
            let m = TagReader.read(path: path)
            let want = try Self.probe(path)
            #expect(want.map(\.title) == Self.titles && want.first?.start == 0.5, "\(name): ffprobe reads \(want)")
            #expect(Self.same(m.chapterList.chapters, want), "\(name): \(m.chapterList.chapters) vs ffprobe \(want)")
            #expect(m.warnings.isEmpty, "\(name): \(m.warnings)")
        }
    }

    /// An EBML element: id bytes, an 8-byte size, the body.
    static func el(_ id: [UInt8], _ body: [UInt8]) -> [UInt8] {
        let n = UInt64(body.count)
        return id + [0x01] + (0..<7).map { UInt8(truncatingIfNeeded: n >> (8 * (6 - UInt64($0)))) } + body
    }
    static func uint(_ id: [UInt8], _ v: UInt64) -> [UInt8] { el(id, (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * (7 - UInt64($0)))) }) }
    static func atom(_ startNs: UInt64, _ title: String, hidden: Bool = false, extra: [UInt8] = []) -> [UInt8] {
        el([0xB6], uint([0x73, 0xC4], startNs + 1) + uint([0x91], startNs) + (hidden ? uint([0x98], 1) : [])
           + el([0x80], el([0x85], Array(title.utf8)) + el([0x43, 0x7C], Array("eng".utf8))) + extra)
    }
    /// A Matroska file of an EBML header and a segment holding `chapters` (no audio: only chapters are read).
    static func matroska(_ chapters: [UInt8], segmentSize: [UInt8]? = nil) -> [UInt8] {
        let head = el([0x1A, 0x45, 0xDF, 0xA3], el([0x42, 0x82], Array("matroska".utf8)))
        let body = el([0x10, 0x43, 0xA7, 0x70], chapters)
        if let segmentSize { return head + [0x18, 0x53, 0x80, 0x67] + segmentSize + body }
        return head + el([0x18, 0x53, 0x80, 0x67], body)
    }

    @Test func theDefaultEditionIsReadWithoutHiddenOrNestedChapters() throws {
        let dir = try TempDir()
        let first = Self.el([0x45, 0xB9], Self.atom(0, "other edition"))
        let second = Self.el([0x45, 0xB9], Self.uint([0x45, 0xDB], 1) + Self.atom(1_000_000_000, "one", extra: Self.atom(1_500_000_000, "nested"))
                        + Self.atom(2_000_000_000, "hidden", hidden: true) + Self.atom(3_250_000_000, "two"))
        // An unknown-size segment (a live WebM's), as a recorder that stopped writes it.
        try Data(Self.matroska(first + second, segmentSize: [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])).write(to: URL(fileURLWithPath: dir["e.mka"]))
        #expect(ContentSniffer.sniff(path: dir["e.mka"]) == .matroska)
        let m = TagReader.read(path: dir["e.mka"])
        #expect(m.chapterList.chapters.map(\.title) == ["one", "two"], "\(m.chapterList.chapters)")
        #expect(m.chapterList.chapters.map(\.start) == [1, 3.25])
    }

    @Test func hostileMatroskaChaptersGiveWarningsNotCrashes() throws {
        let dir = try TempDir()
        func read(_ bytes: [UInt8]) throws -> RecordingMetadata {
            try Data(bytes).write(to: URL(fileURLWithPath: dir["h.mka"]))
            return TagReader.read(path: dir["h.mka"])
        }
        // 5,000 chapters: the first ChapterLimits.count are kept, with one warning.
        let many = Self.el([0x45, 0xB9], (0..<5000).flatMap { Self.atom(UInt64($0) * 1_000_000, "c\($0)") })
        var m = try read(Self.matroska(many))
        #expect(m.chapterList.chapters.count == ChapterLimits.count)
        #expect(m.warnings.contains { $0.contains("more than \(ChapterLimits.count) chapters") }, "\(m.warnings)")
        // A Chapters element claiming 2^56 − 2 bytes (past the end, over the limit).
        let good = Self.matroska(Self.el([0x45, 0xB9], Self.atom(0, "a") + Self.atom(1_000_000_000, "b")))
        var big = good
        let at = try #require((0..<(big.count - 4)).first { Array(big[$0..<($0 + 4)]) == [0x10, 0x43, 0xA7, 0x70] })
        big.replaceSubrange((at + 4)..<(at + 12), with: [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE])
        m = try read(big)
        #expect(m.chapterList.chapters.isEmpty && m.warnings.contains { $0.contains("Chapters element of") }, "\(m.warnings)")
        // An atom claiming more than its edition holds: the chapters before it are kept.
        var inner = Self.atom(0, "a") + Self.atom(1_000_000_000, "b")
        let second = Self.atom(0, "a").count
        inner[second + 8] = 0x7F
        m = try read(Self.matroska(Self.el([0x45, 0xB9], inner)))
        #expect(m.chapterList.chapters.map(\.title) == ["a"] && m.warnings.contains { $0.contains("damaged") }, "\(m.chapterList.chapters) \(m.warnings)")
        // Cut at every byte: never a crash, never more than the two chapters.
        for cut in 1..<good.count {
            m = try read(Array(good[0..<cut]))
            #expect(m.chapterList.chapters.count <= 2)
        }
        // Ids and sizes with no length marker (a zero first byte).
        m = try read([0x1A, 0x45, 0xDF, 0xA3, 0x80, 0x18, 0x53, 0x80, 0x67, 0x00, 0x00, 0x00])
        #expect(m.chapterList.isEmpty)
    }

    // MARK: iXML sync points

    /// A RIFF chunk (id, little-endian size, body, pad byte).
    static func chunk(_ id: String, _ body: [UInt8]) -> [UInt8] {
        let n = UInt32(body.count)
        return Array(id.utf8) + (0..<4).map { UInt8(truncatingIfNeeded: n >> (8 * UInt32($0))) } + body + (body.count % 2 == 1 ? [0] : [])
    }
    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }

    static func syncPoint(_ type: String, _ function: String, _ comment: String?, _ sample: UInt64) -> String {
        "<SYNC_POINT><SYNC_POINT_TYPE>\(type)</SYNC_POINT_TYPE><SYNC_POINT_FUNCTION>\(function)</SYNC_POINT_FUNCTION>"
            + (comment.map { "<SYNC_POINT_COMMENT>\($0)</SYNC_POINT_COMMENT>" } ?? "")
            + "<SYNC_POINT_LOW>\(sample & 0xFFFF_FFFF)</SYNC_POINT_LOW><SYNC_POINT_HIGH>\(sample >> 32)</SYNC_POINT_HIGH>"
            + "<SYNC_POINT_EVENT_DURATION>0</SYNC_POINT_EVENT_DURATION></SYNC_POINT>"
    }

    /// A 48 kHz mono 16-bit BWF of 10 s of silence: `bext` with a time reference (one hour after
    /// midnight) when `reference`, a `cue ` point "clap" at sample 24000, and `ixml`.
    static func bwf(ixml: String, reference: UInt64? = 172_800_000) -> [UInt8] {
        let fmt = chunk("fmt ", [1, 0, 1, 0] + le32(48000) + le32(96000) + [2, 0, 16, 0])
        var bext = [UInt8](repeating: 0, count: 602)
        if let reference { bext.replaceSubrange(338..<346, with: le32(UInt32(reference & 0xFFFF_FFFF)) + le32(UInt32(reference >> 32))) }
        let cue = chunk("cue ", le32(1) + le32(1) + le32(24000) + Array("data".utf8) + le32(0) + le32(0) + le32(24000))
        let adtl = chunk("LIST", Array("adtl".utf8) + chunk("labl", le32(1) + Array("clap\0".utf8)))
        let data = chunk("data", [UInt8](repeating: 0, count: 960_000))
        let body = Array("WAVE".utf8) + fmt + (reference == nil ? [] : chunk("bext", bext)) + chunk("iXML", Array(ixml.utf8)) + cue + adtl + data
        return Array("RIFF".utf8) + le32(UInt32(body.count)) + body
    }

    static func ixml(_ points: [String]) -> String {
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><BWFXML><IXML_VERSION>2.10</IXML_VERSION><SYNC_POINT_LIST><SYNC_POINT_COUNT>\(points.count)</SYNC_POINT_COUNT>"
            + points.joined() + "</SYNC_POINT_LIST></BWFXML>"
    }

    @Test func iXMLSyncPointsAreMarkersBesideTheCuePoints() throws {
        let dir = try TempDir()
        let points = [
            Self.syncPoint("RELATIVE", "SLATE_GENERIC", "clap again", 24000),               // the cue point's sample: not doubled
            Self.syncPoint("RELATIVE", "MARKER_GENERIC", "Take 2 &amp; &#233;cho", 120_000), // 2.5 s, entities decoded
            Self.syncPoint("ABSOLUTE", "SLATE_CLAP", nil, 172_800_000 + 312_000),            // 6.5 s after the file's start
            Self.syncPoint("RELATIVE", "GROUP_OFFSET", "other recorder", 48000),             // not a place in this file
            Self.syncPoint("RELATIVE", "MARKER_GENERIC", "past 2^32", (1 << 32) + 48000),    // both halves count
        ]
        try Data(Self.bwf(ixml: Self.ixml(points))).write(to: URL(fileURLWithPath: dir["take.wav"]))
        let m = TagReader.read(path: dir["take.wav"])
        #expect(m.chapterList.markers.map(\.title) == ["clap", "Take 2 & écho", "SLATE_CLAP", "past 2^32"], "\(m.chapterList.markers)")
        #expect(m.chapterList.markers.map(\.start) == [0.5, 2.5, 6.5, Double((1 << 32) + 48000) / 48000], "\(m.chapterList.markers)")
        #expect(m.warnings.isEmpty, "\(m.warnings)")
        // The iXML itself still travels byte for byte.
        #expect(m.ixml.map { String(decoding: $0, as: UTF8.self) } == Self.ixml(points))
    }

    @Test func anAbsoluteSyncPointUsesIXMLsOwnTimestampWithoutBext() throws {
        let dir = try TempDir()
        let xml = Self.ixml([Self.syncPoint("ABSOLUTE", "MARKER_GENERIC", "mark", 1000 + 96000)])
            .replacingOccurrences(of: "</BWFXML>", with: "<SPEED><TIMESTAMP_SAMPLES_SINCE_MIDNIGHT_HI>0</TIMESTAMP_SAMPLES_SINCE_MIDNIGHT_HI><TIMESTAMP_SAMPLES_SINCE_MIDNIGHT_LO>1000</TIMESTAMP_SAMPLES_SINCE_MIDNIGHT_LO></SPEED></BWFXML>")
        try Data(Self.bwf(ixml: xml, reference: nil)).write(to: URL(fileURLWithPath: dir["t.wav"]))
        let m = TagReader.read(path: dir["t.wav"])
        #expect(m.chapterList.markers.map(\.title) == ["clap", "mark"] && m.chapterList.markers.last?.start == 2, "\(m.chapterList.markers) \(m.warnings)")
    }

    @Test func aResampleRescalesEverySyncPointWithTheTimeReference() {
        let xml = Array(("<BWFXML><BEXT><BWF_TIME_REFERENCE_HIGH>0</BWF_TIME_REFERENCE_HIGH><BWF_TIME_REFERENCE_LOW>4800</BWF_TIME_REFERENCE_LOW></BEXT>"
            + "<SYNC_POINT_LIST>" + Self.syncPoint("RELATIVE", "MARKER_GENERIC", "a", 24001) + Self.syncPoint("RELATIVE", "MARKER_GENERIC", "b", (1 << 32) + 3)
            + "<SYNC_POINT><SYNC_POINT_TYPE>RELATIVE</SYNC_POINT_TYPE><SYNC_POINT_LOW>300</SYNC_POINT_LOW></SYNC_POINT></SYNC_POINT_LIST></BWFXML>").utf8)
        let out = String(decoding: IXMLRate.adjusted(xml, from: 48000, to: 16000), as: UTF8.self)
        // By hand: 4800 → 1600; 24001 / 3 = 8000.33 → 8000; (2^32 + 3) / 3 = 1431655766.33 →
        // 1431655766, whose high half is 0; 300 → 100, with no high element added.
        #expect(out.contains("<BWF_TIME_REFERENCE_LOW>1600</BWF_TIME_REFERENCE_LOW>"), "\(out)")
        #expect(out.contains("<SYNC_POINT_LOW>8000</SYNC_POINT_LOW><SYNC_POINT_HIGH>0</SYNC_POINT_HIGH>"), "\(out)")
        #expect(out.contains("<SYNC_POINT_LOW>1431655766</SYNC_POINT_LOW><SYNC_POINT_HIGH>0</SYNC_POINT_HIGH>"), "\(out)")
        #expect(out.contains("<SYNC_POINT_LOW>100</SYNC_POINT_LOW></SYNC_POINT>"), "\(out)")
        #expect(IXMLRate.adjusted(xml, from: 48000, to: 48000) == xml)
    }

    @Test func hostileIXMLSyncPointsGiveWarningsNotCrashes() throws {
        let dir = try TempDir()
        func read(_ xml: String, reference: UInt64? = 172_800_000) throws -> RecordingMetadata {
            try Data(Self.bwf(ixml: xml, reference: reference)).write(to: URL(fileURLWithPath: dir["h.wav"]))
            return TagReader.read(path: dir["h.wav"])
        }
        // 5,000 sync points: ChapterLimits.count markers in all (the cue point's among them), one warning.
        var m = try read(Self.ixml((0..<5000).map { Self.syncPoint("RELATIVE", "MARKER_GENERIC", "m\($0)", UInt64(100 + $0)) }))
        #expect(m.chapterList.markers.count == ChapterLimits.count)
        #expect(m.warnings.contains { $0.contains("more than \(ChapterLimits.count) markers") }, "\(m.warnings)")
        // No sample count, an unknown type, a count that is not a number, ABSOLUTE before the file
        // began or without any time reference, an unclosed point: each named, the good one kept.
        m = try read(Self.ixml([
            "<SYNC_POINT><SYNC_POINT_TYPE>RELATIVE</SYNC_POINT_TYPE><SYNC_POINT_COMMENT>no count</SYNC_POINT_COMMENT></SYNC_POINT>",
            Self.syncPoint("SIDEWAYS", "MARKER_GENERIC", "odd type", 5),
            Self.syncPoint("RELATIVE", "MARKER_GENERIC", "not a number", 5).replacingOccurrences(of: "<SYNC_POINT_LOW>5", with: "<SYNC_POINT_LOW>5x"),
            Self.syncPoint("ABSOLUTE", "MARKER_GENERIC", "too early", 10),
            Self.syncPoint("RELATIVE", "MARKER_GENERIC", "good", 48000),
            "<SYNC_POINT><SYNC_POINT_TYPE>RELATIVE",
        ]))
        #expect(m.chapterList.markers.map(\.title) == ["clap", "good"], "\(m.chapterList.markers)")
        for w in ["no count", "odd type", "not a number", "too early", "not closed"] {
            #expect(m.warnings.contains { $0.contains(w) }, "\(w): \(m.warnings)")
        }
        m = try read(Self.ixml([Self.syncPoint("ABSOLUTE", "MARKER_GENERIC", "when", 10)]), reference: nil)
        #expect(m.chapterList.markers.map(\.title) == ["clap"] && m.warnings.contains { $0.contains("no time reference") }, "\(m.warnings)")
    }
}
