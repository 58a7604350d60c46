import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState
import SegnoTestSupport
import Testing

/// The progress line tells the truth with a long memo in flight (issue 12): audio decoded so
/// far counts, the ETA comes from the audio left, and long recordings in flight are named.
@Suite struct ProgressTests {
    @Test func aLongMemoInFlightCountsAndIsNamed() {
        let now = Date()
        var c = RunCounters()
        c.startedAt = now.addingTimeInterval(-60)
        c.planned = 3
        c.done = 1
        c.audioSeconds = 60
        c.inFlight["day 1/memo.m4a"] = .init(decoded: 1200, total: 7200)
        c.waiting["day 2/next.wav"] = .some(nil)
        let text = c.text(now: now)
        #expect(text.hasPrefix("1/3 recordings (0 failed), 0.35 h audio, 21× realtime"), "\(text)")
        // Left: 6000 s of the memo + the unknown one at the mean of 7200 and 60 → 9630 s at 21×.
        #expect(text.contains("ETA 7:39"), "\(text)")
        #expect(text.hasSuffix("; in flight: memo.m4a 20:00/2:00:00"), "\(text)")
    }

    @Test func beforeAnythingFinishesTheSpeedIsNotZero() {
        let now = Date()
        var c = RunCounters()
        c.startedAt = now.addingTimeInterval(-100)
        c.planned = 1
        c.inFlight["memo.wav"] = .init(decoded: 50, total: 7200)
        let text = c.text(now: now)
        #expect(text.contains("0.5× realtime"), "\(text)")
        #expect(text.contains("ETA 3:58:20"), "\(text)")  // 7150 s at 0.5×
        #expect(!text.contains("0× realtime"))
    }
}
