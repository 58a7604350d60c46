import SegnoCore
import Testing

/// Issue 32, decision 0072: chapters are held in source time and mapped to an output's place
/// when written; the expected places below are worked out by hand from the cut list.
@Suite struct ChapterListTests {
    /// 0–2 s kept, 2–5 s removed, 5–8 s kept from 2 s, 8–9 s removed, 9–10 s kept from 5 s.
    static let cuts = TimeMap(pieces: [
        .init(inputStart: 0, inputEnd: 2, outputStart: 0),
        .init(inputStart: 5, inputEnd: 8, outputStart: 2),
        .init(inputStart: 9, inputEnd: 10, outputStart: 5),
    ])

    @Test func chaptersAndMarkersFollowTheCutList() {
        let list = ChapterList(
            chapters: [Chapter(start: 0, title: "a"), Chapter(start: 3, end: 4, title: "inside the cut"),
                       Chapter(start: 6, title: "b"), Chapter(start: 9.5, title: "c")],
            markers: [Chapter(start: 1, title: "m1"), Chapter(start: 3.5, title: "in the pause"), Chapter(start: 7, title: "m2")])
        let out = list.mapped([Self.cuts], length: 6)
        // "a" ends where the next chapter starts in the source (3 s, inside the cut: at the cut, 2 s);
        // "inside the cut" (3–4 s) is wholly removed: no length left, dropped; 2–3 s of the output
        // (source 5–6 s, after its explicit end) stays without a chapter. 6 s → 2 + 1 = 3 s;
        // 9.5 s → 5 + 0.5 = 5.5 s; the last ends at the output's length.
        #expect(out.chapters == [Chapter(start: 0, end: 2, title: "a"), Chapter(start: 3, end: 5.5, title: "b"),
                                 Chapter(start: 5.5, end: 6, title: "c")])
        // A marker inside a removed pause moves to the cut (3.5 s → 2 s); 7 s → 4 s.
        #expect(out.markers.map(\.start) == [1, 2, 4])
    }

    @Test func aTempoScalesThemAndTheLengthClampsThem() {
        let tempo = TimeMap(pieces: [.init(inputStart: 0, inputEnd: 100, outputStart: 0, scale: 1 / 1.25)])
        let list = ChapterList(chapters: [Chapter(start: 10, end: 20, title: "x"), Chapter(start: 90, title: "past the end")])
        let out = list.mapped([tempo], length: 60)
        // 10 s and 20 s at 1.25× are 8 s and 16 s; 90 s would be 72 s, past 60 s: dropped.
        #expect(out.chapters == [Chapter(start: 8, end: 16, title: "x")])
        // Composition: the cut list, then the tempo (9.5 s → 5.5 s → 4.4 s).
        let both = ChapterList(chapters: [Chapter(start: 9.5, title: "c")]).mapped([Self.cuts, tempo], length: 100)
        #expect(abs((both.chapters.first?.start ?? 0) - 4.4) < 1e-9)
    }

    @Test func chapterTimesParseAndPrint() {
        #expect(ChapterTime.text(3723.4565) == "01:02:03.457")
        #expect(ChapterTime.parse("01:02:03.457") == 3723.457)
        #expect(ChapterTime.parse("00:00:02.500") == 2.5)
        #expect(ChapterTime.parse("12.5") == 12.5)
        for bad in ["soon", "", "1:2:3:4", "-1", "00:00:1e9", "00:00:.", "nan"] { #expect(ChapterTime.parse(bad) == nil, "\(bad)") }
    }
}
