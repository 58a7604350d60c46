import Foundation

/// What a chain knows about the recording it is processing: its names (for path templates
/// and metadata) and, once opened, its audio facts. Built by the runner or by `convert`.
public struct RecordingContext: Sendable {
    /// The source file, absolute.
    public var sourcePath: String
    /// The source relative to the input root, with `/` separators ("2024/memo 1.m4a").
    public var relativePath: String
    /// The source's modification time.
    public var modified: Date
    /// Audio facts from the decoder; nil until the file is opened.
    public var source: SourceInfo?
    /// Folder that every output must stay inside (absolute).
    public var outputRoot: String
    /// Extra template values from other stages or decoders (`title`, `recorded`, `zoom`).
    public var extra: [String: String] = [:]
    /// Tags, pictures, `bext` and `iXML` read from the source (`RecordingSource.metadata`);
    /// empty until `carry` is called.
    public var metadata = RecordingMetadata()
    /// The run's worker pool, for a tap that waits for other recordings (a `transcribe` batch,
    /// decision 0088); nil outside `segno run` (convert, one-off use): such a tap then works alone.
    public var parking: WorkerParking? = nil

    public init(sourcePath: String, relativePath: String, modified: Date, source: SourceInfo? = nil, outputRoot: String) {
        self.sourcePath = sourcePath
        self.relativePath = relativePath
        self.modified = modified
        self.source = source
        self.outputRoot = outputRoot
    }

    /// Keeps what the source carries and adds its normalised tags to `source.tags` (they win over
    /// the decoder's own, which only MP4 and ffprobe-read files have). Called once per recording,
    /// after the source is opened and `source` is set.
    public mutating func carry(_ metadata: RecordingMetadata) {
        self.metadata = metadata
        guard var info = source, !metadata.tags.isEmpty else { return }
        var tags = info.tags ?? [:]
        for (k, v) in metadata.flattened { tags[k] = v }
        info.tags = tags
        source = info
    }

    /// File name with extension ("memo 1.m4a").
    public var name: String { relativePath.split(separator: "/").last.map(String.init) ?? relativePath }
    /// File name without its last extension ("memo 1"). A name that is only a dot-prefixed word
    /// (".hidden") keeps it.
    public var stem: String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }
    /// Extension without the dot, as written ("m4a"); empty when none.
    public var ext: String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return String(name[name.index(after: dot)...])
    }
    /// Folder relative to the input root, empty at the top ("2024").
    public var dir: String {
        guard let slash = relativePath.lastIndex(of: "/") else { return "" }
        return String(relativePath[..<slash])
    }

    /// The recording's title, as written: `extra["title"]` when a stage set one, else the source's
    /// `title` tag (MP4 `©nam`, read through ffprobe), else the stem. The `{title}` template variable.
    public var title: String {
        if let t = extra["title"], !t.isEmpty { return t }
        if let t = source?.tags?["title"], !t.trimmingCharacters(in: .whitespaces).isEmpty { return t }
        return stem
    }

    /// When the recording was made, ISO 8601 in UTC ("2024-05-01T09:30:12Z"): the source's BWF
    /// origination date and time (`bext`), else its `date` tag (Vorbis `DATE`, ID3 `TDRC`, MP4
    /// `©day`, INFO `ICRD`), else its `creation_time` tag (the MP4 header's creation time), else the
    /// file's modification time. A full date and time wins over a date alone, which stays a date
    /// ("2024-05-01"); a tag that is not a date (a bare year, free text) is skipped. The
    /// `{recorded}` template variable.
    public var recorded: String {
        let dates = ["origination", "date", "creation_time"].compactMap { source?.tags?[$0] }.compactMap(Self.isoDate)
        return dates.first { $0.count > 10 } ?? dates.first ?? Self.isoDateTime(modified)
    }

    /// `date` as "yyyy-MM-ddTHH:mm:ssZ" in UTC.
    static package func isoDateTime(_ date: Date) -> String {
        var t = time_t(date.timeIntervalSince1970.rounded(.down))
        var tmv = tm()
        gmtime_r(&t, &tmv)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", Int(tmv.tm_year) + 1900, Int(tmv.tm_mon) + 1,
                      Int(tmv.tm_mday), Int(tmv.tm_hour), Int(tmv.tm_min), Int(tmv.tm_sec))
    }

    /// A tag's date as ISO 8601: "2024-05-01T09:30:12.000000Z", "2024-05-01 11:30:12+02:00" and
    /// "2024-05-01T09:30:12" (taken as UTC) become "2024-05-01T09:30:12Z"; "2024-05-01" stays;
    /// anything else (a bare year, free text) is nil.
    static package func isoDate(_ text: String) -> String? {
        let s = Array(text.trimmingCharacters(in: .whitespaces).utf8)
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= s.count else { return nil }
            var v = 0
            for b in s[from..<(from + count)] {
                guard b >= 48 && b <= 57 else { return nil }
                v = v * 10 + Int(b - 48)
            }
            return v
        }
        guard let y = number(0, 4), s.count >= 10, s[4] == 45, s[7] == 45, let mo = number(5, 2), let d = number(8, 2),
              (1...12).contains(mo), (1...31).contains(d) else { return nil }
        if s.count == 10 { return String(format: "%04d-%02d-%02d", y, mo, d) }
        guard s.count >= 19, s[10] == 84 || s[10] == 32, s[13] == 58, s[16] == 58,
              let h = number(11, 2), let mi = number(14, 2), let se = number(17, 2), h < 24, mi < 60, se < 61 else { return nil }
        var i = 19
        if i < s.count && s[i] == 46 { i += 1; while i < s.count && s[i] >= 48 && s[i] <= 57 { i += 1 } }
        var offset = 0
        if i < s.count && (s[i] == 43 || s[i] == 45) {
            guard let oh = number(i + 1, 2) else { return nil }
            let om = number(i + 3, 2) ?? number(i + 4, 2) ?? 0
            offset = (s[i] == 45 ? -1 : 1) * (oh * 3600 + om * 60)
        }
        var tmv = tm()
        tmv.tm_year = Int32(y - 1900); tmv.tm_mon = Int32(mo - 1); tmv.tm_mday = Int32(d)
        tmv.tm_hour = Int32(h); tmv.tm_min = Int32(mi); tmv.tm_sec = Int32(se)
        let utc = timegm(&tmv) - time_t(offset)
        return isoDateTime(Date(timeIntervalSince1970: TimeInterval(utc)))
    }
}
