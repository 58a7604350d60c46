import Foundation
@testable import SegnoSources
import Testing

/// The reconnect back-off of a dropped station, and the streams guide that quotes it.
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

    /// The waits double from the first and stop at the cap: from the cap, from half of it and
    /// from either side of half.
    @Test func theWaitsDoubleUpToTheCap() {
        var waits = [StationRecorder.firstBackoff]
        while waits.count < 5 { waits.append(StationRecorder.backoff(after: waits.last!)) }
        #expect(waits == [0.5, 1, 2, 2, 2])
        #expect(StationRecorder.backoff(after: StationRecorder.maxBackoff) == StationRecorder.maxBackoff)
        #expect(StationRecorder.backoff(after: StationRecorder.maxBackoff / 2) == StationRecorder.maxBackoff)
        #expect(StationRecorder.backoff(after: StationRecorder.maxBackoff / 2 + 0.25) == StationRecorder.maxBackoff)
        #expect(StationRecorder.backoff(after: StationRecorder.maxBackoff / 2 - 0.25) == StationRecorder.maxBackoff - 0.5)
    }
}
