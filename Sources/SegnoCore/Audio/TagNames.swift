/// One table of tag names: segno's normalised name (TagLib's property name in lower case) and
/// what each container calls it where TagLib does not do the mapping itself (RIFF `LIST/INFO`,
/// AIFF text chunks, CAF `info`, libsndfile's string slots). TagLib maps Vorbis, ID3v2, APEv2
/// and MP4 names (TITLE ↔ TIT2 ↔ ©nam).
public enum TagNames {
    /// normalised name → RIFF INFO id.
    public static let info: [String: String] = [
        "title": "INAM", "artist": "IART", "album": "IPRD", "date": "ICRD", "comment": "ICMT", "genre": "IGNR",
        "tracknumber": "ITRK", "copyright": "ICOP", "encoding": "ISFT", "engineer": "IENG", "subject": "ISBJ",
        "keywords": "IKEY", "source": "ISRC", "technician": "ITCH", "language": "ILNG", "medium": "IMED",
    ]
    /// RIFF INFO id → normalised name (TagLib writes the track number as IPRT).
    public static let fromInfo: [String: String] = {
        var m = Dictionary(uniqueKeysWithValues: info.map { ($0.value, $0.key) })
        m["IPRT"] = "tracknumber"
        return m
    }()
    /// AIFF text chunk id → normalised name.
    public static let fromAIFF: [String: String] = ["NAME": "title", "AUTH": "artist", "ANNO": "comment", "(c) ": "copyright"]
    /// CAF `info` key → normalised name (Apple's keys and libsndfile's spelling of them).
    public static let fromCAF: [String: String] = [
        "title": "title", "artist": "artist", "album": "album", "comments": "comment", "comment": "comment",
        "recorded date": "date", "date": "date", "year": "date", "genre": "genre", "track number": "tracknumber",
        "tracknumber": "tracknumber", "copyright": "copyright", "composer": "composer", "lyricist": "lyricist",
        "encoding application": "encoding", "software": "encoding", "license": "license",
    ]
    /// Names libsndfile can write into WAV/RF64 INFO, AIFF and CAF text (`sf_set_string`), with
    /// its slot numbers (`SF_STR_TITLE` …); the software slot is left out (libsndfile appends its
    /// own name to it).
    public static let sndfileSlots: [(name: String, slot: Int32)] = [
        ("title", 0x01), ("copyright", 0x02), ("artist", 0x04), ("comment", 0x05), ("date", 0x06),
        ("album", 0x07), ("tracknumber", 0x09), ("genre", 0x10),
    ]
    /// Names that say how a file was made, not what it holds: never carried to an output (the
    /// output was made by segno) and not searched. `length` (ID3 `TLEN`, Vorbis `LENGTH`, MP4
    /// `----:com.apple.iTunes:LENGTH`) is derived from the audio: after `pauses`, `tempo` or a cut
    /// it would be wrong, and the output's own header says its length.
    public static let technical: Set<String> = ["encoding", "encodedby", "encoder", "creation_time", "major_brand", "minor_version",
                                                 "compatible_brands", "handler_name", "vendor_id", "itunsmpb", "itunnorm", "coding_history",
                                                 "length"]
}
