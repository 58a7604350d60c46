import Foundation
import SegnoCore
import SegnoTestSupport
import Testing

/// Issue 33: each tag limit holds exactly where `TagLimits` says — a value at the limit travels,
/// one past it is dropped with a warning naming the file and tag; the tag reader's memory bound
/// is what stops an inflating frame. The files come from Tests/support/hostile.py (`bounds`,
/// mutagen and zlib, given the limits from here); outputs are read back with mutagen.
@Suite struct TagLimitBoundaryTests {
    let dir: String

    init() throws {
        dir = NSTemporaryDirectory() + "segno-bounds-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let made = try CLI.tool("python3", [HostileInputTests.generator, "bounds", dir, String(TagLimits.valueBytes), String(TagLimits.values),
                                             String(TagLimits.totalBytes)])
        #expect(made.status == 0, "\(made.stderr)")
    }

    /// Mutagen's (key, UTF-8 byte count) of every Vorbis comment in a FLAC.
    func comments(_ path: String) throws -> [(key: String, bytes: Int)] {
        let r = try CLI.tool("python3", ["-c", "import sys\nfrom mutagen.flac import FLAC\nfor k, v in FLAC(sys.argv[1]).tags: print(k.lower(), len(v.encode()))", path])
        #expect(r.status == 0, "\(r.stderr)")
        return r.stdout.split(separator: "\n").map { line in
            let parts = line.split(separator: " ")
            return (String(parts[0]), Int(parts[1]) ?? -1)
        }
    }

    @Test func aValueAtTheByteLimitTravelsAndOneBytePastItIsDropped() throws {
        let out = dir + "/at-bytes.out.flac"
        let r = try CLI.segno(["convert", dir + "/at-bytes.flac", out])
        #expect(r.status == 0, "\(r.stderr)")
        let kept = try comments(out)
        #expect(kept.contains { $0.key == "title" && $0.bytes == TagLimits.valueBytes }, "\(kept)")
        #expect(kept.contains { $0.key == "album" && $0.bytes == TagLimits.valueBytes }, "two-byte characters count as bytes: \(kept)")
        #expect(!kept.contains { $0.key == "artist" }, "\(kept)")
        #expect(r.stderr.contains("at-bytes.flac") && r.stderr.contains("tag artist: a value of \(TagLimits.valueBytes + 1) bytes is over the limit of \(TagLimits.valueBytes) bytes"),
                "\(r.stderr)")
        #expect(!r.stderr.contains("tag title") && !r.stderr.contains("tag album"), "\(r.stderr)")
    }

    /// `TagLimits.totalBytes`: four comments whose keys and values come to exactly the total
    /// travel whole; the fifth, one byte, is dropped with one warning naming it (decision 0083).
    @Test func textUpToTheTotalTravelsAndTheNextValueIsDropped() throws {
        #expect(TagLimits.totalBytes / 4 <= TagLimits.valueBytes, "each of the four values is within the value limit")
        let out = dir + "/at-total.out.flac"
        let r = try CLI.segno(["convert", dir + "/at-total.flac", out])
        #expect(r.status == 0, "\(r.stderr)")
        let kept = try comments(out)
        #expect(kept.map(\.key).sorted() == ["k0", "k1", "k2", "k3"], "\(kept)")
        #expect(kept.reduce(0) { $0 + $1.key.utf8.count + $1.bytes } == TagLimits.totalBytes, "\(kept)")
        #expect(r.stderr.contains("at-total.flac") && r.stderr.contains("tag values past \(TagLimits.totalBytes) bytes of text in all are dropped (from tag k4 on)"),
                "\(r.stderr)")
    }

    @Test func valuesUpToTheCountLimitTravelAndTheNextIsDropped() throws {
        let at = try CLI.segno(["convert", dir + "/at-count.flac", dir + "/at-count.out.flac"])
        #expect(at.status == 0 && !at.stderr.contains("more than"), "\(at.stderr)")
        #expect(try comments(dir + "/at-count.out.flac").filter { $0.key == "comment" }.count == TagLimits.values)
        let past = try CLI.segno(["convert", dir + "/past-count.flac", dir + "/past-count.out.flac"])
        #expect(past.status == 0, "\(past.stderr)")
        #expect(try comments(dir + "/past-count.out.flac").filter { $0.key == "comment" }.count == TagLimits.values)
        #expect(past.stderr.contains("past-count.flac") && past.stderr.contains("more than \(TagLimits.values) tag values; the rest are dropped"), "\(past.stderr)")
    }

    /// The tag reader's memory bound (`TagLimits.readerMemory`, 192 MiB beyond segno's own) sits
    /// between a frame inflating to 8 MiB (TagLib holds ~112 MiB: read, the value dropped by the
    /// value limit) and one inflating to 16 MiB (~224 MiB: the file's tags fail alone, the audio
    /// converts). Through the CLI: a fresh process, whose heap has no free memory to lend the reader.
    @Test func theReadersMemoryBoundSitsBetweenAn8And16MiBInflatedFrame() throws {
        #expect(TagLimits.readerMemory == 192 << 20, "the files below are sized for 192 MiB")
        let within = try CLI.segno(["convert", dir + "/inflate-8m.mp3", dir + "/within.flac"])
        #expect(within.status == 0 && !within.stderr.contains("tags not read"), "\(within.stderr)")
        #expect(within.stderr.contains("inflate-8m.mp3: tags: tag inflated: a value of \(8 << 20) bytes is over the limit"), "\(within.stderr)")
        #expect(try comments(dir + "/within.flac").contains { $0.key == "title" && $0.bytes == 6 })
        let past = try CLI.segno(["convert", dir + "/inflate-16m.mp3", dir + "/past.flac"])
        #expect(past.status == 0, "\(past.stderr)")
        #expect(past.stderr.contains("inflate-16m.mp3: tags: tags not read: reading them needs more memory than the tag reader may use"), "\(past.stderr)")
        #expect(try CLI.tool("flac", ["-t", "-s", dir + "/past.flac"]).status == 0, "the audio converts whole")
    }
}
