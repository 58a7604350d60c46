import Foundation
import SegnoAudio
import SegnoCore

/// `find`'s chapter and marker matches (issue 32): the catalogue finds a recording by its chapter
/// titles; this reads the matching chapters back from the source, with their times on the
/// source's timeline. Folder sources only; read when words were given, once per hit.
enum ChapterSearch {
    /// The chapters and markers of the recording at `path` (relative to `root`) whose title holds
    /// every word (case and accents ignored), in order of start.
    static func hits(words: [String], root: String, path: String) -> [Chapter] {
        guard !words.isEmpty, !root.hasPrefix("s3://") else { return [] }
        let file = path.hasPrefix("/") ? path : (root as NSString).appendingPathComponent(path)
        guard FileManager.default.fileExists(atPath: file) else { return [] }
        let list = TagReader.read(path: file).chapterList
        let wanted = words.map(fold)
        return (list.chapters + list.markers).filter { c in
            let title = fold(c.title)
            return wanted.allSatisfy { title.contains($0) }
        }.sorted { $0.start < $1.start }
    }

    static func fold(_ s: String) -> String { s.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }
}
