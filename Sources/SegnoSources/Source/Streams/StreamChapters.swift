import Foundation
import SegnoCore

/// A captured segment's chapters (issue 32): one per ICY/HLS title change, from the `titles` of
/// its cue sidecar (`SegmentWriter`), each at the offset where the title arrived in the segment's
/// audio. Bounded by `ChapterLimits`; a sidecar that is missing or malformed adds nothing.
package enum StreamChapters {
    /// Largest cue sidecar read, in bytes.
    static package let sidecarLimit = 4 << 20

    static package func add(cue path: String, into m: inout RecordingMetadata) {
        guard m.chapterList.chapters.isEmpty, let f = FileHandle(forReadingAtPath: path) else { return }
        defer { try? f.close() }
        guard let data = try? f.read(upToCount: sidecarLimit), data.count < sidecarLimit,
              let obj = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let titles = obj["titles"] as? [[String: Any]] else { return }
        for t in titles {
            guard let offset = (t["offset"] as? NSNumber)?.doubleValue, let title = t["title"] as? String else { continue }
            m.addChapter(Chapter(start: offset, title: title), from: "stream's cue sidecar")
        }
        m.sortChapters()
        m.chapterList.fromStream = !m.chapterList.chapters.isEmpty
    }
}
