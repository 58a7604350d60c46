import Foundation

// The archive half of `StateBackend`: what `find`, `duplicates` and `outputs` ask of any state
// store, in values no backend owns. Each backend keeps the catalogue its own way (SQLite: FTS5;
// PostgreSQL: folded word text with a trigram index), both from `CatalogEntry.searchFields`.

/// A stored fingerprint with its recording, as `segno duplicates` reads them.
public struct StoredFingerprint: Sendable {
    /// The recording's path relative to input.root.
    public var path: String
    public var fingerprint: AudioFingerprint

    /// Every stored property: the initializer the other modules of segno use.
    package init(path: String, fingerprint: AudioFingerprint) {
        self.path = path
        self.fingerprint = fingerprint
    }
}

/// What `segno find` asks: words (all must match, each as a prefix), a recording-date range
/// (ISO 8601 dates or date-times, inclusive), and a circle around a place.
public struct CatalogQuery: Sendable {
    public var words: [String] = []
    public var from: String?
    public var to: String?
    public var near: (latitude: Double, longitude: Double, km: Double)?
    public init() {}

    /// A date for `from`/`to` in the stored form ("2024-05-01" or "2024-05-01T09:30:12Z"), or nil.
    public static func date(_ text: String) -> String? { RecordingContext.isoDate(text) }

    /// "lat,lon" or "lat,lon,km" (km defaults to 10), degrees; nil when malformed or out of range.
    public static func place(_ text: String) -> (latitude: Double, longitude: Double, km: Double)? {
        let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2 || parts.count == 3, let lat = parts[0], let lon = parts[1], abs(lat) <= 90, abs(lon) <= 180 else { return nil }
        let km = parts.count == 3 ? parts[2] : 10
        guard let km, km > 0, km <= 20_038 else { return nil }
        return (lat, lon, km)
    }
}

/// One recording found by `segno find`, best first.
public struct CatalogHit: Sendable {
    public var path: String
    public var title: String
    public var recorded: String
    public var latitude: Double?
    public var longitude: Double?
    public var duration: Double?
    /// Kilometres from the `near` point, when asked.
    public var distanceKm: Double?
    /// FTS5's bm25 rank (lower is better), when words were given.
    public var rank: Double?
    /// Every output recorded for it: files relative to output.root, uploaded objects.
    public var outputs: [String]
    /// Its chapters and markers as the catalogue keeps them (`ChapterList.catalogJSON`, source
    /// seconds); nil when it was catalogued before they were kept (decision 0096).
    public var chapters: ChapterList?

    /// Every stored property: the initializer the other modules of segno use.
    package init(path: String, title: String, recorded: String, latitude: Double? = nil, longitude: Double? = nil, duration: Double? = nil, distanceKm: Double? = nil, rank: Double? = nil, outputs: [String],
                 chapters: ChapterList? = nil) {
        self.chapters = chapters
        self.path = path
        self.title = title
        self.recorded = recorded
        self.latitude = latitude
        self.longitude = longitude
        self.duration = duration
        self.distanceKm = distanceKm
        self.rank = rank
        self.outputs = outputs
    }
}

/// One searchable field of the catalogue: its column name, the weight a match in it has in the
/// ranking, and its text in an entry. `CatalogEntry.searchFields` lists them in column order.
public struct CatalogField: Sendable {
    /// The column (SQLite's `catalog` and `catalog_fts`); PostgreSQL keeps the fields in one array in this order.
    public var column: String
    /// How much a word found here counts (title 10, tags 3, name 1: SQLite's bm25 weights).
    public var weight: Double
    /// The field's text in an entry.
    public var text: @Sendable (CatalogEntry) -> String

    public init(column: String, weight: Double, text: @escaping @Sendable (CatalogEntry) -> String) {
        self.column = column
        self.weight = weight
        self.text = text
    }
}

extension CatalogEntry {
    /// The fields `find` searches, in column order. A new searchable field is a property of the
    /// entry and one line here; SQLite also needs a migration adding its column to `catalog` and
    /// `catalog_fts` (FTS5 tables cannot gain columns in place); PostgreSQL keeps the fields in
    /// one array and needs nothing.
    public static let searchFields: [CatalogField] = [
        CatalogField(column: "title", weight: 10) { $0.title },
        CatalogField(column: "tags", weight: 3) { $0.tags },
        CatalogField(column: "name", weight: 1) { $0.name },
        CatalogField(column: "spoken", weight: 2) { $0.spoken },
    ]
}

/// The words of a text as `find` compares them, the same way for every backend: split where a
/// character is neither letter nor digit, case and accents folded ("Café" → "cafe"), each word in
/// composed form (Hangul stays in syllables: "서울" is a prefix of "서울에서", "서" is not one of "석").
public enum SearchWords {
    /// The folded words of `text`, in order.
    public static func of(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        for ch in text {
            if ch.isLetter || ch.isNumber {
                current.append(ch)
            } else if !current.isEmpty {
                words.append(fold(current))
                current = ""
            }
        }
        if !current.isEmpty { words.append(fold(current)) }
        return words
    }

    /// Case and accents folded, canonical composition.
    static package func fold(_ word: String) -> String {
        word.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).precomposedStringWithCanonicalMapping
    }

    /// The query terms of the user's words: each word's folded parts (a phrase: "rock-n-roll" is
    /// "rock n roll", the last part a prefix); words with no letter or digit dropped.
    public static func terms(_ words: [String]) -> [[String]] {
        words.flatMap { $0.split(whereSeparator: \.isWhitespace) }.map { of(String($0)) }.filter { !$0.isEmpty }
    }
}
