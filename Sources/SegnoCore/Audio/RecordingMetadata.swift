import Foundation

/// One tag value under its name. `key` is segno's normalised name (TagLib's property names in
/// lower case: `title`, `artist`, `album`, `date`, `comment`, `genre`, `tracknumber`, `location`…)
/// or, in `RecordingMetadata.raw`, the container's own key (`TIT2`, `©nam`, `INAM`, `TITLE`).
public struct TagEntry: Sendable, Equatable, Codable {
    public var key: String
    public var value: String
    public init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }
}

/// An embedded picture (FLAC `PICTURE`, Vorbis `METADATA_BLOCK_PICTURE`, ID3 `APIC`, MP4 `covr`).
public struct EmbeddedPicture: Sendable, Equatable {
    /// ID3v2/FLAC picture type: 3 is the front cover.
    public var type: Int
    public var mime: String
    public var description: String
    /// Bytes.
    public var size: Int
    /// The image; nil when only described (reading for `info`, or over `TagReader.pictureLimit`).
    public var data: [UInt8]?

    public init(type: Int, mime: String, description: String, size: Int, data: [UInt8]?) {
        self.type = type
        self.mime = mime
        self.description = description
        self.size = size
        self.data = data
    }

    /// "front cover, image/jpeg, 12,345 bytes".
    public var summary: String {
        let kind = Self.typeNames[type] ?? "picture type \(type)"
        let d = description.isEmpty ? "" : " \"\(description)\""
        return "\(kind)\(d), \(mime.isEmpty ? "unknown type" : mime), \(size) bytes"
    }

    static package let typeNames: [Int: String] = [0: "other", 1: "file icon", 2: "other file icon", 3: "front cover", 4: "back cover",
                                           5: "leaflet page", 6: "media", 7: "lead artist", 8: "artist", 9: "conductor",
                                           10: "band", 11: "composer", 12: "lyricist", 13: "recording location",
                                           14: "during recording", 15: "during performance", 16: "screen capture",
                                           17: "bright coloured fish", 18: "illustration", 19: "band logo", 20: "publisher logo"]
}

/// Everything a recording carries besides its audio: tags under normalised and raw names,
/// pictures, BWF `bext` and `iXML`. Read once per recording when its source is opened
/// (`TagReader.read`), carried to every encode tap and the metadata tap.
public struct RecordingMetadata: Sendable, Equatable {
    /// Normalised names, in the order read; a name may repeat (several artists).
    public var tags: [TagEntry] = []
    /// The container's own keys, as stored.
    public var raw: [TagEntry] = []
    public var pictures: [EmbeddedPicture] = []
    /// The Broadcast Wave `bext` chunk.
    public var broadcast: BroadcastInfo?
    /// The `iXML` chunk, bytes as stored (trailing NUL padding removed).
    public var ixml: [UInt8]?
    /// Chapters and markers, source seconds, sorted by start (`TagReader`, `ChapterReader`).
    public var chapterList = ChapterList()
    /// What was damaged or left out, one line each, without the file name ("ID3v2 frame TIT2: …").
    public var warnings: [String] = []
    /// Bytes of text in `tags` and in `raw`, held against `TagLimits.totalBytes`.
    private var tagBytes = 0, rawBytes = 0
    /// Vorbis chapter comments among `tags` and `raw`, held against `ChapterLimits.vorbisKeys`
    /// instead of `TagLimits.values`.
    private var tagChapterKeys = 0, rawChapterKeys = 0

    public init() {}

    public var isEmpty: Bool { tags.isEmpty && pictures.isEmpty && broadcast == nil && ixml == nil && chapterList.isEmpty }

    /// The first value of a normalised name (case-insensitive), or of a raw key when no
    /// normalised name matches (`TIT2`, `©nam`, `TXXX:mood`).
    public func value(_ name: String) -> String? {
        let k = name.lowercased()
        if let t = tags.first(where: { $0.key == k }) { return t.value }
        return raw.first(where: { $0.key.lowercased() == k })?.value
    }

    /// The normalised tags as one value per name (repeated names joined by "; "), the form
    /// `SourceInfo.tags` keeps. Linear in the number of values.
    public var flattened: [String: String] {
        var out: [String: String] = [:]
        var seen: [String: Set<String>] = [:]
        for t in tags where !t.value.isEmpty {
            guard seen[t.key, default: []].insert(t.value).inserted else { continue }
            if let v = out[t.key] { out[t.key] = v + "; " + t.value } else { out[t.key] = t.value }
        }
        return out
    }

    /// Adds a normalised tag unless the same name already has this value, within `TagLimits`
    /// (a value over `valueBytes`, past `totalBytes` or past `values` values is dropped with a warning).
    mutating package func add(_ key: String, _ value: String) {
        let chapter = ChapterLimits.isVorbisChapterKey(key)
        guard !value.isEmpty, !tags.contains(where: { $0.key == key && $0.value == value }),
              admit(key, bytes: value.utf8.count, count: chapter ? tagChapterKeys : tags.count - tagChapterKeys, chapter: chapter,
                    total: tagBytes, what: "tag values") else { return }
        tagBytes += key.utf8.count + value.utf8.count
        if chapter { tagChapterKeys += 1 }
        tags.append(TagEntry(key, value))
    }

    /// Adds a value under the container's own key (`TIT2`, `©nam`), within `TagLimits`.
    mutating package func addRaw(_ key: String, _ value: String) {
        let chapter = ChapterLimits.isVorbisChapterKey(key)
        guard admit(key, bytes: value.utf8.count, count: chapter ? rawChapterKeys : raw.count - rawChapterKeys, chapter: chapter,
                    total: rawBytes, what: Self.rawWhat) else { return }
        rawBytes += key.utf8.count + value.utf8.count
        if chapter { rawChapterKeys += 1 }
        raw.append(TagEntry(key, value))
    }

    /// Records a value the tag reader kept out (it applies `valueBytes` and `totalBytes` itself,
    /// so that its answer stays small) with the warning `add` would give. Called while reading.
    mutating package func dropped(_ key: String, bytes: Int, raw isRaw: Bool, pastTotal: Bool) {
        if pastTotal { warnPastTotal(key, what: isRaw ? Self.rawWhat : "tag values") } else { warnTooLong(key, bytes: bytes) }
    }

    private static let rawWhat = "values under the container's own keys"

    /// True when a value of `bytes` may be added to a list of `count` values whose text (keys and
    /// values) is `total` bytes; else warns (once per cause for counts and totals). Keys count:
    /// a million empty values is text too. A Vorbis chapter comment (`chapter`) is counted among
    /// its own kind, against `ChapterLimits.vorbisKeys`.
    private mutating func admit(_ key: String, bytes: Int, count: Int, chapter: Bool = false, total: Int, what: String) -> Bool {
        if bytes > TagLimits.valueBytes {
            warnTooLong(key, bytes: bytes)
            return false
        }
        let most = chapter ? ChapterLimits.vorbisKeys : TagLimits.values
        guard count < most else {
            let line = "more than \(most) \(chapter ? "Vorbis chapter comments" : what); the rest are dropped"
            if !warnings.contains(line) { warnings.append(line) }
            return false
        }
        let text = key.utf8.count + bytes
        guard total + text <= TagLimits.totalBytes else {
            warnPastTotal(key, what: what)
            return false
        }
        return true
    }

    private mutating func warnTooLong(_ key: String, bytes: Int) {
        warnings.append("tag \(key): a value of \(bytes) bytes is over the limit of \(TagLimits.valueBytes) bytes; dropped")
    }

    private mutating func warnPastTotal(_ key: String, what: String) {
        let line = "\(what) past \(TagLimits.totalBytes) bytes of text in all are dropped"
        guard !warnings.contains(where: { $0.hasPrefix(line) }) else { return }
        warnings.append(line + " (from tag \(key) on)")
    }
}
