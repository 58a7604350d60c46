import Foundation
@testable import SegnoAudio
import Testing

/// docs/reference/limits.md quotes the chapter readers' own bounds (issue 32, decisions 0078, 0090).
@Suite struct ChapterReaderLimitsDocTests {
    @Test func theMatroskaAndChapterTrackRowsQuoteTheConstants() throws {
        let page = try String(contentsOfFile: LimitsDocTests.limits, encoding: .utf8)
        for (name, text) in [("MatroskaChapters.limit", LimitsDocTests.written(MatroskaChapters.limit, bytes: true)),
                             ("MP4ChapterTrack.sampleBytes", LimitsDocTests.written(MP4ChapterTrack.sampleBytes, bytes: false) + " bytes")] {
            let row = page.split(separator: "\n").first { $0.contains("`\(name)`") }
            #expect(row?.contains(text) == true, "limits.md's row for \(name) says \(text): \(row ?? "")")
        }
        #expect(page.contains("at most \(LimitsDocTests.written(MatroskaChapters.elements, bytes: false)) top-level elements"))
    }
}
