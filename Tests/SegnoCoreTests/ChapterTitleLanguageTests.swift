import Foundation
import SegnoCore
import Testing

/// Chapter titles in the transcript's language: its stop words (`StopWords.of`), and for a language
/// without a list, no word that is in every one of three chapters or more.
@Suite struct ChapterTitleLanguageTests {
    typealias Said = Findings.Segment

    /// Two chapters of German: "und", "der", "die" in both, many times; the topic words once or twice.
    static let german = [Said(start: 0, end: 10, text: "Der Hund und die Katze und der Garten und die Wiese und der Hund"),
                         Said(start: 10, end: 20, text: "Die Bahn und der Zug und die Schiene und der Bahnhof und die Bahn")]

    @Test func germanFunctionWordsAreNoTitleInGerman() {
        let titles = TopicTiling.titles(Self.german, starts: [0, 10], stopWords: StopWords.of("de"))
        #expect(titles == ["Hund, katze, garten", "Bahn, zug, schiene"], "\(titles)")
        // With the English list, the German function words win: what the list is for.
        let english = TopicTiling.titles(Self.german, starts: [0, 10], stopWords: StopWords.english)
        #expect(english[0].lowercased().contains("und") || english[0].lowercased().contains("der"), "\(english)")
    }

    @Test func aWordInEveryChapterIsNoTitleWhenThereAreThree() {
        // Swedish has no list: "och" (and) is in all three chapters, more often than any topic word.
        let said = [Said(start: 0, end: 10, text: "båt och båt och segel och och"),
                    Said(start: 10, end: 20, text: "tåg och tåg och räls och och"),
                    Said(start: 20, end: 30, text: "bil och bil och väg och och")]
        let titles = TopicTiling.titles(said, starts: [0, 10, 20], stopWords: StopWords.of("sv"))
        #expect(titles == ["Båt, segel", "Tåg, räls", "Bil, väg"], "\(titles)")
        // With two chapters the rule does not apply (a word in both may still say most of each).
        let two = TopicTiling.titles(Array(said.prefix(2)), starts: [0, 10], stopWords: StopWords.of("sv"))
        #expect(two[0].lowercased().contains("och"), "\(two)")
    }

    @Test func theListFollowsTheLanguageCode() {
        #expect(StopWords.of("DE") == StopWords.german)
        #expect(StopWords.of("pt-BR") == StopWords.portuguese && StopWords.of("pt_PT") == StopWords.portuguese)
        #expect(StopWords.of("fr").contains("c'est") && StopWords.of("es").contains("porque") && StopWords.of("it").contains("perché"))
        #expect(StopWords.of("nl").contains("omdat"))
        #expect(StopWords.of(nil) == StopWords.english && StopWords.of("sv") == StopWords.english && StopWords.of("en-GB") == StopWords.english)
    }

    @Test func theLanguageTravelsWithTheSegments() {
        var f = Findings(turns: [])
        f.add(Findings(segments: Self.german, language: "de"))
        #expect(f.language == "de" && f.segments == Self.german)
        // The first finder of segments wins, language and all.
        f.add(Findings(segments: [], language: "fr"))
        #expect(f.language == "de" && f.segments == Self.german)
    }
}
