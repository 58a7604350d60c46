import CSndFile
import Foundation
import SegnoCore

extension DecoderFactory {
    /// Containers only ffmpeg reads here: libsndfile is not even tried on them.
    static package let ffmpegOnly: Set<ContentSniffer.Kind> = [.mp4, .threeGP, .adts, .amr, .webm, .matroska]
    /// Containers libsndfile reads in part (CAF with PCM, not AAC or IMA4; MP3, not AAC behind an
    /// ID3 tag): ffmpeg is tried when libsndfile refuses them.
    static package let ffmpegFallback: Set<ContentSniffer.Kind> = [.caf, .mp3]

    /// Opens `path` by its content (the extension is only a hint): MP4/M4A, 3GP, ADTS, AMR and
    /// WebM/Matroska (Opus or Vorbis from a browser's MediaRecorder) go to
    /// ffmpeg; MPEG audio (MP3) to libmpg123 (`Mpg123Decoder`), and to ffmpeg when that finds no
    /// MPEG frame (AAC behind an ID3 tag); everything else to libsndfile first, and CAF that
    /// libsndfile refuses to ffmpeg.
    /// `searchPath` is the `PATH` in which `ffmpeg` and `ffprobe` are looked for. Without them such
    /// files fail with one line naming the codec and the install command; the rest still works.
    /// With them, `helpers` decode such files without a process each (nil: one `ffmpeg` per file).
    /// Called once per recording (twice with an analysis pass such as loudness normalisation).
    /// `damaged: .salvage` reads damaged files for what they hold (`SalvageOpener`); with `.fail`
    /// a damaged file throws an `AudioError` whose message names the way out.
    public static func open(path: String, searchPath: String?,
                            helpers: DecodeHelperPool?, damaged: DamagedPolicy = .fail,
                            reference: String? = nil) throws -> any AudioDecoder {
        // Missing, empty, unreadable or not a regular file (a FIFO would block the sniffer): say so.
        Glibc.close(try SndFileDecoder.openChecked(path))
        // A sensor series (.csv, .jsonl) by extension and text content.
        if SensorSeriesDecoder.looksLikeSeries(path: path) { return try SensorSeriesDecoder(path: path) }
        let kind = ContentSniffer.sniff(path: path)
        if damaged == .salvage, let d = try SalvageOpener.open(path: path, kind: kind, reference: reference, helpers: helpers, reopen: {
            try open(path: $0, searchPath: searchPath, helpers: helpers)
        }) { return d }
        if ffmpegOnly.contains(kind) {
            return try openWithFFmpeg(path: path, kind: kind, searchPath: searchPath, libsndfileError: nil, helpers: helpers)
        }
        if kind == .mp3 {
            // libmpg123 directly (silenced), not through libsndfile, which lets it print.
            do { return try Mpg123Decoder(path: path) } catch let e as AudioError {
                guard case .unrecognised = e else { throw e }
                return try openWithFFmpeg(path: path, kind: kind, searchPath: searchPath, libsndfileError: e, helpers: helpers)
            }
        }
        do {
            let d = try SndFileDecoder(path: path)
            if let tools = FFmpegTools.locate(searchPath: searchPath), stopsShort(d, path: path) {
                d.close()
                return try FFmpegDecoder(path: path, tools: tools, kind: kind, helpers: helpers)
            }
            return d
        } catch let e as AudioError {
            guard ffmpegFallback.contains(kind) else { throw e }
            switch e {
            case .unrecognised, .decodeFailed:
                return try openWithFFmpeg(path: path, kind: kind, searchPath: searchPath, libsndfileError: e, helpers: helpers)
            default:
                throw e
            }
        }
    }

    /// True for an MP3 without a Xing/Info/VBRI header whose frames hold more audio than
    /// mpg123's estimate from the first frame's bitrate (a VBR stream): libsndfile stops reading
    /// at that estimate, so the rest would be lost. Such files go to ffmpeg when it is installed.
    /// Only for MPEG audio libsndfile found where the sniffer did not (`Mpg123Decoder` reads the
    /// rest, and never stops short).
    /// Costs one read of the file's frame headers, for MP3 only.
    static package func stopsShort(_ d: SndFileDecoder, path: String) -> Bool {
        guard ["MP1", "MP2", "MP3"].contains(d.info.codec), !FrameScan.mp3HasLengthHeader(path: path),
              let n = FrameScan.mp3(path: path) else { return false }
        return n > d.info.frames
    }

    private static func openWithFFmpeg(path: String, kind: ContentSniffer.Kind, searchPath: String?,
                                       libsndfileError: AudioError?, helpers: DecodeHelperPool?) throws -> any AudioDecoder {
        guard let tools = FFmpegTools.locate(searchPath: searchPath) else {
            guard let what = ContainerPeek.describe(path: path, kind: kind) else {
                throw libsndfileError ?? AudioError.unrecognised(path: path, looksLike: kind.rawValue, detail: "not decoded")
            }
            throw AudioError.missingDecoder(path: path, detail: "\(what) needs ffmpeg on PATH; \(FFmpegTools.installHint)")
        }
        return try FFmpegDecoder(path: path, tools: tools, kind: kind, helpers: helpers)
    }

    /// One line per decoder for `segno info --formats`: libsndfile's version, whether ffmpeg
    /// (with ffprobe) is on `searchPath`, with its version line, and the `segno-decode` helper.
    /// Runs `ffmpeg -version` and the helper once.
    public static func availableDecoders(tools: AudioTools) -> [String] {
        let searchPath = tools.searchPath
        var lines = ["libsndfile: \(String(cString: sf_version_string())) (WAV, RF64, AIFF, CAF with PCM/ALAC, FLAC, Ogg Vorbis/Opus); MP3/MP2 through libmpg123"]
        if let tools = FFmpegTools.locate(searchPath: searchPath) {
            let version = tools.versionLine() ?? "version unknown"
            lines.append("ffmpeg: \(tools.ffmpeg) (\(version)), ffprobe: \(tools.ffprobe) (AAC/ALAC in MP4/M4A/3GP/CAF, ADTS, AMR, IMA4, WebM/Matroska; writes AAC/ALAC .m4a)")
        } else {
            lines.append("ffmpeg: not found on PATH (AAC in .m4a/.3gp/.caf, AMR, WebM/Matroska cannot be read, .m4a not written; \(FFmpegTools.installHint))")
        }
        // Also without ffmpeg: the helper makes the fingerprints.
        lines.append(tools.helpers.describe(fingerprints: tools.fingerprintHelpers))
        return lines
    }
}

/// Names what an MP4/CAF/ADTS/AMR file holds from its headers alone, for the "needs ffmpeg"
/// message when ffmpeg is missing ("AAC in MP4", "ALAC in CAF").
package enum ContainerPeek {
    /// "AAC in MP4", "AMR-NB in 3GP", "IMA4 in CAF", "AAC (ADTS)", …; nil when the content gives
    /// no reason to think ffmpeg could read it.
    static package func describe(path: String, kind: ContentSniffer.Kind) -> String? {
        switch kind {
        case .mp4, .threeGP:
            let container = kind == .threeGP ? "3GP" : "MP4"
            return "\(mp4AudioCodec(path: path) ?? "audio (AAC or ALAC)") in \(container)"
        case .caf:
            guard let codec = cafCodec(path: path), codec != "PCM" else { return nil }
            return "\(codec) in CAF"
        case .adts: return "AAC (ADTS)"
        case .amr: return "AMR"
        case .webm, .matroska: return "audio in \(kind.rawValue)"
        default: return nil
        }
    }

    /// The first audio sample entry of the `moov` box ("AAC", "ALAC", "AMR-NB"), or nil.
    static package func mp4AudioCodec(path: String) -> String? {
        guard let h = FileNameBytes.reading(path) else { return nil }
        defer { try? h.close() }
        var offset: UInt64 = 0
        // Walk the top-level boxes by their headers: the index may sit after the audio data.
        for _ in 0..<64 {
            guard (try? h.seek(toOffset: offset)) != nil,
                  let head = try? h.read(upToCount: 16), head.count >= 8 else { return nil }
            let b = [UInt8](head)
            var size = UInt64(b[0]) << 24 | UInt64(b[1]) << 16 | UInt64(b[2]) << 8 | UInt64(b[3])
            if size == 1, b.count >= 16 { size = b[8..<16].reduce(0) { $0 << 8 | UInt64($1) } }
            let type = String(decoding: b[4..<8], as: UTF8.self)
            if type == "moov" {
                guard let body = try? h.read(upToCount: Int(min(size == 0 ? 1 << 24 : size, 1 << 24))) else { return nil }
                return firstAudioEntry(in: [UInt8](head) + [UInt8](body))
            }
            if size < 8 { return nil }
            offset += size
        }
        return nil
    }

    private static func firstAudioEntry(in b: [UInt8]) -> String? {
        let names = ["mp4a": "AAC", "alac": "ALAC", "samr": "AMR-NB", "sawb": "AMR-WB", "ima4": "IMA4",
                     ".mp3": "MP3", "Opus": "Opus", "fLaC": "FLAC"]
        let stsd = Array("stsd".utf8)
        var i = 0
        while i + 20 <= b.count {
            if b[i] == stsd[0] && Array(b[i..<(i + 4)]) == stsd {
                // 'stsd', version/flags, entry count, entry size, then the entry's format code.
                if let name = names[String(decoding: b[(i + 16)..<(i + 20)], as: UTF8.self)] { return name }
            }
            i += 1
        }
        return nil
    }

    /// The CAF `desc` chunk's format ID ("AAC", "ALAC", "IMA4", "PCM"), or nil.
    static package func cafCodec(path: String) -> String? {
        guard let h = FileNameBytes.reading(path) else { return nil }
        defer { try? h.close() }
        // 'caff' + version + flags (8 bytes), 'desc' + 64-bit size (12), sample rate (8), format ID.
        guard let d = try? h.read(upToCount: 32), d.count == 32 else { return nil }
        let b = [UInt8](d)
        guard String(decoding: b[8..<12], as: UTF8.self) == "desc" else { return nil }
        switch String(decoding: b[28..<32], as: UTF8.self) {
        case "aac ": return "AAC"
        case "alac": return "ALAC"
        case "ima4": return "IMA4"
        case "samr": return "AMR-NB"
        case ".mp3": return "MP3"
        case "lpcm", "ulaw", "alaw": return "PCM"
        case let other: return other.trimmingCharacters(in: .whitespaces)
        }
    }
}
