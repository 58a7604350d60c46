import SegnoCore
/// What an encode writes besides audio: `encode: { tags: keep | none, set: { title: "{title}" } }`,
/// `convert --no-tags --tag KEY=VALUE`. Part of the encode's options, so changing it re-runs the
/// encode step.
public struct TagPolicy: Sendable {
    /// Carry the source's tags, pictures, `bext` and `iXML` (the default).
    public var keep: Bool
    /// Tags to set, by normalised name (lower case), as templates; they replace the source's
    /// values of that name, and an empty result removes the name.
    public var set: [(key: String, value: PathTemplate)]

    public init(keep: Bool = true, set: [(key: String, value: PathTemplate)] = []) {
        self.keep = keep
        self.set = set
    }

    /// True for a tag name `set` and `--tag` take: letters, digits, `_`, `-`, `:` and `.`.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && name.allSatisfy { $0.isLetter || $0.isNumber || "_-:.".contains($0) }
    }

    /// Options for the stage's fingerprint: none when it is the default, so outputs made before
    /// tags were carried are not rewritten by an upgrade (`--force=encode` re-tags them).
    package var options: [(String, String)] {
        (keep ? [] : [("tags", "none")]) + set.map { ("set." + $0.key, $0.value.text) }
    }
}

/// The metadata one encode writes, resolved for one recording when its tap is made.
public struct TagPlan: Sendable {
    /// Normalised names (lower case) and values, in order; a name may repeat.
    public var tags: [TagEntry] = []
    public var pictures: [EmbeddedPicture] = []
    /// `bext` with its time reference already counted at the output's rate (`retimed`).
    public var broadcast: BroadcastInfo?
    public var ixml: [UInt8]?
    /// The rate the source's time references are counted at, in Hz.
    public var sourceRate = 0
    /// Chapters and markers, source seconds; mapped to the output's place when written.
    public var chapters = ChapterList()

    public var isEmpty: Bool { tags.isEmpty && pictures.isEmpty && broadcast == nil && ixml == nil }

    /// Names read from `bext` that travel in the chunk itself (or not at all), not as tags.
    static package let broadcastOnly: Set<String> = ["time_reference", "origination"]

    /// The plan for one recording: the source's metadata unless `policy.keep` is false, then the
    /// `set` templates resolved against `context`.
    public init(policy: TagPolicy, context: RecordingContext) throws(TemplateError) {
        let m = context.metadata
        sourceRate = context.source?.sampleRate ?? 0
        if policy.keep {
            tags = m.tags.filter { !TagNames.technical.contains($0.key) && !Self.broadcastOnly.contains($0.key) && !ChapterReader.isVorbisChapterKey($0.key) }
            chapters = m.chapterList
            // A BWF's origination is its date for containers without bext.
            if !tags.contains(where: { $0.key == "date" }), let o = m.value("origination") { tags.append(TagEntry("date", o)) }
            // MP4 udta ©xyz (an iPhone's place) is read by the MP4 probe, not TagLib.
            if !tags.contains(where: { $0.key == "location" }), let l = context.source?.tags?["location"] { tags.append(TagEntry("location", l)) }
            pictures = m.pictures.filter { $0.data != nil }
            broadcast = m.broadcast
            ixml = m.ixml
        }
        for (key, template) in policy.set {
            let value = try template.resolveRelative(context)
            tags.removeAll { $0.key == key }
            if !value.isEmpty { tags.append(TagEntry(key, value)) }
        }
    }

    /// `bext` and `iXML` for an output at `rate` Hz: the time reference counted at the new rate
    /// (still the first sample's instant), and iXML's rate-dependent elements with it.
    public func retimed(to rate: Int) -> TagPlan {
        var p = self
        guard sourceRate > 0, rate != sourceRate else { return p }
        if var b = broadcast {
            b.timeReference = BroadcastInfo.scaled(b.timeReference, from: sourceRate, to: rate)
            p.broadcast = b
        }
        if let x = ixml { p.ixml = IXMLRate.adjusted(x, from: sourceRate, to: rate) }
        return p
    }

    /// The first value of a name.
    package func value(_ key: String) -> String? { tags.first { $0.key == key }?.value }

    /// Largest FLAC metadata block, in bytes: its length field has 24 bits.
    static package let flacBlockLimit = (1 << 24) - 1
    /// Largest ID3v2 tag, in bytes: its size is a 28-bit syncsafe integer.
    static package let id3v2TagLimit = (1 << 28) - 1

    /// Drops the values and pictures `format`'s fields cannot hold (a FLAC Vorbis comment block
    /// or PICTURE block over 16 MiB, an ID3v2 tag over 256 MiB), so nothing is ever written with
    /// a wrapped length. Called once per encode tap when it is made; returns one line per item
    /// dropped, for the run's warnings.
    mutating package func fit(_ format: OutputFormat) -> [String] {
        let limit: Int, perValue: Int, perPicture: Int
        switch format {
        case .flac: (limit, perValue, perPicture) = (Self.flacBlockLimit - 64, 5, 32)  // vendor string and counts
        case .mp3, .wav, .aiff: (limit, perValue, perPicture) = (Self.id3v2TagLimit - 64, 16, 16)
        default: return []
        }
        var dropped: [String] = []
        var used = 0
        tags = tags.filter { t in
            let size = perValue + t.key.utf8.count + t.value.utf8.count
            if used + size > limit {
                dropped.append("tag \(t.key): a value of \(t.value.utf8.count) bytes does not fit the \(format.rawValue) tag's \(limit) bytes; dropped")
                return false
            }
            used += size
            return true
        }
        pictures = pictures.filter { p in
            let size = perPicture + p.mime.utf8.count + p.description.utf8.count + (p.data?.count ?? 0)
            // FLAC keeps each picture in a block of its own; ID3v2 keeps them in the one tag.
            let fits = format == .flac ? size <= Self.flacBlockLimit : used + size <= limit
            if !fits { dropped.append("picture (\(p.summary)) does not fit a \(format.rawValue) tag; dropped"); return false }
            if format != .flac { used += size }
            return true
        }
        return dropped
    }
}
