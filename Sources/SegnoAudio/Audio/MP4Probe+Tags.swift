import Foundation
import SegnoCore

extension BoxReader {
    /// The tag names ffprobe gives MP4 metadata items (iTunes `ilst` keys and QuickTime `udta`
    /// strings); others are not read.
    static package let tagNames: [String: String] = [
        "©nam": "title", "©ART": "artist", "aART": "album_artist", "©alb": "album", "©day": "date",
        "©cmt": "comment", "©gen": "genre", "©wrt": "composer", "©too": "encoder", "cprt": "copyright",
        "©cpy": "copyright", "desc": "description", "ldes": "synopsis", "©lyr": "lyrics", "©grp": "grouping",
        "©xyz": "location", "©mak": "make", "©mod": "model", "©enc": "encoder", "©swr": "encoder",
    ]

    /// Tags of the `moov` box, keys lowercased as ffprobe names them: `udta/meta/ilst` items
    /// (iTunes), `udta` strings (QuickTime, where an iPhone puts `©xyz`), and `meta` with `keys`
    /// (QuickTime metadata: "com.apple.quicktime.location.iso6709", …).
    package func tags(_ moov: [Box]) -> [String: String] {
        var tags: [String: String] = [:]
        if let udta = moov.first(where: { $0.type == "udta" }), let items = children(udta.body, udta.end) {
            for item in items {
                if item.type == "meta" {
                    ilstTags(meta: item, into: &tags)
                } else if item.type == "loci" {
                    if let s = location3GPP(item) { tags["location"] = s }
                } else if let key = Self.tagNames[item.type], let s = quickTimeString(item) {
                    tags[key] = s
                }
            }
        }
        if let meta = moov.first(where: { $0.type == "meta" }) { ilstTags(meta: meta, into: &tags) }
        return tags
    }

    /// `meta` is a full box in MP4 and a plain one in QuickTime: find where its children start.
    private func metaChildren(_ meta: Box) -> [Box]? {
        for skip in [Int64(4), 0] {
            if let b = read(meta.body + skip + 4, 4), String(decoding: b, as: UTF8.self) == "hdlr" {
                return children(meta.body + skip, meta.end)
            }
        }
        return nil
    }

    private func ilstTags(meta: Box, into tags: inout [String: String]) {
        guard let boxes = metaChildren(meta), let ilst = boxes.first(where: { $0.type == "ilst" }),
              let items = children(ilst.body, ilst.end) else { return }
        var keyNames: [String] = []
        if let keys = boxes.first(where: { $0.type == "keys" }), let list = children(keys.body + 8, keys.end) {
            // Each key: size, namespace ('mdta'), name.
            keyNames = list.map { k in read(k.body, Int(min(k.end - k.body, 1024))).map { String(decoding: $0, as: UTF8.self) } ?? "" }
        }
        for item in items {
            let key: String?
            if !keyNames.isEmpty, let raw = read(item.start + 4, 4), case let index = Int(be32(raw, 0)), index >= 1, index <= keyNames.count {
                key = keyNames[index - 1].lowercased()
            } else if item.type == "----" {
                key = freeformName(item)
            } else {
                key = Self.tagNames[item.type]
            }
            guard let key, !key.isEmpty, let value = dataString(item) else { continue }
            tags[key] = value
        }
    }

    /// The text of an item's `data` box (UTF-8 or UTF-16); nil for numbers, pictures and the rest.
    private func dataString(_ item: Box) -> String? {
        guard let data = children(item.body, item.end)?.first(where: { $0.type == "data" }),
              data.end - data.body >= 8, data.end - data.body <= 1 << 16,
              let b = read(data.body, Int(data.end - data.body)) else { return nil }
        let type = be32(b, 0) & 0x00FF_FFFF
        let payload = Array(b[8...])
        switch type {
        case 1: return String(decoding: payload, as: UTF8.self)
        case 2: return String(decoding: stride(from: 0, to: payload.count - 1, by: 2).map { UInt16(payload[$0]) << 8 | UInt16(payload[$0 + 1]) }, as: UTF16.self)
        default: return nil
        }
    }

    /// The `name` of a `----` item ("iTunSMPB"), lowercased.
    private func freeformName(_ item: Box) -> String? {
        guard let name = children(item.body, item.end)?.first(where: { $0.type == "name" }),
              name.end - name.body > 4, name.end - name.body <= 1024,
              let b = read(name.body + 4, Int(name.end - name.body - 4)) else { return nil }
        return String(decoding: b, as: UTF8.self).lowercased()
    }

    /// A 3GPP location box as ffprobe prints it: "+37.3349-122.0090/" (latitude, longitude, the
    /// altitude when not 0, then "/" and the place name). Layout: version/flags, language (2),
    /// place name (NUL-terminated), role (1), longitude, latitude, altitude (16.16 fixed).
    private func location3GPP(_ item: Box) -> String? {
        guard item.end - item.body <= 4096, let b = read(item.body, Int(item.end - item.body)), b.count > 6,
              let nul = b[6...].firstIndex(of: 0), nul + 14 <= b.count else { return nil }
        let place = String(decoding: b[6..<nul], as: UTF8.self)
        func fixed(_ at: Int) -> Double { Double(Int32(bitPattern: be32(b, at))) / 65536 }
        let longitude = fixed(nul + 2), latitude = fixed(nul + 6), altitude = fixed(nul + 10)
        var s = String(format: "%+08.4f%+09.4f", latitude, longitude)
        if altitude != 0 { s += String(format: "%+f", altitude) }
        return s + "/" + place
    }

    /// A QuickTime user-data string: 16-bit length, 16-bit language, text.
    private func quickTimeString(_ item: Box) -> String? {
        guard item.end - item.body >= 4, let head = read(item.body, 4) else { return nil }
        let length = Int(head[0]) << 8 | Int(head[1])
        guard length > 0, item.body + 4 + Int64(length) <= item.end, let text = read(item.body + 4, length) else { return nil }
        return String(decoding: text, as: UTF8.self)
    }
}
