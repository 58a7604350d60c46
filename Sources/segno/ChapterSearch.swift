import Foundation
import SegnoAudio
import SegnoCore

/// `find`'s chapter and marker matches (issue 32): the catalogue finds a recording by its chapter
/// titles and keeps its chapters and markers with their times on the source's timeline (decision
/// 0096); this picks the matching ones. Called when words were given, once per hit.
enum ChapterSearch {
    /// The chapters and markers of the recording at `path` (relative to `root`) whose title holds
    /// every word (case and accents ignored), in order of start: from `stored` (the catalogue's),
    /// else — a recording catalogued before the catalogue kept them — read from the file (folder
    /// sources only).
    static func hits(words: [String], stored: ChapterList?, root: String, path: String) -> [Chapter] {
        guard !words.isEmpty else { return [] }
        let list: ChapterList
        if let stored {
            list = stored
        } else {
            guard !root.hasPrefix("s3://") else { return [] }
            let file = path.hasPrefix("/") ? path : (root as NSString).appendingPathComponent(path)
            guard FileManager.default.fileExists(atPath: file) else { return [] }
            list = TagReader.read(path: file).chapterList
        }
        let wanted = words.map(fold)
        return (list.chapters + list.markers).filter { c in
            let title = fold(c.title)
            return wanted.allSatisfy { title.contains($0) }
        }.sorted { $0.start < $1.start }
    }

    static func fold(_ s: String) -> String { s.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }
}
