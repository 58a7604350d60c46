import Foundation
import SegnoCore
import Testing

/// docs/reference/limits.md quotes `ChapterLimits` as the code has them (issue 32).
@Suite struct ChapterLimitsDocTests {
    @Test func theChapterRowsQuoteTheConstants() throws {
        let page = try String(contentsOfFile: LimitsDocTests.limits, encoding: .utf8)
        for (name, text) in [("ChapterLimits.count", LimitsDocTests.written(ChapterLimits.count, bytes: false)),
                             ("ChapterLimits.titleBytes", LimitsDocTests.written(ChapterLimits.titleBytes, bytes: false) + " bytes"),
                             ("ChapterLimits.vorbisKeys", LimitsDocTests.written(ChapterLimits.vorbisKeys, bytes: false))] {
            let row = page.split(separator: "\n").first { $0.contains("`\(name)`") }
            #expect(row?.contains(text) == true, "limits.md's row for \(name) says \(text): \(row ?? "")")
        }
    }
}
