import Foundation
import SegnoDSP

/// How the source stores its samples; decides how a waveform maps floats back to int16
/// exactly as audiowaveform would have read the file.
public enum SampleKind: String, Sendable, Codable {
    /// Integer PCM (8/16/24/32-bit, ALAC): decoded floats are exact integer fractions.
    case integer
    /// Floating-point PCM (32/64-bit float).
    case float
    /// A lossy codec (MP3, Vorbis, Opus, AAC) decoded to float.
    case lossy
}

/// Facts about a source recording, known once it is opened.
public struct SourceInfo: Sendable, Equatable, Codable {
    /// Container name, e.g. "WAV", "FLAC", "CAF".
    public var container: String
    /// Codec or sample encoding, e.g. "PCM_16", "FLAC", "Vorbis".
    public var codec: String
    /// Frames per second, in Hz.
    public var sampleRate: Int
    /// Channels per frame.
    public var channels: Int
    /// Frames the container declares (exact for PCM, FLAC, Ogg; an estimate for MP3).
    public var frames: Int
    /// How the samples are stored.
    public var sampleKind: SampleKind
    /// The recording's own tags, keys lowercased: `title`, `date`, `creation_time`, `location`
    /// (ISO 6709, from an iPhone's `©xyz`), `artist`, `comment`, … Nil when the file has none or
    /// the decoder reads none (libsndfile's decodes).
    public var tags: [String: String]?

    public init(container: String, codec: String, sampleRate: Int, channels: Int, frames: Int, sampleKind: SampleKind,
                tags: [String: String]? = nil) {
        self.container = container
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.frames = frames
        self.sampleKind = sampleKind
        self.tags = tags
    }

    /// Duration in seconds.
    public var duration: Double { sampleRate > 0 ? Double(frames) / Double(sampleRate) : 0 }
    /// The stream format.
    public var format: AudioFormat { AudioFormat(sampleRate: sampleRate, channels: channels) }
}

/// The source of a chain: yields a recording's frames in blocks. One decoder belongs to one
/// worker; it is opened once per recording, read to the end, then closed.
public protocol AudioDecoder: AnyObject {
    /// What was learnt when the file was opened.
    var info: SourceInfo { get }
    /// Fills `block` with up to `maxFrames` frames (interleaved Float32) and returns how many;
    /// 0 means the end of the stream. Throws if the file turns out to be damaged.
    /// Called once per block, from one thread.
    func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int
    /// Releases the file (and any child process). Safe to call twice.
    func close()
    /// What the decode met that did not stop it (junk skipped in a damaged MP3), one line each,
    /// without the file name; read after the last block and reported as warnings.
    var notes: [String] { get }
    /// What salvaging a damaged recording did (frames lost, where, why); nil for a decoder that
    /// was not asked to salvage or read the file the ordinary way. Complete after the last block.
    var salvage: SalvageReport? { get }
}

extension AudioDecoder {
    public var notes: [String] { [] }
    public var salvage: SalvageReport? { nil }
}

/// A decoder that can also hand out the source's samples as int16, the way libsndfile's
/// `sf_readf_short` (and so audiowaveform) reads them: for integer sources these are the stored
/// values themselves (24/32-bit shifted down, 8-bit shifted up), with no Float32 round trip.
/// The waveform-only chain uses it (`StageChain`); everything else reads Float32 blocks.
public protocol Int16Decoding: AudioDecoder {
    /// True when `readInt16` yields exact integer samples: integer PCM, ALAC, FLAC, μ-law, A-law
    /// and the ADPCM codecs libsndfile decodes to int16 itself. False for float and lossy
    /// codecs (Vorbis, Opus, MP3), which must go through Float32 (`Int16Conversion`).
    var readsExactInt16: Bool { get }
    /// Fills `buffer` with up to `maxFrames` interleaved int16 frames (`buffer` holds at least
    /// `maxFrames × channels` values) and returns how many; 0 at the end. Throws like `read`.
    /// Called once per block, from one thread, instead of `read` (never mixed with it).
    func readInt16(into buffer: UnsafeMutableBufferPointer<Int16>, maxFrames: Int) throws -> Int
}
