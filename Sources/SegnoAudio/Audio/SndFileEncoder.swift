import CSndFile
import Foundation
import SegnoCore
import SegnoDSP

/// Streaming encode through libsndfile into an `OutputFile` (temporary name, renamed on `finish`).
///
/// Integer outputs are converted here (`IntegerPCM`), not by libsndfile: a float `x` becomes
/// `round(x · 2^(bits−1))` clipped, the exact inverse of how libsndfile decodes integer PCM, so
/// a 16-bit WAV → 16-bit FLAC conversion is bit-transparent. No dither is added.
public final class SndFileEncoder {
    /// Where the file ends up.
    public var path: String { output.finalPath }
    private let output: OutputFile
    private var handle: OpaquePointer?
    private let channels: Int
    private let bits: SampleBits?
    private let format: OutputFormat
    /// Tags written with TagLib after the file is closed (nil: none).
    private let tags: TagPlan?
    /// Written at `finish` (`AudioEncoder.chapters`).
    public var chapters = ChapterList()
    /// Written at `finish` over the iXML chunk, WAV and RF64 only (`AudioEncoder.placedIXML`).
    public var placedIXML: [UInt8]?
    private let rate: Int
    /// Buffers libsndfile points at until the file is closed (`iXML`).
    private let held = TagWriter.Held()
    /// What libsndfile refused to write of the tags, one line each.
    public private(set) var tagNotes: [String] = []
    private var shorts: [Int16] = []
    private var ints: [Int32] = []
    /// Frames written so far.
    public private(set) var framesWritten = 0

    /// Opens the temporary file and configures the codec. Called once per output, when the
    /// chain starts and the stream's format is known.
    /// - Parameters:
    ///   - quality: 0…1 for lossy codecs (higher is better), compression effort for FLAC.
    ///   - tags: what the file carries besides audio (`TagWriter`); its `bext` already counted at
    ///     the stream's rate.
    ///   - mp3Rate: for MP3, a constant bitrate or LAME's `-V` quality instead of `quality`.
    public init(path: String, format: OutputFormat, bits: SampleBits?, quality: Double?, stream: AudioFormat,
                tags: TagPlan? = nil, mp3Rate: MP3Rate? = nil) throws {
        if format.needsFFmpeg {
            throw AudioError.unsupportedOutput(path: path, detail: "\(format.rawValue) is written through ffmpeg, not libsndfile")
        }
        if let rates = format.allowedRates, !rates.contains(stream.sampleRate) {
            throw AudioError.unsupportedOutput(path: path, detail: "\(format.rawValue) cannot be written at \(stream.sampleRate) Hz (allowed: \(rates.map(String.init).joined(separator: ", ")) Hz); add a resample stage")
        }
        if format == .opus || format == .mp3 || format == .ogg, stream.channels > 2 && format != .ogg {
            throw AudioError.unsupportedOutput(path: path, detail: "\(format.rawValue) supports at most 2 channels here, the stream has \(stream.channels); add mix: stereo")
        }
        if let bits, !format.allowedBits.contains(bits) {
            throw AudioError.unsupportedOutput(path: path, detail: "\(format.rawValue) cannot hold \(bits.samplesLabel) samples (allowed: \(format.allowedBits.map(\.rawValue).joined(separator: ", ")))")
        }
        self.channels = stream.channels
        self.rate = stream.sampleRate
        self.format = format
        self.tags = tags
        self.bits = format.isLossy ? nil : (bits ?? .b16)
        var sub: Int32
        switch format {
        case .ogg: sub = Int32(SF_FORMAT_VORBIS)
        case .opus: sub = Int32(SF_FORMAT_OPUS)
        case .mp3: sub = Int32(SF_FORMAT_MPEG_LAYER_III)
        default:
            switch self.bits! {
            case .b8: sub = Int32(format == .wav || format == .w64 || format == .rf64 ? SF_FORMAT_PCM_U8 : SF_FORMAT_PCM_S8)
            case .b16: sub = Int32(SF_FORMAT_PCM_16)
            case .b24: sub = Int32(SF_FORMAT_PCM_24)
            case .b32: sub = Int32(SF_FORMAT_PCM_32)
            case .float: sub = Int32(SF_FORMAT_FLOAT)
            case .double: sub = Int32(SF_FORMAT_DOUBLE)
            }
        }
        var info = SF_INFO()
        info.samplerate = Int32(stream.sampleRate)
        info.channels = Int32(stream.channels)
        info.format = format.majorFormat | sub
        guard sf_format_check(&info) != 0 else {
            throw AudioError.unsupportedOutput(path: path, detail: "libsndfile cannot write \(format.rawValue) with \(self.bits?.rawValue ?? "default") samples at \(stream)")
        }
        output = try OutputFile(finalPath: path)
        errno = 0
        guard let h = FileNameBytes.withCPath(output.tempPath, { sf_open($0, Int32(SFM_WRITE), &info) }) else {
            let code = errno
            let reason = String(cString: sf_strerror(nil))
            output.discard()
            if code != 0 { throw AudioError.system(path, "cannot create", errno: code) }
            throw AudioError.encodeFailed(path: path, detail: reason)
        }
        handle = h
        sf_command(h, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        if let quality {
            var q = max(0, min(1, quality))
            if format.isLossy {
                // libsndfile: 0 = best quality, 1 = smallest.
                var level = 1 - q
                sf_command(h, Int32(SFC_SET_COMPRESSION_LEVEL), &level, Int32(MemoryLayout<Double>.size))
            } else if format == .flac {
                sf_command(h, Int32(SFC_SET_COMPRESSION_LEVEL), &q, Int32(MemoryLayout<Double>.size))
            }
        }
        if let mp3Rate { Self.set(mp3Rate, h, rate: stream.sampleRate) }
        if let tags, !tags.isEmpty { tagNotes = TagWriter.beforeAudio(h, format: format, plan: tags, held: held) }
    }

    /// How an MP3 is sized: LAME's `-b` (constant, kb/s) or `-V` (variable, 0 best … 9 smallest).
    public enum MP3Rate: Sendable, Equatable {
        case constant(kbps: Int)
        case variable(v: Double)
    }

    /// Sets the bitrate mode, then the compression level libsndfile turns into LAME's setting:
    /// `-V` is level × 10; a constant bitrate is `top − level × (top − 8 or 32)` kb/s, top 320
    /// (MPEG-1, 32 kHz and up), 160 (MPEG-2) or 64 (MPEG-2.5); LAME takes the nearest legal rate.
    private static func set(_ r: MP3Rate, _ h: OpaquePointer, rate: Int) {
        var mode: Int32
        var level: Double
        switch r {
        case .variable(let v):
            mode = Int32(SF_BITRATE_MODE_VARIABLE)
            level = v / 10
        case .constant(let kbps):
            mode = Int32(SF_BITRATE_MODE_CONSTANT)
            let (top, bottom): (Double, Double) = rate >= 32000 ? (320, 32) : rate >= 16000 ? (160, 8) : (64, 8)
            // Half a kb/s under the target, so libsndfile's truncation to int lands on it.
            level = max(0, min(1, (top - Double(kbps) - 0.5) / (top - bottom)))
        }
        sf_command(h, Int32(SFC_SET_BITRATE_MODE), &mode, Int32(MemoryLayout<Int32>.size))
        sf_command(h, Int32(SFC_SET_COMPRESSION_LEVEL), &level, Int32(MemoryLayout<Double>.size))
    }

    deinit { abandon() }

    /// Writes one block. Called for each block that reaches the tap.
    public func write(_ block: AudioBlock) throws {
        guard let h = handle, block.frames > 0 else { return }
        let n = block.frames * channels
        let written: sf_count_t
        errno = 0
        switch bits {
        case .b8?, .b16?:
            if shorts.count < n { shorts = [Int16](repeating: 0, count: n) }
            // 8-bit: round at 8 bits and let libsndfile's >> 8 keep that value exactly.
            block.samples.withUnsafeBufferPointer { src in
                shorts.withUnsafeMutableBufferPointer { dst in
                    IntegerPCM.int16(UnsafeBufferPointer(rebasing: src[0..<n]), into: dst, bits8: bits == .b8)
                }
            }
            written = shorts.withUnsafeBufferPointer { sf_writef_short(h, $0.baseAddress, sf_count_t(block.frames)) }
        case .b24?, .b32?:
            if ints.count < n { ints = [Int32](repeating: 0, count: n) }
            block.samples.withUnsafeBufferPointer { src in
                ints.withUnsafeMutableBufferPointer { dst in
                    IntegerPCM.int32(UnsafeBufferPointer(rebasing: src[0..<n]), into: dst, bits24: bits == .b24)
                }
            }
            written = ints.withUnsafeBufferPointer { sf_writef_int(h, $0.baseAddress, sf_count_t(block.frames)) }
        default:
            written = block.samples.withUnsafeBufferPointer { sf_writef_float(h, $0.baseAddress, sf_count_t(block.frames)) }
        }
        if written != sf_count_t(block.frames) {
            let code = errno
            let reason = String(cString: sf_strerror(h))
            abandon()
            throw AudioError.io(path: path, detail: "write failed: \(code != 0 ? String(cString: strerror(code)) : reason)", code: code)
        }
        framesWritten += block.frames
    }

    /// Closes the codec, syncs and renames the file into place. Called once, after the last block.
    public func finish() throws {
        guard let h = handle else { throw AudioError.encodeFailed(path: path, detail: "encoder already closed") }
        handle = nil
        errno = 0
        let rc = sf_close(h)
        if rc != 0 {
            let code = errno
            output.discard()
            if code != 0 { throw AudioError.system(path, "write failed", errno: code) }
            throw AudioError.encodeFailed(path: path, detail: String(cString: sf_error_number(rc)))
        }
        var plan = tags
        if ChapterWriter.inComments(format), !chapters.isEmpty {
            plan = plan ?? TagPlan(tags: [])
            plan?.tags += ChapterWriter.comments(chapters)
        }
        do {
            if let plan { try TagWriter.afterClose(temporary: output.tempPath, path: path, format: format, plan: plan) }
            try writeChapters()
        } catch {
            output.discard()
            throw error
        }
        try output.commit()
    }

    /// Chapters in the formats that do not keep them as comments (those went with the tags), and
    /// a WAV's or RF64's placed iXML (over its chunk, or appended with the `cue ` chunk).
    private func writeChapters() throws {
        switch format {
        case .mp3 where !chapters.isEmpty: try ChapterWriter.id3(temporary: output.tempPath, path: path, chapters)
        case .wav, .rf64:
            let moved = try placedIXML.map { try IXMLPlacement.rewrite(temporary: output.tempPath, path: path, xml: $0) } ?? []
            try ChapterWriter.appendRIFF(temporary: output.tempPath, path: path, chunks: ChapterWriter.riffChunks(chapters, rate: rate) + moved)
        default: break
        }
    }

    /// Closes and deletes the temporary file; nothing appears at the final path. Safe to call twice.
    public func abandon() {
        if let h = handle { sf_close(h) }
        handle = nil
        output.discard()
    }
}
