import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoState
import Testing

/// Decision 0096: the catalogue keeps each recording's chapters and markers (migration v11), and
/// `search` returns them; an entry that does not know them stores NULL, and the hit says so (nil),
/// so `find` reads the file for it as before.
@Suite struct CatalogChaptersStoreTests {
    static let list = ChapterList(chapters: [Chapter(start: 0, end: 2.5, title: "Intro"), Chapter(start: 2.5, title: "Zoë = talks; #2"),
                                             Chapter(start: 9, title: "")],
                                  markers: [Chapter(start: 400_000.0 / 48_000, title: "door \"1\"")])

    @Test func chaptersRoundTripThroughTheCatalogue() throws {
        let store = try StateStore.inMemory()
        var known = CatalogEntry(title: "show", tags: "00:00:02.500 Zoë = talks; #2", name: "a.mp3", recorded: "2024-05-01")
        known.chapters = Self.list
        let unknown = CatalogEntry(title: "other show", tags: "talks", name: "b.mp3", recorded: "2024-05-02")
        try store.apply([StateStoreTests.done("a.mp3", StateStoreTests.identity(1), steps: []), StateStoreTests.done("b.mp3", StateStoreTests.identity(2), steps: []),
                         .archived(path: "a.mp3", fingerprints: [:], catalog: known), .archived(path: "b.mp3", fingerprints: [:], catalog: unknown)])
        var q = CatalogQuery()
        q.words = ["talks"]
        let hits = Dictionary(uniqueKeysWithValues: try store.search(q).map { ($0.path, $0) })
        // The untitled chapter is not kept (only titles are searched); the end is not kept either.
        let want = ChapterList(chapters: [Chapter(start: 0, title: "Intro"), Chapter(start: 2.5, title: "Zoë = talks; #2")],
                               markers: [Chapter(start: 400_000.0 / 48_000, title: "door \"1\"")])
        #expect(hits["a.mp3"]?.chapters == want, "\(String(describing: hits["a.mp3"]?.chapters))")
        #expect(hits["b.mp3"] != nil && hits["b.mp3"]?.chapters == nil)
        // A later entry with no chapters replaces the list with an empty one, not NULL.
        known.chapters = ChapterList()
        try store.apply([.archived(path: "a.mp3", fingerprints: [:], catalog: known)])
        #expect(try store.search(q).first { $0.path == "a.mp3" }?.chapters == ChapterList())
    }

    @Test func theStoredFormIsReadBackAndAnythingElseIsNil() {
        #expect(ChapterList(catalogJSON: Self.list.catalogJSON)?.markers == Self.list.markers)
        #expect(Self.list.catalogJSON.hasPrefix("{\"chapters\":[{\"start\":0,\"title\":\"Intro\"}"), "\(Self.list.catalogJSON)")
        #expect(ChapterList(catalogJSON: "not json") == nil && ChapterList(catalogJSON: "[]") == nil)
    }
}
