import SegnoCore
/// iXML (gallery.co.uk/ixml) is carried as it is, byte for byte, except the few elements whose
/// numbers are counted at the file's sample rate: after a rate change they are rewritten in
/// place so that an editor reading them still lands on the same instant. Everything else — scene,
/// take, project, notes, the timestamp and its own `TIMESTAMP_SAMPLE_RATE` — is left untouched.
package enum IXMLRate {
    /// The element that holds the file's rate.
    static package let rateElement = "FILE_SAMPLE_RATE"
    /// Pairs of elements (high and low 32 bits) that mirror `bext`'s time reference.
    static package let timeReference = ("BWF_TIME_REFERENCE_HIGH", "BWF_TIME_REFERENCE_LOW")

    /// `xml` with `FILE_SAMPLE_RATE` set to `to` and the BWF time reference scaled from `from`
    /// to `to` Hz; unchanged when the rate is the same or the elements are absent.
    static package func adjusted(_ xml: [UInt8], from: Int, to: Int) -> [UInt8] {
        guard from != to, from > 0, to > 0 else { return xml }
        var out = xml
        if let r = range(of: rateElement, in: out) { out.replaceSubrange(r, with: Array(String(to).utf8)) }
        let (hiName, loName) = timeReference
        if let hiR = range(of: hiName, in: out), let loR = range(of: loName, in: out),
           let hi = UInt64(String(decoding: out[hiR], as: UTF8.self).trimmed),
           let lo = UInt64(String(decoding: out[loR], as: UTF8.self).trimmed), hi <= UInt32.max, lo <= UInt32.max {
            let scaled = BroadcastInfo.scaled(hi << 32 | lo, from: from, to: to)
            // Replace the later element first so the earlier range stays valid.
            let pairs = [(hiR, String(scaled >> 32)), (loR, String(scaled & 0xFFFF_FFFF))].sorted { $0.0.lowerBound > $1.0.lowerBound }
            for (r, v) in pairs { out.replaceSubrange(r, with: Array(v.utf8)) }
        }
        return out
    }

    /// The byte range of the text inside the first `<NAME>…</NAME>`.
    static package func range(of name: String, in xml: [UInt8]) -> Range<Int>? {
        let open = Array("<\(name)>".utf8), close = Array("</\(name)>".utf8)
        guard let start = find(open, in: xml, from: 0) else { return nil }
        let textStart = start + open.count
        guard let end = find(close, in: xml, from: textStart) else { return nil }
        return textStart..<end
    }

    private static func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
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
