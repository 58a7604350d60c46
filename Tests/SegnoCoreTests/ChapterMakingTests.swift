import Foundation
import SegnoCore
import Testing

/// Issue 32 item 3, decision 0082: chapters made at pauses, speaker changes and topic boundaries.
/// Expected chapters are worked out by hand in the comments.
@Suite struct ChapterMakingTests {
    typealias Span = Findings.Pause
    typealias Turn = Findings.Turn
    typealias Said = Findings.Segment

    static let pauses = [Span(start: 10, end: 11), Span(start: 50, end: 54), Span(start: 100, end: 102), Span(start: 130, end: 130.5)]

    @Test func pausesLongestFirstWhileEveryChapterKeepsMin() {
        // Longest first: 50–54 (mid 52, ≥ 40 from 0 and 148 from 200) kept; 100–102 (mid 101, 49
        // from 52) kept; 10–11 (mid 10.5 < 40 from 0) not; 130–130.5 (mid 130.25, 29.25 from 101) not.
        #expect(ChapterMaking.atPauses(Self.pauses, duration: 200, min: 40) == [
            Chapter(start: 0, end: 52, title: "Part 1"), Chapter(start: 52, end: 101, title: "Part 2"),
            Chapter(start: 101, end: 200, title: "Part 3"),
        ])
        // min 50: 101 is 49 from 52, so it goes; 130.25 is 78.25 from 52 and 69.75 from the end.
        #expect(ChapterMaking.atPauses(Self.pauses, duration: 200, min: 50).map(\.start) == [0, 52, 130.25])
        // min 120: no pause leaves 120 s on both sides of a 200 s recording.
        #expect(ChapterMaking.atPauses(Self.pauses, duration: 200, min: 120).isEmpty)
    }

    @Test func equallyLongPausesGoEarlierFirst() {
        // Both 2 s long; 40 (mid 41) comes first, and 60 (mid 61) is then 20 from it: under 30.
        let p = [Span(start: 60, end: 62), Span(start: 40, end: 42)]
        #expect(ChapterMaking.atPauses(p, duration: 120, min: 30).map(\.start) == [0, 41])
    }

    @Test func pauseChaptersAreTitledFromTheTranscriptWhenThereIsOne() {
        let said = [Said(start: 0, end: 40, text: "The garden and the garden roses."),
                    Said(start: 60, end: 100, text: "Taxes, taxes and the garden.")]
        let c = ChapterMaking.atPauses([Span(start: 45, end: 55)], duration: 100, min: 30, said: said)
        // garden is in both chapters (idf ln 3/2), roses and taxes in one (ln 3): roses 1.10 >
        // garden 2 × 0.41 = 0.81; taxes 2 × 1.10 first.
        #expect(c.map(\.title) == ["Roses, garden", "Taxes, garden"])
    }

    static let turns = [Turn(start: 0, end: 30, speaker: "A"), Turn(start: 30, end: 35, speaker: "B"), Turn(start: 35, end: 90, speaker: "A"),
                        Turn(start: 90, end: 150, speaker: "B"), Turn(start: 150, end: 170, speaker: "B"), Turn(start: 170, end: 185, speaker: "C")]

    @Test func speakerChangesRespectMinAndTakeTheLongestSpeaker() {
        // Changes at 30 (kept: 30 after 0), 35 (5 after 30: skipped), 90 (kept), 170 (kept; 20 to the
        // end). 0–30: A; 30–90: A 55 s against B 5 s → A, so it joins the first; 90–170: B; 170–190: C.
        #expect(ChapterMaking.atSpeakerChanges(Self.turns, duration: 190, min: 20) == [
            Chapter(start: 0, end: 90, title: "A"), Chapter(start: 90, end: 170, title: "B"), Chapter(start: 170, end: 190, title: "C"),
        ])
        // min 90: only 90 is 90 after 0 (170 is 80 after it); 0–90 A, 90–190 B 80 s against C 15 s.
        #expect(ChapterMaking.atSpeakerChanges(Self.turns, duration: 190, min: 90) == [
            Chapter(start: 0, end: 90, title: "A"), Chapter(start: 90, end: 190, title: "B"),
        ])
        // min 25: 170 leaves 20 s to the end, so the last chapter joins the one before.
        #expect(ChapterMaking.atSpeakerChanges(Self.turns, duration: 190, min: 25).map(\.start) == [0, 90])
    }

    @Test func speakerChaptersUseEnrolledNamesAndNeedTwoSpeakers() {
        let named = [Turn(start: 0, end: 50, speaker: "A", name: "Ada"), Turn(start: 50, end: 100, speaker: "B")]
        #expect(ChapterMaking.atSpeakerChanges(named, duration: 100, min: 10).map(\.title) == ["Ada", "B"])
        #expect(ChapterMaking.atSpeakerChanges([Turn(start: 0, end: 100, speaker: "A")], duration: 100, min: 10).isEmpty)
        #expect(ChapterMaking.atSpeakerChanges([], duration: 100, min: 10).isEmpty)
    }

    @Test func mergedKeepsTheEarlierSourceAtTheSamePlace() {
        // y (50.5) is within 1 s of b (50) and x of a: both left out; z joins.
        let m = ChapterMaking.merged([[Chapter(start: 0, title: "a"), Chapter(start: 50, title: "b")],
                                      [Chapter(start: 0, title: "x"), Chapter(start: 50.5, title: "y"), Chapter(start: 80, title: "z")]], duration: 100)
        #expect(m == [Chapter(start: 0, end: 50, title: "a"), Chapter(start: 50, end: 80, title: "b"), Chapter(start: 80, end: 100, title: "z")])
    }

    static let topicWords = [["harbour", "boat", "sail", "anchor", "tide", "mast", "crew", "deck"],
                             ["oven", "flour", "bread", "butter", "dough", "yeast", "loaf", "crust"],
                             ["planet", "orbit", "comet", "telescope", "star", "moon", "galaxy", "rocket"]]

    /// Three topics of 60 s, ten 6-second segments each, from word lists that do not overlap.
    static func threeTopics() -> [Said] {
        var out: [Said] = []
        for (t, words) in topicWords.enumerated() {
            for s in 0..<10 {
                let text = (0..<16).map { i in i % 2 == 0 ? ["the", "and", "we", "of"][(s + i) % 4] : words[(s * 3 + i) % words.count] }
                out.append(Said(start: Double(t * 60 + s * 6), end: Double(t * 60 + s * 6 + 6), text: text.joined(separator: " ")))
            }
        }
        return out
    }

    @Test func topicBoundariesFallWhereTheWordsChange() {
        let c = ChapterMaking.atTopics(Self.threeTopics(), duration: 180, min: 30)
        #expect(c.map(\.start) == [0, 60, 120])
        // Each title is made of its own topic's words only.
        #expect(c.count == 3)
        for (chapter, words) in zip(c, Self.topicWords) {
            let title = chapter.title.lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(title.count == 3 && title.allSatisfy(words.contains), "\(chapter.title)")
        }
    }

    @Test func withWordTimesABoundaryFallsInTheLongestSilenceBetweenWords() {
        // Each segment's 16 words start 0.5 s in, 0.34 s apart, 0.3 s long (the last ends 5.9 s in);
        // a topic's first segment starts its words 1.5 s in instead: the longest silence near 60 s
        // is 59.9–61.5 s (middle 60.7), near 120 s 119.9–121.5 s (120.7).
        let said = Self.threeTopics().map { seg -> Said in
            let lead = Int(seg.start) % 60 == 0 && seg.start > 0 ? 1.5 : 0.5
            let words = seg.text.split(separator: " ").enumerated().map { i, w in
                Findings.Word(start: seg.start + lead + Double(i) * 0.34, end: seg.start + lead + Double(i) * 0.34 + 0.3, text: String(w))
            }
            return Said(start: seg.start, end: seg.end, text: seg.text, words: words)
        }
        let starts = ChapterMaking.atTopics(said, duration: 180, min: 30).map(\.start)
        #expect(starts.count == 3 && abs(starts[1] - 60.7) < 1e-9 && abs(starts[2] - 120.7) < 1e-9, "\(starts)")
    }

    @Test func topicBoundariesRespectMin() {
        // With min 70 no boundary may lie within 70 s of 0 or of 180: neither 60 nor 120 fits.
        #expect(ChapterMaking.atTopics(Self.threeTopics(), duration: 180, min: 70).isEmpty)
        // A transcript of fewer than four token sequences (`TopicTiling.sequenceWords` words each) says nothing.
        #expect(ChapterMaking.atTopics([Said(start: 0, end: 10, text: "boat boat sail")], duration: 10, min: 1).isEmpty)
    }

    @Test func titlesAreTheMostCharacteristicWords() {
        let said = [Said(start: 0, end: 10, text: "Apple apple banana, the"), Said(start: 10, end: 20, text: "cherry cherry apple")]
        // apple in both (idf ln 3/2 = 0.41, × 2 = 0.81 in the first), banana and cherry in one (ln 3 = 1.10).
        #expect(TopicTiling.titles(said, starts: [0, 10], stopWords: StopWords.english) == ["Banana, apple", "Cherry, apple"])
        #expect(TopicTiling.titles([], starts: [0, 10], stopWords: StopWords.english) == ["", ""])
    }
}
