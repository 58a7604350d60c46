import Foundation

/// A recording's chapters and markers as the catalogue keeps them (decision 0096): titles and
/// source seconds, as JSON text in `catalog.chapters` (SQLite and PostgreSQL alike), so `find`
/// prints a matching chapter's time from the state alone. Written with the rest of the entry
/// each time a run decodes the recording; a row catalogued before the column has none (NULL),
/// and `find` reads that recording's chapters from its file until a run catalogues it again.
extension ChapterList {
    private struct Stored: Codable {
        var chapters: [Item]
        var markers: [Item]
    }
    private struct Item: Codable {
        var start: Double
        var title: String
    }

    /// `{"chapters":[{"start":2.5,"title":"Intro"}],"markers":[…]}`: the titled ones (only a title
    /// is searched), starts in source seconds.
    public var catalogJSON: String {
        func items(_ l: [Chapter]) -> [Item] { l.filter { !$0.title.isEmpty }.map { Item(start: $0.start, title: $0.title) } }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(Stored(chapters: items(chapters), markers: items(markers)))) ?? Data("{\"chapters\":[],\"markers\":[]}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The list `catalogJSON` stored; nil when the text is not that form.
    public init?(catalogJSON text: String) {
        guard let s = try? JSONDecoder().decode(Stored.self, from: Data(text.utf8)) else { return nil }
        self.init(chapters: s.chapters.map { Chapter(start: $0.start, title: $0.title) },
                  markers: s.markers.map { Chapter(start: $0.start, title: $0.title) })
    }
}
