import Foundation
@testable import SegnoSources
import Testing

/// The streams guide quotes the reconnect back-off; its numbers come from `StationRecorder`.
@Suite struct ReconnectBackoffTests {
    static let guide = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/guide/09-streams.md")

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    @Test func theStreamsGuideQuotesTheBackOff() throws {
        // The guide's lines are wrapped: compare with its whitespace folded.
        let page = try String(contentsOf: Self.guide, encoding: .utf8)
            .split(whereSeparator: \.isWhitespace).joined(separator: " ")
        let first = Self.seconds(StationRecorder.firstBackoff), most = Self.seconds(StationRecorder.maxBackoff)
        #expect(page.contains("back-off (\(first) doubling to at most \(most), `StationRecorder.maxBackoff`;"))
        #expect(page.contains("so at most \(most) more than the outage is lost"))
    }
}
