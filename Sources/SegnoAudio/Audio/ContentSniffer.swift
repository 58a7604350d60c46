import Foundation
import SegnoCore

/// Names a file's format from its first bytes, whatever its extension says.
/// Used for error messages ("looks like AAC (ADTS)") and to route files libsndfile cannot read.
public enum ContentSniffer {
    /// What the first bytes of a file look like.
    public enum Kind: String, Sendable, Equatable {
        case wav = "WAV", rf64 = "RF64", w64 = "Wave64", aiff = "AIFF", caf = "CAF", flac = "FLAC"
        case ogg = "Ogg", mp3 = "MP3", adts = "AAC (ADTS)", mp4 = "MP4/M4A", threeGP = "3GP"
        case amr = "AMR", webm = "WebM", matroska = "Matroska", text = "text", png = "PNG image", jpeg = "JPEG image", pdf = "PDF document"
        case zip = "ZIP archive", gzip = "gzip archive", elf = "ELF executable", empty = "an empty file"
        case sqlite = "SQLite database", unknown = "unknown data"

        /// True for containers whose audio is usually AAC/ALAC that libsndfile cannot decode.
        public var isMP4Family: Bool { self == .mp4 || self == .threeGP }
    }

    /// Reads up to 64 bytes of `path` and classifies them; `.unknown` when unreadable or not a
    /// regular file (opening a FIFO would wait for a writer forever).
    public static func sniff(path: String) -> Kind {
        var st = stat()
        guard FileNameBytes.withCPath(path, { stat($0, &st) }) == 0, (st.st_mode & S_IFMT) == S_IFREG,
              let handle = FileNameBytes.reading(path) else { return .unknown }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: 64)) ?? Data()
        return sniff(Array(data))
    }

    /// Classifies a file's leading bytes.
    public static func sniff(_ b: [UInt8]) -> Kind {
        if b.isEmpty { return .empty }
        func ascii(_ at: Int, _ s: String) -> Bool {
            let u = Array(s.utf8)
            return b.count >= at + u.count && Array(b[at..<(at + u.count)]) == u
        }
        if ascii(0, "RIFF") || ascii(0, "RIFX") { return ascii(8, "WAVE") ? .wav : .unknown }
        if ascii(0, "RF64") || ascii(0, "BW64") { return .rf64 }
        if ascii(0, "riff") { return .w64 }
        if ascii(0, "FORM") && (ascii(8, "AIFF") || ascii(8, "AIFC")) { return .aiff }
        if ascii(0, "caff") { return .caf }
        if ascii(0, "fLaC") { return .flac }
        if ascii(0, "OggS") { return .ogg }
        if ascii(0, "ID3") { return .mp3 }
        if ascii(0, "#!AMR") { return .amr }
        if b.count >= 4 && b[0] == 0x1A && b[1] == 0x45 && b[2] == 0xDF && b[3] == 0xA3 {
            // EBML: the DocType element (0x42 0x82, a size byte, then "webm" or "matroska").
            return b.indices.dropLast(6).contains { b[$0] == 0x42 && b[$0 + 1] == 0x82 && ascii($0 + 3, "webm") } ? .webm : .matroska
        }
        if ascii(4, "ftyp") {
            return ascii(8, "3gp") || ascii(8, "3g2") ? .threeGP : .mp4
        }
        if ascii(0, "SQLite format 3") { return .sqlite }
        if b.count >= 4 && b[0] == 0x89 && ascii(1, "PNG") { return .png }
        if b.count >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF { return .jpeg }
        if ascii(0, "%PDF") { return .pdf }
        if ascii(0, "PK\u{03}\u{04}") { return .zip }
        if b.count >= 2 && b[0] == 0x1F && b[1] == 0x8B { return .gzip }
        if b.count >= 4 && b[0] == 0x7F && ascii(1, "ELF") { return .elf }
        if b.count >= 2 && b[0] == 0xFF {
            // MPEG audio frame sync: 11 bits set. Layer bits 00 mean ADTS (AAC).
            if b[1] & 0xF6 == 0xF0 { return .adts }
            if b[1] & 0xE0 == 0xE0 && b[1] & 0x06 != 0 { return .mp3 }
        }
        let printable = b.allSatisfy { $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || ($0 >= 0x20 && $0 < 0x7F) || $0 >= 0x80 }
        if printable { return .text }
        return .unknown
    }
}
