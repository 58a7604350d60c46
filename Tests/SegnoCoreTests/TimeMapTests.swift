import SegnoCore
import Testing

/// Decision 0072: a time map sends a moved stream's times back to its input and on to the
/// source, and an input time inside a removed stretch to the cut.
@Suite struct TimeMapTests {
    /// A cut list: 0–2 s kept, 2–5 s removed, 5–8 s kept (from 2 s in the output), 8–10 s kept
    /// but shortened to 1 s of pause (from 5 s).
    static let cuts = TimeMap(pieces: [
        .init(inputStart: 0, inputEnd: 2, outputStart: 0),
        .init(inputStart: 5, inputEnd: 8, outputStart: 2),
        .init(inputStart: 9, inputEnd: 10, outputStart: 5),
    ])

    @Test func outputTimesGoBackToTheirInput() {
        #expect(Self.cuts.toInput(1) == 1)
        #expect(Self.cuts.toInput(2.5) == 5.5)
        #expect(Self.cuts.toInput(5.25) == 9.25)
        #expect(Self.cuts.toInput(7) == 10, "past the end: the end")
        #expect(!Self.cuts.isIdentity && TimeMap.identity.isIdentity && TimeMap.identity.toInput(3) == 3)
    }

    @Test func inputTimesInARemovedStretchGoToTheCut() {
        #expect(Self.cuts.toOutput(1.5) == 1.5)
        #expect(Self.cuts.toOutput(3) == 2, "inside the removed 2–5 s: where the next stretch begins")
        #expect(Self.cuts.toOutput(6) == 3)
        #expect(Self.cuts.toOutput(8.5) == 5)
        #expect(Self.cuts.toOutput(20) == 6)
    }

    @Test func mapsComposeFirstToLast() {
        // pauses, then a tempo of 2 (the stream plays twice as fast).
        let tempo = TimeMap(pieces: [.init(inputStart: 0, inputEnd: .infinity, outputStart: 0, scale: 0.5)])
        let maps = [Self.cuts, tempo]
        #expect(maps.toSource(1.25) == 5.5, "1.25 s after the tempo is 2.5 s after the cuts, 5.5 s in the source")
        #expect(!maps.keepsTime && [TimeMap.identity].keepsTime)
        #expect(tempo.toOutput(3) == 1.5)
    }
}
