import CSegnoTags
import Foundation
import SegnoCore

/// Reads what a recording carries besides its audio. Called once per recording when its source
/// is opened (`RecordingContext.opened`), by `segno info`, and by an encode tap at its end for
/// the pictures' bytes. Never throws: damaged tags become `RecordingMetadata.warnings`.
public enum TagReader {
    /// Pictures larger than this many bytes (16 MiB) are described but not carried: a picture
    /// that size is damage or a mistake more often than art, and every worker would hold it.
    public static let pictureLimit = 16 << 20

    /// What to do with pictures' bytes.
    public enum Pictures: Sendable {
        /// Type, MIME, description and size only.
        case describe
        /// The bytes too, up to `pictureLimit` each.
        case load
    }

    /// The TagLib reader for a container, if TagLib reads its tags.
    static package func tagLibFormat(_ kind: ContentSniffer.Kind, path: String) -> Int32? {
        switch kind {
        case .flac: return Int32(SEGNO_TAGS_FLAC.rawValue)
        case .mp3: return Int32(SEGNO_TAGS_MPEG.rawValue)
        case .mp4, .threeGP: return Int32(SEGNO_TAGS_MP4.rawValue)
        case .wav: return Int32(SEGNO_TAGS_WAV.rawValue)
        case .aiff: return Int32(SEGNO_TAGS_AIFF.rawValue)
        case .ogg: return Int32((isOpus(path: path) ? SEGNO_TAGS_OPUS : SEGNO_TAGS_OGG_VORBIS).rawValue)
        default: return nil
        }
    }

    /// True when an Ogg file's first packet is an Opus header.
    static package func isOpus(path: String) -> Bool {
        guard let f = FileNameBytes.reading(path) else { return false }
        defer { try? f.close() }
        guard let d = try? f.read(upToCount: 64) else { return false }
        return d.range(of: Data("OpusHead".utf8)) != nil
    }

    /// The tags, pictures, `bext` and `iXML` of the file at `path`.
    public static func read(path: String, pictures: Pictures = .describe) -> RecordingMetadata {
        var m = RecordingMetadata()
        let kind = ContentSniffer.sniff(path: path)
        var read = true
        if let format = tagLibFormat(kind, path: path) {
            read = readTagLib(path: path, format: format, pictures: pictures, into: &m)
        }
        if kind == .mp3, read, let w = TagDamage.id3v2(path: path, read: m) { m.warnings.append(w) }
        if kind == .flac { TagDamage.flacComments(path: path, into: &m) }
        ChunkTags.read(path: path, kind: kind, into: &m)
        ChapterReader.read(path: path, kind: kind, into: &m)
        if let b = m.broadcast { addBroadcast(b, into: &m) }
        return m
    }

    /// The `segno-tags` program beside the running executable (`swift build` and `make install`
    /// put them together): tags are read in a fresh process of its own, whose memory is its own.
    /// Nil when it is missing, or `SEGNO_TAGS_READER=fork`: a forked child of segno reads them
    /// (its resident size then counts the pages it shares with segno). Looked up once per process.
    static let readerProgram: String? = {
        if ProcessInfo.processInfo.environment["SEGNO_TAGS_READER"] == "fork" { return nil }
        return FFmpegTools.besideExecutable("segno-tags")
    }()

    /// Returns false when TagLib could not read the tags (a warning says why).
    @discardableResult
    private static func readTagLib(path: String, format: Int32, pictures: Pictures, into m: inout RecordingMetadata) -> Bool {
        // In a child process: a tag that crashes TagLib or exhausts memory fails this file's tags alone.
        var limits = segno_tags_limits(picture_bytes: pictures == .load ? Int64(pictureLimit) : 0,
                                       value_bytes: Int64(TagLimits.valueBytes), total_bytes: Int64(TagLimits.totalBytes),
                                       memory_bytes: Int64(TagLimits.readerMemory), cpu_seconds: Int32(TagLimits.readerSeconds))
        guard let t = FileNameBytes.withCPath(path, { cPath in
            if let program = readerProgram {
                return program.withCString { segno_tags_read_isolated(cPath, format, &limits, $0) }
            }
            return segno_tags_read_isolated(cPath, format, &limits, nil)
        }) else { return false }
        defer { segno_tags_free(t) }
        if let e = segno_tags_error(t) {
            m.warnings.append("tags not read: \(String(cString: e))")
            return false
        }
        for i in 0..<segno_tags_property_count(t) {
            let key = String(cString: segno_tags_property_key(t, i)).lowercased()
            m.add(key, String(cString: segno_tags_property_value(t, i)))
        }
        for i in 0..<segno_tags_raw_count(t) {
            m.addRaw(String(cString: segno_tags_raw_key(t, i)), String(cString: segno_tags_raw_value(t, i)))
        }
        for i in 0..<segno_tags_dropped_count(t) {
            let raw = segno_tags_dropped_raw(t, i) != 0, key = String(cString: segno_tags_dropped_key(t, i))
            m.dropped(raw ? key : key.lowercased(), bytes: Int(segno_tags_dropped_size(t, i)), raw: raw,
                      pastTotal: segno_tags_dropped_reason(t, i) == 2)
        }
        for i in 0..<segno_tags_picture_count(t) {
            let size = Int(segno_tags_picture_size(t, i))
            var data: [UInt8]? = nil
            if let p = segno_tags_picture_data(t, i) { data = Array(UnsafeBufferPointer(start: p, count: size)) }
            else if pictures == .load, size > pictureLimit {
                m.warnings.append("picture of \(size) bytes is over \(pictureLimit) bytes; not carried to outputs")
            }
            m.pictures.append(EmbeddedPicture(type: Int(segno_tags_picture_type(t, i)), mime: String(cString: segno_tags_picture_mime(t, i)),
                                              description: String(cString: segno_tags_picture_description(t, i)), size: size, data: data))
        }
        return true
    }

    /// The `bext` fields under normalised names: who, when (as `origination`, which `recorded`
    /// prefers), and the description when the file has no other.
    private static func addBroadcast(_ b: BroadcastInfo, into m: inout RecordingMetadata) {
        if !b.description.isEmpty && !m.tags.contains(where: { $0.key == "description" }) { m.add("description", b.description) }
        m.add("originator", b.originator)
        m.add("originator_reference", b.originatorReference)
        if let o = b.origination { m.add("origination", o) }
        m.add("time_reference", String(b.timeReference))
    }
}
