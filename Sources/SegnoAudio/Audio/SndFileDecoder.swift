import CSndFile
import Foundation
import SegnoCore
import SegnoDSP

/// Streaming decode through libsndfile (WAV/RF64/W64, AIFF, CAF with PCM or ALAC, FLAC,
/// Ogg Vorbis/Opus; MP3 only where the sniffer did not see MPEG audio, since `Mpg123Decoder`
/// decodes MP3 with libmpg123 silenced). The format comes from the content; the name is only
/// used in messages.
public final class SndFileDecoder: Int16Decoding, ExactSeeking {
    public let info: SourceInfo
    private let path: String
    private var handle: OpaquePointer?
    private var framesRead = 0
    /// Formats whose declared frame count is exact, so reading fewer frames means damage.
    private let exactLength: Bool
    public let readsExactInt16: Bool
    /// True for integer and float PCM and FLAC (decision 0095): `sf_seek` lands on the very frame
    /// and reads after it fill whole blocks. Lossy codecs, ALAC and headerless data are left out.
    public let seeksExactly: Bool

    /// Headerless samples (audiowaveform's `--input-format raw`): rate, channels and one of
    /// `s8 u8 s16le s16be s24le s24be s32le s32be f32le f32be f64le f64be`.
    public struct RawFormat: Sendable, Hashable {
        public let sampleRate: Int
        public let channels: Int
        public let encoding: String
        /// The encodings libsndfile reads as headerless data, with their SF_FORMAT bits.
        static package let encodings: [String: Int32] = [
            "s8": Int32(SF_FORMAT_PCM_S8), "u8": Int32(SF_FORMAT_PCM_U8),
            "s16le": Int32(SF_FORMAT_PCM_16 | SF_ENDIAN_LITTLE), "s16be": Int32(SF_FORMAT_PCM_16 | SF_ENDIAN_BIG),
            "s24le": Int32(SF_FORMAT_PCM_24 | SF_ENDIAN_LITTLE), "s24be": Int32(SF_FORMAT_PCM_24 | SF_ENDIAN_BIG),
            "s32le": Int32(SF_FORMAT_PCM_32 | SF_ENDIAN_LITTLE), "s32be": Int32(SF_FORMAT_PCM_32 | SF_ENDIAN_BIG),
            "f32le": Int32(SF_FORMAT_FLOAT | SF_ENDIAN_LITTLE), "f32be": Int32(SF_FORMAT_FLOAT | SF_ENDIAN_BIG),
            "f64le": Int32(SF_FORMAT_DOUBLE | SF_ENDIAN_LITTLE), "f64be": Int32(SF_FORMAT_DOUBLE | SF_ENDIAN_BIG),
        ]
        /// μ-law and A-law, read headerless only to salvage a damaged WAV/AIFF/CAF (`PCMLayout`).
        static package let salvageEncodings: [String: Int32] = ["ulaw": Int32(SF_FORMAT_ULAW), "alaw": Int32(SF_FORMAT_ALAW)]
        /// The libsndfile format bits of `encoding`.
        package var sfFormat: Int32 { Self.encodings[encoding] ?? Self.salvageEncodings[encoding] ?? 0 }

        /// A layout read from a damaged file's own header (`PCMLayout`), already checked there.
        package init(layout: PCMLayout) {
            sampleRate = layout.sampleRate
            channels = layout.channels
            encoding = layout.encoding
        }

        /// Checks the rate (1…768000 Hz), channels (1…1024) and encoding; the message names the bad value.
        public init(sampleRate: Int, channels: Int, encoding: String) throws(AudioError) {
            guard (1...768_000).contains(sampleRate) else { throw .unsupportedOutput(path: "raw input", detail: "sample rate \(sampleRate) Hz is not 1…768000") }
            guard (1...1024).contains(channels) else { throw .unsupportedOutput(path: "raw input", detail: "\(channels) channels is not 1…1024") }
            guard Self.encodings[encoding] != nil else {
                throw .unsupportedOutput(path: "raw input", detail: "format \(encoding) is not one of \(Self.encodings.keys.sorted().joined(separator: ", "))")
            }
            self.sampleRate = sampleRate
            self.channels = channels
            self.encoding = encoding
        }
    }

    /// Opens `path`; throws `AudioError` for missing, unreadable, empty, non-audio and
    /// truncated files. `raw` reads headerless samples of that format instead of detecting one,
    /// from byte `rawOffset` on (a damaged file's samples after its header).
    /// Called once per recording.
    public convenience init(path: String, raw: RawFormat? = nil) throws {
        try self.init(path: path, raw: raw, rawOffset: 0)
    }

    package init(path: String, raw: RawFormat?, rawOffset: Int64) throws {
        self.path = path
        let fd = try Self.openChecked(path)
        var sfinfo = SF_INFO()
        if let raw {
            sfinfo.samplerate = Int32(raw.sampleRate)
            sfinfo.channels = Int32(raw.channels)
            sfinfo.format = Int32(SF_FORMAT_RAW) | raw.sfFormat
        }
        guard let h = sf_open_fd(fd, Int32(SFM_READ), &sfinfo, 1) else {
            let reason = String(cString: sf_strerror(nil))
            let kind = ContentSniffer.sniff(path: path)
            switch kind {
            case .empty: throw AudioError.empty(path: path)
            case .wav, .aiff, .caf, .flac, .rf64, .w64, .ogg:
                throw AudioError.decodeFailed(path: path, detail: "damaged \(kind.rawValue) header: \(reason)")
            case .unknown: throw AudioError.unrecognised(path: path, looksLike: nil, detail: reason)
            default: throw AudioError.unrecognised(path: path, looksLike: kind.rawValue, detail: reason)
            }
        }
        handle = h
        if raw != nil, rawOffset > 0 {
            var offset = sf_count_t(rawOffset)
            _ = sf_command(h, Int32(SFC_SET_RAW_START_OFFSET), &offset, Int32(MemoryLayout<sf_count_t>.size))
            // libsndfile moves the file only when the frame position changes: step there and back.
            _ = sf_seek(h, 1, SEEK_SET)
            _ = sf_seek(h, 0, SEEK_SET)
        }
        let major = sfinfo.format & Int32(SF_FORMAT_TYPEMASK)
        if Self.weaklyDetected.contains(major) {
            // libsndfile recognises these by a couple of bytes, so random data passes as audio.
            sf_close(h)
            let kind = ContentSniffer.sniff(path: path)
            throw AudioError.unrecognised(path: path, looksLike: kind == .unknown ? nil : kind.rawValue,
                                          detail: "only a \(Self.formatName(major: major)) signature of a few bytes; not decoded")
        }
        let sub = sfinfo.format & Int32(SF_FORMAT_SUBMASK)
        let container = Self.formatName(major: major)
        let codec = Self.subtypeName(sub)
        let kind: SampleKind
        switch Int(sub) {
        case SF_FORMAT_FLOAT, SF_FORMAT_DOUBLE: kind = .float
        case SF_FORMAT_VORBIS, SF_FORMAT_OPUS, SF_FORMAT_MPEG_LAYER_I, SF_FORMAT_MPEG_LAYER_II,
             SF_FORMAT_MPEG_LAYER_III, SF_FORMAT_IMA_ADPCM, SF_FORMAT_MS_ADPCM, SF_FORMAT_GSM610,
             SF_FORMAT_ULAW, SF_FORMAT_ALAW, SF_FORMAT_G721_32, SF_FORMAT_G723_24, SF_FORMAT_G723_40,
             SF_FORMAT_VOX_ADPCM, SF_FORMAT_NMS_ADPCM_16, SF_FORMAT_NMS_ADPCM_24, SF_FORMAT_NMS_ADPCM_32:
            kind = .lossy
        default: kind = .integer
        }
        exactLength = major != Int32(SF_FORMAT_MPEG)  // MP3 lengths are estimates
        readsExactInt16 = Self.int16Subtypes.contains(Int(sub))
        seeksExactly = raw == nil && kind != .lossy && exactLength && Self.exactSeekSubtypes.contains(Int(sub))
        info = SourceInfo(container: container, codec: codec, sampleRate: Int(sfinfo.samplerate),
                          channels: Int(sfinfo.channels), frames: Int(sfinfo.frames), sampleKind: kind)
        if sfinfo.channels < 1 || sfinfo.samplerate < 1 {
            close()
            throw AudioError.decodeFailed(path: path, detail: "header claims \(sfinfo.channels) channels at \(sfinfo.samplerate) Hz")
        }
        if let detail = Self.headerLengthMismatch(h) {
            close()
            throw AudioError.truncated(path: path, detail: detail)
        }
        // libsndfile's log does not say it for every container (RF64 cut short): the header's own sizes.
        if raw == nil, let layout = PCMLayout.read(path: path), layout.damage == .truncated {
            close()
            throw AudioError.truncated(path: path, detail: "header declares \(layout.declaredBytes ?? 0) bytes of audio, the file holds \(layout.presentBytes)")
        }
    }

    /// Formats libsndfile detects from two or three bytes (Akai MPC 2000, HTK): refused, so a
    /// damaged or foreign file is an error rather than noise.
    static package let weaklyDetected: Set<Int32> = [Int32(SF_FORMAT_MPC2K), Int32(SF_FORMAT_HTK)]

    deinit { close() }

    public func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        guard let h = handle else { return 0 }
        block.reset(channels: info.channels, capacity: maxFrames)
        let n = block.samples.withUnsafeMutableBufferPointer { buf in
            sf_readf_float(h, buf.baseAddress, sf_count_t(maxFrames))
        }
        block.frames = try account(n, h)
        return block.frames
    }

    public func readInt16(into buffer: UnsafeMutableBufferPointer<Int16>, maxFrames: Int) throws -> Int {
        guard let h = handle else { return 0 }
        precondition(buffer.count >= maxFrames * info.channels, "buffer holds fewer than maxFrames × channels values")
        return try account(sf_readf_short(h, buffer.baseAddress, sf_count_t(maxFrames)), h)
    }

    /// Counts `n` frames just read; at the end (`n ≤ 0`) throws if libsndfile saw damage or the
    /// stream stopped short of its declared length. Returns the frames read (≥ 0).
    private func account(_ n: sf_count_t, _ h: OpaquePointer) throws -> Int {
        let frames = Int(max(0, n))
        framesRead += frames
        if n <= 0 {
            let err = sf_error(h)
            if err != 0 {
                throw AudioError.decodeFailed(path: path, detail: "\(String(cString: sf_strerror(h))) after \(framesRead) of \(info.frames) frames")
            }
            if exactLength && framesRead < info.frames {
                throw AudioError.truncated(path: path, detail: "header declares \(info.frames) frames, only \(framesRead) could be read")
            }
        }
        return frames
    }

    /// Positions the stream at `frame` for a resumed checkpoint. Called once, before the first read.
    public func seek(toFrame frame: Int) throws {
        guard let h = handle else { throw AudioError.decodeFailed(path: path, detail: "closed before seeking") }
        if sf_seek(h, sf_count_t(frame), SEEK_SET) != sf_count_t(frame) {
            throw AudioError.decodeFailed(path: path, detail: "cannot seek to frame \(frame) of \(info.frames): \(String(cString: sf_strerror(h)))")
        }
        framesRead = frame
    }

    /// Subtypes whose seeks are exact (`seeksExactly`): PCM of every width, float, FLAC.
    static package let exactSeekSubtypes: Set<Int> = [
        SF_FORMAT_PCM_S8, SF_FORMAT_PCM_U8, SF_FORMAT_PCM_16, SF_FORMAT_PCM_24, SF_FORMAT_PCM_32, SF_FORMAT_FLOAT, SF_FORMAT_DOUBLE,
    ]

    /// Subtypes libsndfile stores or decodes as integers, so `sf_readf_short` gives exact values
    /// (what audiowaveform reads); float and lossy codecs are left to the Float32 path.
    static package let int16Subtypes: Set<Int> = [
        SF_FORMAT_PCM_S8, SF_FORMAT_PCM_U8, SF_FORMAT_PCM_16, SF_FORMAT_PCM_24, SF_FORMAT_PCM_32,
        SF_FORMAT_ALAC_16, SF_FORMAT_ALAC_20, SF_FORMAT_ALAC_24, SF_FORMAT_ALAC_32,
        SF_FORMAT_ULAW, SF_FORMAT_ALAW, SF_FORMAT_IMA_ADPCM, SF_FORMAT_MS_ADPCM, SF_FORMAT_GSM610,
    ]

    public func close() {
        if let h = handle { sf_close(h) }
        handle = nil
    }

    /// Opens the file descriptor ourselves so the error says precisely why (missing,
    /// directory, permission, empty) before libsndfile sees it.
    static package func openChecked(_ path: String) throws -> Int32 {
        var st = stat()
        if stat(path, &st) != 0 {
            if errno == ENOENT || errno == ENOTDIR { throw AudioError.missing(path: path) }
            throw AudioError.unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        if (st.st_mode & S_IFMT) != S_IFREG { throw AudioError.notAFile(path: path) }
        if st.st_size == 0 { throw AudioError.empty(path: path) }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw AudioError.unreadable(path: path, reason: String(cString: strerror(errno))) }
        return fd
    }

    /// libsndfile keeps going when a WAV/AIFF header claims more audio than the file holds, and
    /// notes it in its log ("data : 352800 (should be 99956)"). Such a file is truncated — unless
    /// the size is 0xFFFFFFFF, which means "length unknown" (what ffmpeg and streaming recorders
    /// write to a pipe): then the audio runs to the end of the file, as libsndfile reads it.
    static package func headerLengthMismatch(_ h: OpaquePointer) -> String? {
        var log = [CChar](repeating: 0, count: 8192)
        _ = sf_command(h, Int32(SFC_GET_LOG_INFO), &log, Int32(log.count))
        let text = String(decoding: log.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        for line in text.split(separator: "\n") {
            let t = line.trimmingCharacters(in: .whitespaces)
            guard t.hasPrefix("data ") || t.hasPrefix("SSND ") || t.hasPrefix("ds64") else { continue }
            guard let r = t.range(of: "(should be ") else { continue }
            let claimed = t[t.index(t.startIndex, offsetBy: 5)..<r.lowerBound]
                .trimmingCharacters(in: CharacterSet(charactersIn: " :"))
            let actual = t[r.upperBound...].prefix { $0.isNumber }
            if let c = Int64(claimed), c == Int64(UInt32.max) { continue }
            if let c = Int64(claimed), let a = Int64(actual), a < c {
                return "header declares \(c) bytes of audio, the file holds \(a)"
            }
        }
        return nil
    }

    static package func formatName(major: Int32) -> String {
        var fi = SF_FORMAT_INFO()
        fi.format = major
        if sf_command(nil, Int32(SFC_GET_FORMAT_INFO), &fi, Int32(MemoryLayout<SF_FORMAT_INFO>.size)) == 0, let n = fi.name {
            let name = String(cString: n)
            // libsndfile's names are long ("WAV (Microsoft)"); keep the short word users know.
            return name.split(separator: " ").first.map(String.init) ?? name
        }
        return "0x" + String(major, radix: 16)
    }

    static package func subtypeName(_ sub: Int32) -> String {
        switch Int(sub) {
        case SF_FORMAT_PCM_S8: return "PCM_S8"
        case SF_FORMAT_PCM_U8: return "PCM_U8"
        case SF_FORMAT_PCM_16: return "PCM_16"
        case SF_FORMAT_PCM_24: return "PCM_24"
        case SF_FORMAT_PCM_32: return "PCM_32"
        case SF_FORMAT_FLOAT: return "FLOAT"
        case SF_FORMAT_DOUBLE: return "DOUBLE"
        case SF_FORMAT_ULAW: return "ULAW"
        case SF_FORMAT_ALAW: return "ALAW"
        case SF_FORMAT_IMA_ADPCM: return "IMA_ADPCM"
        case SF_FORMAT_MS_ADPCM: return "MS_ADPCM"
        case SF_FORMAT_GSM610: return "GSM610"
        case SF_FORMAT_VORBIS: return "Vorbis"
        case SF_FORMAT_OPUS: return "Opus"
        case SF_FORMAT_ALAC_16: return "ALAC_16"
        case SF_FORMAT_ALAC_20: return "ALAC_20"
        case SF_FORMAT_ALAC_24: return "ALAC_24"
        case SF_FORMAT_ALAC_32: return "ALAC_32"
        case SF_FORMAT_MPEG_LAYER_I: return "MP1"
        case SF_FORMAT_MPEG_LAYER_II: return "MP2"
        case SF_FORMAT_MPEG_LAYER_III: return "MP3"
        default:
            var fi = SF_FORMAT_INFO()
            fi.format = sub
            if sf_command(nil, Int32(SFC_GET_FORMAT_INFO), &fi, Int32(MemoryLayout<SF_FORMAT_INFO>.size)) == 0, let n = fi.name {
                return String(cString: n)
            }
            return "0x" + String(sub, radix: 16)
        }
    }
}
