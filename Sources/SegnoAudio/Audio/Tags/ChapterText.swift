import SegnoCore

/// How `segno info` shows chapters and markers: in its line, and as `info --json`'s
/// `chapters: [{start, end?, title}]` and `markers: [...]` (seconds, three decimals).
package enum ChapterText {
    /// ", chapters: 00:00:00.000 "Intro", 00:01:00.000 "Talk", markers: …" (none: "").
    static package func summary(_ l: ChapterList) -> String {
        func list(_ name: String, _ cs: [Chapter]) -> String {
            cs.isEmpty ? "" : ", \(name): " + cs.map { "\(ChapterTime.text($0.start)) " + JSONValue.string($0.title).serialized() }.joined(separator: ", ")
        }
        return list("chapters", l.chapters) + list("markers", l.markers)
    }

    static package func jsonFields(_ l: ChapterList) -> [(String, JSONValue)] {
        func json(_ c: Chapter) -> JSONValue {
            var f: [(String, JSONValue)] = [("start", JSONValue.rounded(c.start, places: 3))]
            if let e = c.end { f.append(("end", JSONValue.rounded(e, places: 3))) }
            f.append(("title", .string(c.title)))
            return .object(f)
        }
        var fields: [(String, JSONValue)] = []
        if !l.chapters.isEmpty { fields.append(("chapters", .array(l.chapters.map(json)))) }
        if !l.markers.isEmpty { fields.append(("markers", .array(l.markers.map(json)))) }
        return fields
    }
}
