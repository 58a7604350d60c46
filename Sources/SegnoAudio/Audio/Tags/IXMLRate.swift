import SegnoCore
/// iXML (gallery.co.uk/ixml) is carried as it is, byte for byte, except the few elements whose
/// numbers are counted at the file's sample rate: after a rate change they are rewritten in
/// place so that an editor reading them still lands on the same instant — `FILE_SAMPLE_RATE`, the
/// BWF time reference and each sync point's `SYNC_POINT_HIGH`/`SYNC_POINT_LOW` (decision 0090).
/// Everything else — scene, take, project, notes, the timestamp and its own
/// `TIMESTAMP_SAMPLE_RATE` — is left untouched.
package enum IXMLRate {
    /// The element that holds the file's rate.
    static package let rateElement = "FILE_SAMPLE_RATE"
    /// Pairs of elements (high and low 32 bits) that mirror `bext`'s time reference.
    static package let timeReference = ("BWF_TIME_REFERENCE_HIGH", "BWF_TIME_REFERENCE_LOW")
    /// A sync point's sample count, split the same way.
    static package let syncPoint = ("SYNC_POINT_HIGH", "SYNC_POINT_LOW")

    /// `xml` with `FILE_SAMPLE_RATE` set to `to`, and the BWF time reference and every sync
    /// point's count scaled from `from` to `to` Hz; unchanged when the rate is the same or the
    /// elements are absent.
    static package func adjusted(_ xml: [UInt8], from: Int, to: Int) -> [UInt8] {
        guard from != to, from > 0, to > 0 else { return xml }
        var edits: [(Range<Int>, String)] = []
        if let r = range(of: rateElement, in: xml) { edits.append((r, String(to))) }
        edits += scaled(timeReference, in: xml[...], from: from, to: to)
        let open = Array("<SYNC_POINT>".utf8), close = Array("</SYNC_POINT>".utf8)
        var at = 0
        while let s = find(open, in: xml, from: at), let e = find(close, in: xml, from: s + open.count) {
            edits += scaled(syncPoint, in: xml[s..<e], from: from, to: to)
            at = e + close.count
        }
        // Replace the later elements first so the earlier ranges stay valid.
        var out = xml
        for (r, v) in edits.sorted(by: { $0.0.lowerBound > $1.0.lowerBound }) { out.replaceSubrange(r, with: Array(v.utf8)) }
        return out
    }

    /// The new texts of a count split in two elements (high and low 32 bits) within `part`, scaled
    /// to the nearest sample; a missing high element counts as 0 and stays missing when the
    /// scaled count fits the low one. Ranges are indices of the whole document.
    private static func scaled(_ names: (String, String), in part: ArraySlice<UInt8>, from: Int, to: Int) -> [(Range<Int>, String)] {
        let base = part.startIndex, bytes = Array(part)
        func number(_ r: Range<Int>) -> UInt64? { UInt64(String(decoding: bytes[r], as: UTF8.self).trimmed).flatMap { $0 <= UInt32.max ? $0 : nil } }
        let hiR = range(of: names.0, in: bytes)
        guard let loR = range(of: names.1, in: bytes), let lo = number(loR) else { return [] }
        let hi = hiR.map(number) ?? 0
        guard let hi else { return [] }
        let s = BroadcastInfo.scaled(hi << 32 | lo, from: from, to: to)
        let shift = { (r: Range<Int>) in (r.lowerBound + base)..<(r.upperBound + base) }
        if let hiR { return [(shift(hiR), String(s >> 32)), (shift(loR), String(s & 0xFFFF_FFFF))] }
        return s >> 32 == 0 ? [(shift(loR), String(s))] : []
    }

    /// The byte range of the text inside the first `<NAME>…</NAME>`.
    static package func range(of name: String, in xml: [UInt8]) -> Range<Int>? {
        let open = Array("<\(name)>".utf8), close = Array("</\(name)>".utf8)
        guard let start = find(open, in: xml, from: 0) else { return nil }
        let textStart = start + open.count
        guard let end = find(close, in: xml, from: textStart) else { return nil }
        return textStart..<end
    }

    /// Where `needle` first occurs in `hay` at or after `from`.
    static package func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
        guard needle.count <= hay.count else { return nil }
        var i = from
        while i + needle.count <= hay.count {
            if hay[i] == needle[0] && hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}

private extension String {
    var trimmed: String { String(self.drop { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }.reversed().drop { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }.reversed()) }
}
