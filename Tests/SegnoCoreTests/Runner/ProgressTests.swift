import Foundation
import SegnoCore
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

    /// Issue 22: a 20-minute memo under normalize halfway through its measuring pass is a quarter
    /// done (two passes), with a speed and an ETA that do not climb.
    @Test func theMeasuringPassCounts() {
        let now = Date()
        var c = RunCounters()
        c.startedAt = now.addingTimeInterval(-60)
        c.planned = 1
        c.inFlight["memo.wav"] = .init(decoded: 600, total: 1200, passes: 2)
        #expect(c.decodedSeconds == 300)
        #expect(c.remainingSeconds == 900)
        let text = c.text(now: now)
        #expect(text.contains("5.0× realtime"), "\(text)")   // 300 s of the memo's 1200 in 60 s
        #expect(text.contains("ETA 3:00"), "\(text)")        // 900 s left at 5×
        #expect(text.hasSuffix("; in flight: memo.wav 10:00/40:00 (2 passes)"), "\(text)")
    }

    /// Issue 22: the live line fits the terminal (80 columns wrapped and scrolled).
    @Test func theLiveLineFitsTheTerminal() {
        let line = "[" + String(repeating: "#", count: 24) + "] " + String(repeating: "x", count: 120)
        let fitted = RunCounters.fit(line, columns: 80)
        #expect(fitted.count == 79 && fitted.hasSuffix("…") && fitted.hasPrefix("[####"), "\(fitted)")
        #expect(RunCounters.fit("short", columns: 80) == "short")
        #expect(RunCounters.fit(String(repeating: "y", count: 79), columns: 80).count == 79)
        #expect(RunCounters.fit(String(repeating: "y", count: 80), columns: 80) == String(repeating: "y", count: 78) + "…")
        #expect(RunCounters.fit("é memo ✓ done", columns: 6) == "é me…")
        #expect(RunCounters.fit("abc", columns: 0).count == 1)
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

/// Issue 22's wording: the state-rebuild hint names the spec the user gave (the overlap error's
/// wording, which needs a spec with a stage, is in SegnoKitTests' WordingTests).
@Suite struct WordingTests {
    @Test func theRebuildHintNamesTheSpecGiven() {
        let e = RunError.stateLost(statePath: "/a/state.db", movedTo: nil, detail: "is missing")
        #expect(e.message(spec: "jobs/memos.yaml").contains("Run `segno state rebuild jobs/memos.yaml` to adopt"), "\(e.message(spec: "x"))")
        #expect(e.message(spec: "my jobs/m.yaml").contains("`segno state rebuild 'my jobs/m.yaml'`"))
        #expect(!e.message(spec: "m.yaml").contains("SPEC"))
        #expect(RunError.input("gone").message(spec: "m.yaml") == "gone")
    }
}
