import Foundation
@testable import SegnoAudio
@testable import SegnoCore
import SegnoCoreTestSupport
import Testing

/// Decision 0078, amended: Matroska/WebM `Chapters` stored after the audio clusters in a file
/// without a `SeekHead` pointing at them are found by stepping over the clusters by their sizes
/// (headers only): in files ffmpeg wrote and then rearranged here (its `SeekHead` and `Chapters`
/// made `Void`, the `Chapters` appended after the clusters), read as ffprobe reads the original,
/// and in files built byte by byte. Never the audio's bytes, never more than `elements` steps.
@Suite struct MatroskaTrailingChaptersTests {
    typealias C = ChapterContainersTests

    /// The top-level elements of the segment of a Matroska file: (id, header start, body start, body end).
    static func topLevel(_ b: [UInt8]) throws -> (segmentSizeAt: Int, sizeLength: Int, items: [(id: UInt32, start: Int, body: Int, end: Int)]) {
        func header(_ at: Int) throws -> (id: UInt32, body: Int, size: Int, sizeLength: Int) {
            let (id, n) = try #require(MatroskaChapters.vint(b, at, b.count, keepMarker: true))
            let (size, m) = try #require(MatroskaChapters.vint(b, at + n, b.count, keepMarker: false))
            return (UInt32(id), at + n + m, Int(size), m)
        }
        let ebml = try header(0)
        let seg = try header(ebml.body + ebml.size)
        #expect(seg.id == MatroskaChapters.segment)
        var items: [(UInt32, Int, Int, Int)] = []
        var at = seg.body
        while at < b.count {
            let e = try header(at)
            items.append((e.id, at, e.body, e.body + e.size))
            at = e.body + e.size
        }
        return (ebml.body + ebml.size + 4, seg.sizeLength, items)
    }

    /// `b` with `range` made one EBML `Void` element (id 0xEC, an 8-byte size) of the same length.
    static func void(_ b: inout [UInt8], _ range: Range<Int>) {
        let n = UInt64(range.count - 9)
        b.replaceSubrange(range, with: [0xEC, 0x01] + (0..<7).map { UInt8(truncatingIfNeeded: n >> (8 * (6 - UInt64($0)))) } + [UInt8](repeating: 0, count: Int(n)))
    }

    @Test func chaptersAfterTheClustersWithoutASeekHeadAreReadAsFFprobeReadsThem() throws {
        let dir = try TempDir()
        for (name, codec) in [("t.mka", "flac"), ("t.webm", "libopus")] {
            let path = try C.ffmpeg(dir, name, ["-c:a", codec, "-cluster_time_limit", "500"])
            let want = try C.probe(path)
            var b = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let top = try Self.topLevel(b)
            let chapters = try #require(top.items.first { $0.id == MatroskaChapters.chapters })
            let firstCluster = try #require(top.items.firstIndex { $0.id == MatroskaChapters.cluster })
            #expect(top.items.filter { $0.id == MatroskaChapters.cluster }.count > 3, "\(name): several clusters to step over")
            #expect(chapters.start < top.items[firstCluster].start, "\(name): ffmpeg writes Chapters before the audio")
            let copy = Array(b[chapters.start..<chapters.end])
            // Every SeekHead and the Chapters in front become Void (the offsets stay as they were),
            // and the Chapters go after the last element; the segment's size grows with them.
            for e in top.items where e.id == MatroskaChapters.seekHead || e.id == MatroskaChapters.chapters { Self.void(&b, e.start..<e.end) }
            b += copy
            let sizeAt = top.segmentSizeAt, m = top.sizeLength
            let old = MatroskaChapters.vint(b, sizeAt, b.count, keepMarker: false)!.0
            if old != (1 << (7 * UInt64(m))) - 1 {
                let new = old + UInt64(copy.count)
                var bytes = (0..<m).map { UInt8(truncatingIfNeeded: new >> (8 * UInt64(m - 1 - $0))) }
                bytes[0] |= UInt8(0x80 >> (m - 1))
                b.replaceSubrange(sizeAt..<(sizeAt + m), with: bytes)
            }
            try Data(b).write(to: URL(fileURLWithPath: dir["moved-" + name]))
            let after = try Self.topLevel(b)
            #expect(!after.items.contains { $0.id == MatroskaChapters.seekHead } && after.items.last?.id == MatroskaChapters.chapters, "\(name)")
            let got = TagReader.read(path: dir["moved-" + name])
            #expect(C.same(got.chapterList.chapters, want), "\(name): \(got.chapterList.chapters) vs ffprobe \(want)")
            #expect(got.warnings.isEmpty, "\(name): \(got.warnings)")
        }
    }

    /// A file of an EBML header and a segment of `elements` (whole elements).
    static func file(_ elements: [UInt8], unknownSize: Bool = false) -> [UInt8] {
        let head = C.el([0x1A, 0x45, 0xDF, 0xA3], C.el([0x42, 0x82], Array("matroska".utf8)))
        if unknownSize { return head + [0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF] + elements }
        return head + C.el([0x18, 0x53, 0x80, 0x67], elements)
    }
    static let cluster: [UInt8] = [0x1F, 0x43, 0xB6, 0x75]
    static func chapters(_ title: String) -> [UInt8] { C.el([0x10, 0x43, 0xA7, 0x70], C.el([0x45, 0xB9], C.atom(2_000_000_000, title))) }

    @Test func builtByHandTheClustersAreSteppedOverNotRead() throws {
        let dir = try TempDir()
        func read(_ bytes: [UInt8]) throws -> RecordingMetadata {
            try Data(bytes).write(to: URL(fileURLWithPath: dir["h.mka"]))
            return TagReader.read(path: dir["h.mka"])
        }
        // A cluster whose audio happens to hold a whole Chapters element: stepped over, not read.
        let info = C.el([0x15, 0x49, 0xA9, 0x66], C.uint([0x2A, 0xD7, 0xB1], 1_000_000))
        let audio = C.el(Self.cluster, C.uint([0xE7], 0) + C.el([0xA3], [0x81, 0, 0, 0x80] + Self.chapters("in the audio") + [UInt8](repeating: 7, count: 3000)))
        for unknown in [false, true] {
            let m = try read(Self.file(info + audio + audio + Self.chapters("after the audio"), unknownSize: unknown))
            #expect(m.chapterList.chapters.map(\.title) == ["after the audio"] && m.chapterList.chapters.first?.start == 2, "\(m.chapterList.chapters)")
        }
        // A cluster of unknown size (a live recording's) ends the walk: nothing is found, nothing is wrong.
        let open = Self.cluster + [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF] + C.uint([0xE7], 0)
        var m = try read(Self.file(info + audio + open + Self.chapters("after a live cluster"), unknownSize: true))
        #expect(m.chapterList.isEmpty && m.warnings.isEmpty, "\(m.chapterList) \(m.warnings)")
        // More top-level elements than `elements` before the Chapters: not found (bounded).
        let many = (0..<MatroskaChapters.elements).flatMap { _ in C.el(Self.cluster, []) }
        m = try read(Self.file(many + Self.chapters("too far")))
        #expect(m.chapterList.isEmpty)
        m = try read(Self.file(Array(many.dropLast(12 * 2)) + Self.chapters("just in reach")))
        #expect(m.chapterList.chapters.map(\.title) == ["just in reach"])
        // A cluster claiming more than the file holds: the walk ends at the file's end.
        var cut = Self.file(info + audio + Self.chapters("x"))
        cut.removeLast(Self.chapters("x").count + 10)
        m = try read(cut)
        #expect(m.chapterList.isEmpty)
    }
}
