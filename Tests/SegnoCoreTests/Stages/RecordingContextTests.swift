import Foundation
@testable import SegnoCore
import Testing

/// `{title}` and `{recorded}`: the recording's identity from its tags, with file-based fallbacks.
@Suite struct RecordingContextTests {
    /// 2024-03-05 23:59:30 UTC.
    static let modified = Date(timeIntervalSince1970: 1_709_683_170)

    func context(_ tags: [String: String]?, name: String = "memo 1.m4a") -> RecordingContext {
        RecordingContext(sourcePath: "/in/" + name, relativePath: name, modified: Self.modified,
                         source: SourceInfo(container: "MP4", codec: "AAC", sampleRate: 48000, channels: 1,
                                            frames: 48000, sampleKind: .lossy, tags: tags),
                         outputRoot: "/out")
    }

    @Test func titleFromTheTagElseTheStem() {
        #expect(context(["title": "Standup notes"]).title == "Standup notes")
        #expect(context(nil).title == "memo 1")
        #expect(context(["title": "   "]).title == "memo 1", "a blank title is no title")
        var c = context(["title": "From tag"])
        c.extra["title"] = "From a stage"
        #expect(c.title == "From a stage")
    }

    @Test func titleInAPathStaysOneFileName() throws {
        let t = try PathTemplate("{title}.flac")
        #expect(try t.resolve(context(["title": "a/b\\c"])) == "/out/a-b-c.flac")
        #expect(try t.resolve(context(["title": "line\none"])) == "/out/line one.flac")
        #expect(try t.resolve(context(["title": ".."])) == "/out/memo 1.flac", "never climbs out")
        #expect(try t.resolve(context(["title": "/"])) == "/out/-.flac")
        let long = String(repeating: "é", count: 300)
        #expect(try t.resolve(context(["title": long])).utf8.count <= "/out/".utf8.count + 200 + ".flac".utf8.count)
        #expect(PathTemplate.standardVariables.isSuperset(of: ["title", "recorded"]))
    }

    @Test func recordedPrefersAFullDateAndTime() throws {
        #expect(context(nil).recorded == "2024-03-05T23:59:30Z", "the modification time")
        #expect(context(["creation_time": "2024-05-01T09:30:12.000000Z"]).recorded == "2024-05-01T09:30:12Z")
        #expect(context(["date": "2024-05-01", "creation_time": "2024-05-01T09:30:12.000000Z"]).recorded == "2024-05-01T09:30:12Z")
        #expect(context(["date": "2024-05-01"]).recorded == "2024-05-01")
        #expect(context(["date": "2024-05-01T11:30:12+0200"]).recorded == "2024-05-01T09:30:12Z")
        #expect(context(["date": "2024-05-01 08:30:12-01:00"]).recorded == "2024-05-01T09:30:12Z")
        #expect(context(["date": "2024"]).recorded == "2024-03-05T23:59:30Z", "a bare year is not a date")
        #expect(context(["date": "yesterday"]).recorded == "2024-03-05T23:59:30Z")
        #expect(try PathTemplate("{recorded}/{stem}.json").resolve(context(nil)) == "/out/2024-03-05T23:59:30Z/memo 1.json")
    }

    @Test func isoDateRejectsImpossibleValues() {
        #expect(RecordingContext.isoDate("2024-13-01") == nil)
        #expect(RecordingContext.isoDate("2024-05-01T25:00:00Z") == nil)
        #expect(RecordingContext.isoDate("2024-05-0") == nil)
        #expect(RecordingContext.isoDate("2024-05-01T09:30") == nil)
    }
}
