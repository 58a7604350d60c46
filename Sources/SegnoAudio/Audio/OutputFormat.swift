import CSndFile
import SegnoCore

/// An output container/codec segno can write: through libsndfile, or (`aac`, `alac`: AAC-LC or
/// ALAC in an MP4 `.m4a` file) through the `ffmpeg` program (`FFmpegEncoder`).
public enum OutputFormat: String, Sendable, CaseIterable, Codable {
    case wav, aiff, caf, flac, ogg, opus, mp3, w64, rf64, aac, alac

    /// Picks the format from a file name's extension (case-insensitive); nil when unknown.
    public init?(extensionOf path: String) {
        let ext = (path.split(separator: "/").last.flatMap { n -> Substring? in
            guard let dot = n.lastIndex(of: ".") else { return nil }
            return n[n.index(after: dot)...]
        } ?? "").lowercased()
        switch ext {
        case "wav", "wave": self = .wav
        case "aif", "aiff", "aifc": self = .aiff
        case "caf": self = .caf
        case "flac": self = .flac
        case "ogg", "oga": self = .ogg
        case "opus": self = .opus
        case "mp3": self = .mp3
        case "w64": self = .w64
        case "rf64": self = .rf64
        case "m4a": self = .aac   // ALAC in .m4a is asked for with format: alac
        default: return nil
        }
    }

    /// True when the codec is lossy (bits do not apply; quality does).
    public var isLossy: Bool { self == .ogg || self == .opus || self == .mp3 || self == .aac }

    /// True when the `ffmpeg` program writes the file (AAC, ALAC in MP4), not libsndfile.
    public var needsFFmpeg: Bool { self == .aac || self == .alac }

    /// Most channels the codec takes.
    public var maxChannels: Int? {
        switch self {
        case .opus, .mp3: return 2
        case .aac, .alac: return 8
        default: return nil
        }
    }

    /// Sample rates the codec accepts, or nil for any.
    public var allowedRates: [Int]? {
        switch self {
        case .opus: return [8000, 12000, 16000, 24000, 48000]
        case .mp3: return [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000]
        case .aac: return [7350, 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000]
        default: return nil
        }
    }

    /// Bit depths the container accepts.
    public var allowedBits: [SampleBits] {
        switch self {
        case .flac: return [.b8, .b16, .b24]
        case .wav, .w64, .rf64, .caf, .aiff: return [.b8, .b16, .b24, .b32, .float, .double]
        case .alac: return [.b16, .b24]   // ffmpeg's ALAC encoder writes 16 or 24 bits
        case .ogg, .opus, .mp3, .aac: return []
        }
    }

    /// libsndfile's major format; 0 for the formats ffmpeg writes.
    package var majorFormat: Int32 {
        switch self {
        case .wav: return Int32(SF_FORMAT_WAV)
        case .aiff: return Int32(SF_FORMAT_AIFF)
        case .caf: return Int32(SF_FORMAT_CAF)
        case .flac: return Int32(SF_FORMAT_FLAC)
        case .ogg, .opus: return Int32(SF_FORMAT_OGG)
        case .mp3: return Int32(SF_FORMAT_MPEG)
        case .w64: return Int32(SF_FORMAT_W64)
        case .rf64: return Int32(SF_FORMAT_RF64)
        case .aac, .alac: return 0
        }
    }
}

/// Bits per sample of an output (PCM/FLAC), or floating point.
public enum SampleBits: String, Sendable, CaseIterable, Codable {
    case b8 = "8", b16 = "16", b24 = "24", b32 = "32", float, double

    /// How messages name the depth: "16-bit", "32-bit float", "64-bit float".
    public var samplesLabel: String {
        switch self {
        case .float: return "32-bit float"
        case .double: return "64-bit float"
        default: return rawValue + "-bit"
        }
    }

    /// Parses "8", "16", "24", "32", "float", "double".
    public init?(text: String) { self.init(rawValue: text.lowercased()) }

    /// The default depth for a source: the source's own depth where the container holds it
    /// (8, 16, 24 or 32-bit integer; 32 or 64-bit float), else the nearest it holds (20-bit ALAC
    /// and float in FLAC become 24-bit, 8-bit in ALAC 16-bit); 16-bit after a lossy codec. A 64-bit float source keeps
    /// its depth, though the chain carries 32-bit floats, so its values keep float32 precision.
    public static func defaultFor(source: SampleKind, sourceCodec: String, format: OutputFormat) -> SampleBits? {
        if format.isLossy { return nil }
        let wanted: SampleBits
        switch source {
        case .lossy: wanted = .b16
        case .float: wanted = sourceCodec == "DOUBLE" ? .double : .float
        case .integer:
            if sourceCodec.hasSuffix("24") || sourceCodec.hasSuffix("20") { wanted = .b24 }
            else if sourceCodec.hasSuffix("32") { wanted = .b32 }
            else if sourceCodec.hasSuffix("8") && !sourceCodec.hasSuffix("48") { wanted = .b8 }  // PCM_S8, PCM_U8, PCM_8
            else { wanted = .b16 }
        }
        if format.allowedBits.contains(wanted) { return wanted }
        if wanted == .b8 { return .b16 }   // ALAC holds no 8-bit samples
        return format.allowedBits.contains(.b24) && wanted != .b16 ? .b24 : .b16
    }
}
