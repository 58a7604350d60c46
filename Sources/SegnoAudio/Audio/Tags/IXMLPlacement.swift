import Foundation
import SegnoCore

/// Moves a carried iXML's sync points with the audio (decision 0096). After `pauses` or
/// `pitch: { tempo }` the markers an output gets as `cue ` points are mapped through the time map;
/// the iXML's `SYNC_POINT`s name the same instants in samples and are mapped the same way, so an
/// editor reading either lands on the same sample, and segno reading the output back finds each
/// marker once (decision 0090, 3). Called by the encode tap at `finish`, when the map is complete,
/// for WAV and RF64 outputs (the only ones that carry iXML), only when a transform before it moved
/// time; the counts are already at the output's rate (`TagPlan.retimed`).
package enum IXMLPlacement {
    /// `xml` with each sync point segno reads as a marker (`RELATIVE`, or `ABSOLUTE` with a time
    /// reference at or before it) at its place on the output: its source second (samples / `rate`)
    /// through `maps` as `ChapterList.mapped` places a marker, rounded to the nearest sample, the
    /// time reference added back for `ABSOLUTE`. A point that lands at or after `length` (seconds;
    /// past the output's end, or in silence trimmed from it) is removed and named in the returned
    /// notes, and `SYNC_POINT_COUNT` follows. Points segno does not read as places (`GROUP_OFFSET`,
    /// another type, no readable count) and every other element are left byte for byte.
    /// - Parameters:
    ///   - rate: the output's rate in Hz, at which the counts and `timeReference` are.
    ///   - timeReference: `bext`'s time reference (samples since midnight), else iXML's own is used.
    ///   - file: the output's path, for the notes.
    static package func mapped(_ xml: [UInt8], rate: Int, timeReference: UInt64?, maps: [TimeMap], length: Double,
                               file: String) -> (xml: [UInt8], notes: [String]) {
        guard rate > 0, !maps.keepsTime else { return (xml, []) }
        let open = Array("<SYNC_POINT>".utf8), close = Array("</SYNC_POINT>".utf8)
        let fileStart = timeReference ?? IXMLMarkers.reference(in: xml)
        var edits: [(Range<Int>, [UInt8])] = []
        var notes: [String] = []
        var removed = 0
        var at = 0
        while let s = IXMLRate.find(open, in: xml, from: at), let e = IXMLRate.find(close, in: xml, from: s + open.count) {
            at = e + close.count
            let base = s + open.count
            let point = Array(xml[base..<e])
            func range(_ name: String) -> Range<Int>? { IXMLRate.range(of: name, in: point) }
            func text(_ name: String) -> String? {
                range(name).map { String(decoding: point[$0], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
            }
            let function = text("SYNC_POINT_FUNCTION") ?? ""
            guard function != "GROUP_OFFSET", let loR = range("SYNC_POINT_LOW"), let low = text("SYNC_POINT_LOW").flatMap(UInt32.init) else { continue }
            let hiR = range("SYNC_POINT_HIGH")
            let highText = text("SYNC_POINT_HIGH") ?? ""
            guard let high = highText.isEmpty ? 0 : UInt32(highText) else { continue }
            let count = UInt64(high) << 32 | UInt64(low)
            let offset: UInt64
            switch text("SYNC_POINT_TYPE")?.uppercased() ?? "" {
            case "RELATIVE": offset = 0
            case "ABSOLUTE":
                guard let fileStart, count >= fileStart else { continue }
                offset = fileStart
            default: continue
            }
            let seconds = Double(count - offset) / Double(rate)
            let placed = min(max(0, maps.reduce(seconds) { $1.toOutput($0) }), length)
            if placed >= length && length > 0 {
                let comment = IXMLMarkers.unescaped(text("SYNC_POINT_COMMENT") ?? "")
                let title = comment.isEmpty ? function : comment
                notes.append("encode: iXML sync point \"\(title.prefix(60))\" at \(ChapterTime.text(seconds)) falls at or after the end of "
                             + "\(AudioError.quoted(file)) (\(ChapterTime.text(length))); removed from its iXML")
                // The point and the white space after it (a recorder's line break).
                var end = at
                while end < xml.count, [0x20, 0x09, 0x0A, 0x0D].contains(xml[end]) { end += 1 }
                edits.append((s..<end, []))
                removed += 1
                continue
            }
            let value = offset + UInt64((placed * Double(rate)).rounded())
            guard value != count else { continue }
            let shift = { (r: Range<Int>) in (r.lowerBound + base)..<(r.upperBound + base) }
            if let hiR {
                edits.append((shift(hiR), Array(String(value >> 32).utf8)))
                edits.append((shift(loR), Array(String(value & 0xFFFF_FFFF).utf8)))
            } else if value >> 32 == 0 {
                edits.append((shift(loR), Array(String(value).utf8)))
            } else {
                // A count that outgrew 32 bits gains the high element after the low one.
                let lowClose = loR.upperBound + "</SYNC_POINT_LOW>".utf8.count
                edits.append((shift(loR), Array(String(value & 0xFFFF_FFFF).utf8)))
                edits.append((shift(lowClose..<lowClose), Array("<SYNC_POINT_HIGH>\(value >> 32)</SYNC_POINT_HIGH>".utf8)))
            }
        }
        if removed > 0, let r = IXMLRate.range(of: "SYNC_POINT_COUNT", in: xml),
           let n = Int(String(decoding: xml[r], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) {
            edits.append((r, Array(String(max(0, n - removed)).utf8)))
        }
        guard !edits.isEmpty else { return (xml, notes) }
        // The later ranges first, so the earlier ones stay valid (an insertion after its low element sorts after it).
        var out = xml
        for (r, v) in edits.enumerated().sorted(by: { ($0.element.0.lowerBound, $0.offset) > ($1.element.0.lowerBound, $1.offset) }).map(\.element) {
            out.replaceSubrange(r, with: v)
        }
        return (out, notes)
    }
}

extension IXMLPlacement {
    /// Puts `xml` in place of the iXML chunk libsndfile wrote before the audio of the closed WAV
    /// or RF64 at `temporary`: over its body, padded with spaces (white space after the root
    /// element, which XML allows), when it fits; else that chunk is renamed `JUNK` and zeroed, and
    /// the returned `iXML` chunk is to be appended with the chapters (`ChapterWriter.appendRIFF`).
    /// Walks at most 64 chunks before `data`. Called by `SndFileEncoder.finish` before the rename.
    static package func rewrite(temporary: String, path: String, xml: [UInt8]) throws -> [UInt8] {
        func fail(_ why: String) -> AudioError { .encodeFailed(path: path, detail: "iXML sync points not moved: \(why)") }
        guard let f = FileHandle(forUpdatingAtPath: temporary) else { throw fail("cannot open the file") }
        defer { try? f.close() }
        let end = try f.seekToEnd()
        var at: UInt64 = 12
        for _ in 0..<64 {
            guard at + 8 <= end else { break }
            try f.seek(toOffset: at)
            guard let head = try f.read(upToCount: 8), head.count == 8 else { break }
            let id = String(decoding: head.prefix(4), as: UTF8.self)
            let size = UInt64(head[4]) | UInt64(head[5]) << 8 | UInt64(head[6]) << 16 | UInt64(head[7]) << 24
            if id == "data" { break }
            if id == "iXML" {
                guard at + 8 + size <= end else { throw fail("its iXML chunk overruns the file") }
                if xml.count <= Int(size) {
                    try f.write(contentsOf: Data(xml + [UInt8](repeating: 0x20, count: Int(size) - xml.count)))
                    return []
                }
                try f.seek(toOffset: at)
                try f.write(contentsOf: Data(Array("JUNK".utf8)))
                try f.seek(toOffset: at + 8)
                try f.write(contentsOf: Data(count: Int(size)))
                break
            }
            at += 8 + size + (size & 1)
        }
        return ChapterWriter.chunk("iXML", xml)
    }
}
