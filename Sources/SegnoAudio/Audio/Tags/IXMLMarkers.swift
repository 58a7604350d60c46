import SegnoCore

/// Reads a BWF's iXML sync points as markers (issue 32, decision 0090): each
/// `SYNC_POINT_LIST/SYNC_POINT` with a `SYNC_POINT_TYPE` of `RELATIVE` (a sample count from the
/// file's first sample) or `ABSOLUTE` (samples since midnight, less the file's time reference:
/// `bext`'s, else iXML's `BWF_TIME_REFERENCE_*`, else its `TIMESTAMP_SAMPLES_SINCE_MIDNIGHT_*`),
/// the count split in `SYNC_POINT_HIGH`/`SYNC_POINT_LOW` 32-bit halves. Titled by
/// `SYNC_POINT_COMMENT`, else `SYNC_POINT_FUNCTION`. A `GROUP_OFFSET` point (a place on another
/// recorder's clock, not in this file) is left out, and so is a point within one sample of a
/// `cue ` point already read. Called by `ChunkTags` after the `cue ` chunk, at the `fmt ` rate; the iXML is
/// at most `ChunkTags.limit` bytes, scanned once, and `ChapterLimits` bounds the markers kept.
package enum IXMLMarkers {
    static package func read(_ xml: [UInt8], rate: Int, timeReference: UInt64?, into m: inout RecordingMetadata) {
        guard rate > 0 else { return }
        let open = Array("<SYNC_POINT>".utf8), close = Array("</SYNC_POINT>".utf8)
        // Samples of the markers and chapter starts already read (the cue chunk's).
        let known = Set((m.chapterList.markers + m.chapterList.chapters).map { Int64(($0.start * Double(rate)).rounded()) })
        // Read once, for the ABSOLUTE points.
        let fileStart = timeReference ?? Self.reference(in: xml)
        var at = 0
        while let s = IXMLRate.find(open, in: xml, from: at) {
            guard let e = IXMLRate.find(close, in: xml, from: s + open.count) else {
                m.warnings.append("iXML SYNC_POINT at byte \(s) is not closed; the rest are left out")
                return
            }
            at = e + close.count
            let point = Array(xml[(s + open.count)..<e])
            func field(_ name: String) -> String? {
                IXMLRate.range(of: name, in: point).map { unescaped(BroadcastInfo.decode(Array(point[$0]))).trimmingCharacters(in: .whitespacesAndNewlines) }
            }
            let function = field("SYNC_POINT_FUNCTION") ?? "", comment = field("SYNC_POINT_COMMENT") ?? ""
            let title = comment.isEmpty ? function : comment
            guard function != "GROUP_OFFSET" else { continue }
            let highText = field("SYNC_POINT_HIGH") ?? ""
            guard let low = field("SYNC_POINT_LOW").flatMap(UInt32.init), let high = highText.isEmpty ? 0 : UInt32(highText) else {
                m.warnings.append("iXML sync point \"\(title.prefix(60))\" has no SYNC_POINT_LOW/HIGH sample count; left out")
                continue
            }
            var sample = UInt64(high) << 32 | UInt64(low)
            switch field("SYNC_POINT_TYPE")?.uppercased() ?? "" {
            case "RELATIVE":
                break
            case "ABSOLUTE":
                guard let fileStart, sample >= fileStart else {
                    m.warnings.append("iXML sync point \"\(title.prefix(60))\" is ABSOLUTE but " + (fileStart == nil ? "the file has no time reference" : "falls before the file's first sample") + "; left out")
                    continue
                }
                sample -= fileStart
            case let other:
                m.warnings.append("iXML sync point \"\(title.prefix(60))\" has SYNC_POINT_TYPE \(other.isEmpty ? "missing" : String(other.prefix(40))), neither RELATIVE nor ABSOLUTE; left out")
                continue
            }
            guard sample < UInt64(Int64.max / 2), !(-1...1).contains(where: { known.contains(Int64(sample) + $0) }) else { continue }
            m.addChapter(Chapter(start: Double(sample) / Double(rate), title: title), marker: true, from: "iXML")
        }
    }

    /// The file's start in samples since midnight as iXML states it, when `bext` does not.
    static package func reference(in xml: [UInt8]) -> UInt64? {
        for (hi, lo) in [IXMLRate.timeReference, ("TIMESTAMP_SAMPLES_SINCE_MIDNIGHT_HI", "TIMESTAMP_SAMPLES_SINCE_MIDNIGHT_LO")] {
            func value(_ name: String) -> UInt32? {
                IXMLRate.range(of: name, in: xml).flatMap { UInt32(String(decoding: xml[$0], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) }
            }
            if let h = value(hi), let l = value(lo) { return UInt64(h) << 32 | UInt64(l) }
        }
        return nil
    }

    /// XML's five predefined entities and numeric character references replaced.
    static package func unescaped(_ s: String) -> String {
        guard s.contains("&") else { return s }
        var out = "", rest = Substring(s)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            rest = rest[amp...]
            guard let semi = rest.prefix(12).firstIndex(of: ";") else { out.append("&"); rest = rest.dropFirst(); continue }
            let name = rest[rest.index(after: rest.startIndex)..<semi]
            let named = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'"][String(name)]
            let code = name.hasPrefix("#x") ? UInt32(name.dropFirst(2), radix: 16) : name.hasPrefix("#") ? UInt32(name.dropFirst()) : nil
            if let r = named ?? code.flatMap(Unicode.Scalar.init).map({ String(Character($0)) }) {
                out += r
                rest = rest[rest.index(after: semi)...]
            } else {
                out.append("&")
                rest = rest.dropFirst()
            }
        }
        return out + rest
    }
}
