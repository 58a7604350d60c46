import CSegnoTags
import Foundation
@testable import SegnoAudio
@testable import SegnoCore
import SegnoCoreTestSupport
import Testing

/// Decision 0083: tags are read by the `segno-tags` program, a process of its own started per file,
/// within `segno_tags_limits`. Its answers must equal the forked reader's, and each limit must
/// hold in it: the CPU bound ends it, the text bounds keep values out of the answer (listed, so
/// segno warns), and a program of another protocol refuses. Files from Tests/support/tags.py and
/// hostile.py (mutagen, ffmpeg).
@Suite struct TagReaderProgramTests {
    static let support = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("support").path
    let dir: String

    init() throws {
        dir = NSTemporaryDirectory() + "segno-tagprog-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let made = try ProcessRunner.tool("python3", [Self.support + "/tags.py", "make", dir])
        #expect(made.status == 0, "\(made.stderr)")
    }

    /// What one isolated read answered: properties and raw values as (key, value), the dropped
    /// list as (key, size, raw, reason), or the error.
    struct Answer: Equatable {
        var error: String?
        var properties: [[String]] = []
        var raw: [[String]] = []
        var dropped: [[String]] = []
    }

    static func read(_ path: String, format: segno_tags_format, limits: segno_tags_limits, program: String?) -> Answer {
        var limits = limits
        let t: OpaquePointer? = program.map { p in p.withCString { segno_tags_read_isolated(path, Int32(format.rawValue), &limits, $0) } }
            ?? segno_tags_read_isolated(path, Int32(format.rawValue), &limits, nil)
        guard let t else { return Answer(error: "no answer") }
        defer { segno_tags_free(t) }
        var a = Answer()
        if let e = segno_tags_error(t) { a.error = String(cString: e) }
        for i in 0..<segno_tags_property_count(t) {
            a.properties.append([String(cString: segno_tags_property_key(t, i)), String(cString: segno_tags_property_value(t, i))])
        }
        for i in 0..<segno_tags_raw_count(t) {
            a.raw.append([String(cString: segno_tags_raw_key(t, i)), String(cString: segno_tags_raw_value(t, i))])
        }
        for i in 0..<segno_tags_dropped_count(t) {
            a.dropped.append([String(cString: segno_tags_dropped_key(t, i)), String(segno_tags_dropped_size(t, i)),
                              String(segno_tags_dropped_raw(t, i)), String(segno_tags_dropped_reason(t, i))])
        }
        return a
    }

    static let standard = segno_tags_limits(picture_bytes: 1 << 20, value_bytes: Int64(TagLimits.valueBytes),
                                            total_bytes: Int64(TagLimits.totalBytes),
                                            memory_bytes: Int64(TagLimits.readerMemory), cpu_seconds: Int32(TagLimits.readerSeconds))

    static let formats: [(String, segno_tags_format)] = [
        ("tagged.flac", SEGNO_TAGS_FLAC), ("tagged.mp3", SEGNO_TAGS_MPEG), ("tagged.m4a", SEGNO_TAGS_MP4),
        ("tagged.ogg", SEGNO_TAGS_OGG_VORBIS), ("tagged.opus", SEGNO_TAGS_OPUS), ("tagged.wav", SEGNO_TAGS_WAV),
    ]

    @Test func theProgramAnswersAsTheForkedReaderDoes() throws {
        let program = try #require(TagReader.readerProgram, "segno-tags is built beside the test binary")
        #expect(program.hasSuffix("/segno-tags"))
        for (name, format) in Self.formats {
            let spawned = Self.read(dir + "/" + name, format: format, limits: Self.standard, program: program)
            let forked = Self.read(dir + "/" + name, format: format, limits: Self.standard, program: nil)
            #expect(spawned.error == nil, "\(name): \(spawned.error ?? "")")
            if name != "tagged.wav" {  // a WAV's LIST/INFO is read by segno itself (ChunkTags), not TagLib
                #expect(spawned.properties.contains { $0[0] == "TITLE" && $0[1] == "비 오는 날 회의" }, "\(name): \(spawned.properties)")
            }
            #expect(spawned == forked, "\(name)")
        }
    }

    /// `TagLimits.readerSeconds` is given to the reader as `RLIMIT_CPU`. A FLAC of 600,000 comments
    /// takes TagLib more than a second of CPU (and more than the reader's 192 MiB, so both runs
    /// here allow 2 GiB): with 1 s the reader is stopped and the tags fail alone with the reason;
    /// with the real bound the same file is read. (Linux takes a CPU limit of 0 as 1 s.)
    @Test func theCPUBoundStopsTheReader() throws {
        let slow = dir + "/slow.flac"
        try FileManager.default.copyItem(atPath: dir + "/tagged.flac", toPath: slow)
        let made = try ProcessRunner.tool("python3", ["-c", "import sys\nfrom mutagen.flac import FLAC\nf = FLAC(sys.argv[1])\nf.delete()\n"
                                                      + "f['TITLE'] = [str(i) for i in range(600000)]\nf.save()", slow])
        #expect(made.status == 0, "\(made.stderr)")
        var roomy = Self.standard
        roomy.memory_bytes = 2 << 30
        roomy.cpu_seconds = 1
        let stopped = Self.read(slow, format: SEGNO_TAGS_FLAC, limits: roomy, program: TagReader.readerProgram)
        #expect(stopped.error?.contains("the tag reader gave up after 1 s of CPU") == true, "\(stopped.error ?? "read")")
        roomy.cpu_seconds = Int32(TagLimits.readerSeconds)
        let read = Self.read(slow, format: SEGNO_TAGS_FLAC, limits: roomy, program: TagReader.readerProgram)
        #expect(read.error == nil, "\(read.error ?? "")")
        #expect(read.dropped.count == 100 && read.dropped.allSatisfy { $0[3] == "2" }, "past the text total, the first 100 are listed")
    }

    /// The text bounds act in the reader: what passes them is in the answer, what does not is only
    /// listed (key, size, list, why), in the order met.
    @Test func valuesPastTheTextBoundsNeverLeaveTheReader() throws {
        let whole = Self.read(dir + "/tagged.flac", format: SEGNO_TAGS_FLAC, limits: Self.standard, program: TagReader.readerProgram)
        let comment = try #require(whole.properties.first { $0[0] == "COMMENT" })
        var short = Self.standard
        short.value_bytes = Int64(comment[1].utf8.count - 1)
        let cut = Self.read(dir + "/tagged.flac", format: SEGNO_TAGS_FLAC, limits: short, program: TagReader.readerProgram)
        #expect(!cut.properties.contains { $0[0] == "COMMENT" }, "\(cut.properties)")
        #expect(cut.dropped.contains(["COMMENT", String(comment[1].utf8.count), "0", "1"]), "\(cut.dropped)")

        let firstTwo = whole.properties.prefix(2).reduce(0) { $0 + $1[0].utf8.count + $1[1].utf8.count }
        var small = Self.standard
        small.total_bytes = Int64(firstTwo)
        let total = Self.read(dir + "/tagged.flac", format: SEGNO_TAGS_FLAC, limits: small, program: TagReader.readerProgram)
        #expect(total.properties == Array(whole.properties.prefix(2)), "\(total.properties)")
        #expect(total.dropped.filter { $0[2] == "0" }.map { $0[0] } == whole.properties.dropFirst(2).map { $0[0] }, "\(total.dropped)")
        #expect(total.dropped.allSatisfy { $0[3] == "2" }, "\(total.dropped)")
    }

    @Test func aProgramOfAnotherProtocolRefuses() throws {
        let program = try #require(TagReader.readerProgram)
        let r = try ProcessRunner.run(program, ["1", "1", "0", "0", "0", "0:1", dir + "/tagged.flac"])
        #expect(r.status == SEGNO_TAGS_WRONG_PROTOCOL && r.stdoutData.isEmpty, "\(r.status) \(r.stderr)")
    }
}
