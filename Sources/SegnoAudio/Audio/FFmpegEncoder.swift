import Foundation
import SegnoCore
import SegnoDSP

/// Streaming encode to AAC-LC or ALAC in an MP4 (`.m4a`) file through the `ffmpeg` program, into
/// an `OutputFile` (temporary name, renamed on `finish`). segno links no FFmpeg library (Debian
/// builds them with GPL parts); it runs the program, as for decoding AAC.
///
/// The child reads raw interleaved PCM on its stdin — Float32 for AAC, 16-bit or 24-bit-in-32
/// integers for ALAC (converted by `IntegerPCM`, so a 16-bit source comes back bit for bit) — and
/// writes the temporary file itself. Each block is written to the pipe as it arrives: segno's
/// memory does not grow with the recording's length.
///
/// The file's length is exact: the movie timescale is the sample rate, so the edit list ffmpeg
/// writes to hide the AAC encoder's priming and padding counts frames, not milliseconds; `finish`
/// reads the finished header back and checks it holds the frames that were sent. `+faststart`
/// moves the index to the front (browsers and phones start playing before the whole file is
/// there); ffmpeg rewrites the file once for that, which costs nothing measurable (10 min of
/// stereo noise at 128 kb/s: 6.87 s CPU with and without, medians of 3 interleaved runs).
///
/// The child is killed (SIGKILL) and reaped by `abandon()` (and `deinit`) before the temporary
/// file is removed; its error output becomes the error's message.
public final class FFmpegEncoder {
    /// Where the file ends up.
    public var path: String { output.finalPath }
    private let output: OutputFile
    private var child: ChildProcess?
    private let channels: Int
    private let rate: Int
    private let format: OutputFormat
    /// 16 or 24 for ALAC; nil for AAC (Float32 goes to ffmpeg).
    private let bits: SampleBits?
    /// Tags and pictures written with TagLib once ffmpeg has finished (nil: none).
    private let tags: TagPlan?
    /// Written at `finish` (`AudioEncoder.chapters`), through ffmpeg.
    public var chapters = ChapterList()
    private let executable: String
    private var shorts: [Int16] = []
    private var ints: [Int32] = []
    /// Frames written so far.
    public private(set) var framesWritten = 0

    /// The AAC bitrate when none is given, in bits per second: 64 kb/s per channel (128 kb/s for
    /// stereo), transparent for speech and good for music.
    public static func defaultBitrate(channels: Int) -> Int { 64_000 * max(1, channels) }

    /// Bitrates the `bitrate` option takes, in bits per second (ffmpeg lowers what a sample rate
    /// cannot carry: at most 6144 bits per channel per 1024 frames).
    public static let bitrateRange = 8_000...512_000

    /// Checks the stream fits the codec, creates the temporary file's name and starts `ffmpeg`
    /// (found as `executable`). Called once per output, when the chain starts and the stream's
    /// format is known. Throws `AudioError.unsupportedOutput` for a rate or channel count the codec
    /// cannot take, `.missingEncoder` when ffmpeg is not installed, `.io` when it cannot run.
    /// - Parameters:
    ///   - bits: ALAC's depth, 16 or 24 (default 16); must be nil for AAC.
    ///   - bitrate: AAC's bitrate in bits per second (default `defaultBitrate`).
    ///   - executable: the absolute path of `ffmpeg`, or nil when it is not on `PATH`.
    ///   - tags: what to write as `ilst` items and `covr` after ffmpeg has finished.
    public init(path: String, format: OutputFormat, bits: SampleBits?, bitrate: Int?, stream: AudioFormat,
                executable: String?, tags: TagPlan? = nil) throws {
        precondition(format.needsFFmpeg, "FFmpegEncoder writes aac and alac only")
        if let rates = format.allowedRates, !rates.contains(stream.sampleRate) {
            throw AudioError.unsupportedOutput(path: path, detail: "\(format.rawValue) cannot be written at \(stream.sampleRate) Hz (allowed: \(rates.map(String.init).joined(separator: ", ")) Hz); add a resample stage")
        }
        if let most = format.maxChannels, stream.channels > most {
            throw AudioError.unsupportedOutput(path: path, detail: "\(format.rawValue) supports at most \(most) channels, the stream has \(stream.channels); add mix: stereo")
        }
        if bits != nil, format == .aac {
            throw AudioError.unsupportedOutput(path: path, detail: "aac is lossy; use bitrate instead of bits")
        }
        if let bits, !format.allowedBits.contains(bits) {
            throw AudioError.unsupportedOutput(path: path, detail: "\(format.rawValue) cannot hold \(bits.samplesLabel) samples (allowed: \(format.allowedBits.map(\.rawValue).joined(separator: ", ")))")
        }
        guard let executable else {
            throw AudioError.missingEncoder(path: path, detail: "\(format == .aac ? "AAC" : "ALAC") output needs ffmpeg on PATH; \(FFmpegTools.installHint)")
        }
        self.executable = executable
        self.channels = stream.channels
        self.rate = stream.sampleRate
        self.format = format
        self.bits = format == .alac ? (bits ?? .b16) : nil
        self.tags = tags
        output = try OutputFile(finalPath: path)
        let args = Self.arguments(format: format, bits: self.bits, bitrate: bitrate ?? Self.defaultBitrate(channels: channels),
                                  stream: stream, to: output.tempPath)
        do {
            child = try ChildProcess(executable: executable, arguments: args, stdinPipe: true)
        } catch {
            output.discard()
            throw AudioError.io(path: path, detail: "encode failed: cannot run \(executable): \(error)")
        }
    }

    deinit { abandon() }

    /// ffmpeg's arguments: raw PCM on stdin, one audio stream out, reproducible bytes (no
    /// version string, no creation time), the movie timescale at the sample rate.
    static package func arguments(format: OutputFormat, bits: SampleBits?, bitrate: Int, stream: AudioFormat, to file: String) -> [String] {
        #if _endian(big)
        let e = "be"
        #else
        let e = "le"
        #endif
        let raw: String
        var codec: [String]
        switch (format, bits) {
        case (.alac, .b24?):
            raw = "s32" + e
            codec = ["-c:a", "alac", "-sample_fmt", "s32p", "-bits_per_raw_sample", "24"]
        case (.alac, _):
            raw = "s16" + e
            codec = ["-c:a", "alac", "-sample_fmt", "s16p"]
        default:
            raw = "f32" + e
            codec = ["-c:a", "aac", "-b:a", String(bitrate)]
        }
        codec += ["-flags:a", "+bitexact"]
        return ["-nostdin", "-hide_banner", "-nostats", "-loglevel", "error",
                "-f", raw, "-ar", String(stream.sampleRate), "-ac", String(stream.channels), "-i", "pipe:0",
                "-map", "0:a:0"] + codec
            + ["-map_metadata", "-1", "-fflags", "+bitexact", "-movie_timescale", String(stream.sampleRate),
               "-movflags", "+faststart", "-f", "ipod", "-y", FFmpegDecoder.inputURL(file)]
    }

    /// Sends one block to ffmpeg. Called for each block that reaches the tap. Throws when ffmpeg
    /// is gone (its error output in the message); the temporary file is then removed.
    public func write(_ block: AudioBlock) throws {
        guard let c = child, block.frames > 0 else { return }
        let n = block.frames * channels
        do {
            // A child that dies must give EPIPE on write, not kill segno; SIGPIPE is blocked on
            // this thread only, so segno's own stdout keeps the default (`segno … | head`).
            try DecodeHelper.withoutSIGPIPE {
            switch bits {
            case .b16?:
                if shorts.count < n { shorts = [Int16](repeating: 0, count: n) }
                try block.samples.withUnsafeBufferPointer { src in
                    try shorts.withUnsafeMutableBufferPointer { dst in
                        IntegerPCM.int16(UnsafeBufferPointer(rebasing: src[0..<n]), into: dst)
                        try c.writeStdin(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: dst[0..<n])))
                    }
                }
            case .b24?:
                if ints.count < n { ints = [Int32](repeating: 0, count: n) }
                try block.samples.withUnsafeBufferPointer { src in
                    try ints.withUnsafeMutableBufferPointer { dst in
                        IntegerPCM.int32(UnsafeBufferPointer(rebasing: src[0..<n]), into: dst, bits24: true)
                        try c.writeStdin(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: dst[0..<n])))
                    }
                }
            default:
                try block.samples.withUnsafeBufferPointer { src in
                    try c.writeStdin(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: src[0..<n])))
                }
            }
            }
        } catch {
            // ffmpeg stopped reading: it died or gave up; its own words say why.
            c.closeStdin()
            let failure = Self.failure(path: path, temporary: output.tempPath, child: c, framesSent: framesWritten, fallback: "\(error)")
            abandon()
            throw failure
        }
        framesWritten += block.frames
    }

    /// Ends the stream, waits for ffmpeg, checks its exit status and the finished file's length,
    /// then syncs and renames the file into place. Called once, after the last block.
    public func finish() throws {
        guard let c = child else { throw AudioError.encodeFailed(path: path, detail: "encoder already closed") }
        if framesWritten == 0 {
            abandon()
            throw AudioError.encodeFailed(path: path, detail: "the stream holds no audio; an .m4a file needs at least one frame")
        }
        c.closeStdin()
        _ = try? c.readAllStdout(limit: 1 << 16)
        let status = c.wait()
        child = nil
        guard status.succeeded else {
            let failure = Self.failure(path: path, temporary: output.tempPath, child: c, framesSent: framesWritten, fallback: "no message")
            output.discard()
            throw failure
        }
        guard let probe = MP4Probe.probe(path: output.tempPath, kind: .mp4) else {
            output.discard()
            throw AudioError.encodeFailed(path: path, detail: "cannot read back the header ffmpeg wrote")
        }
        if probe.info.frames != framesWritten {
            output.discard()
            throw AudioError.encodeFailed(path: path, detail: "ffmpeg wrote \(probe.info.frames) frames, segno sent \(framesWritten)")
        }
        if !chapters.isEmpty {
            do { try addChapters() } catch {
                output.discard()
                throw error
            }
        }
        if let tags {
            do { try TagWriter.afterClose(temporary: output.tempPath, path: path, format: format, plan: tags) } catch {
                output.discard()
                throw error
            }
        }
        try output.commit()
    }

    /// Remuxes the finished file with its chapters (ffmpeg `-map_chapters` from an `ffmetadata`
    /// file: a `chpl` box and a QuickTime chapter track, which ffmpeg and Apple's players read;
    /// `-map_metadata 1`, the file's empty global metadata, since `-1` would drop the titles too),
    /// audio copied, then puts it back under the temporary name. Before TagLib writes the tags.
    private func addChapters() throws {
        let meta = output.tempPath + ".chapters", remuxed = output.tempPath + ".chaptered"
        defer { unlink(meta); unlink(remuxed) }
        do { try Data(ChapterWriter.ffmetadata(chapters).utf8).write(to: URL(fileURLWithPath: meta)) } catch {
            throw AudioError.encodeFailed(path: path, detail: "chapters not written: \(error)")
        }
        let args = ["-nostdin", "-hide_banner", "-nostats", "-loglevel", "error", "-i", FFmpegDecoder.inputURL(output.tempPath),
                    "-f", "ffmetadata", "-i", FFmpegDecoder.inputURL(meta), "-map", "0:a", "-map_metadata", "1", "-map_chapters", "1",
                    "-c", "copy", "-fflags", "+bitexact", "-movflags", "+faststart", "-f", "ipod", "-y", FFmpegDecoder.inputURL(remuxed)]
        let c: ChildProcess
        do { c = try ChildProcess(executable: executable, arguments: args) } catch {
            throw AudioError.encodeFailed(path: path, detail: "chapters not written: cannot run \(executable): \(error)")
        }
        _ = try? c.readAllStdout(limit: 1 << 16)
        guard c.wait().succeeded, rename(remuxed, output.tempPath) == 0 else {
            throw AudioError.encodeFailed(path: path, detail: "chapters not written: ffmpeg could not remux the file")
        }
    }

    /// Kills ffmpeg and removes the temporary file; nothing appears at the final path. Safe to
    /// call twice.
    public func abandon() {
        child?.terminate()
        child = nil
        output.discard()
    }

    /// What a failed ffmpeg said, as an error: `.io` with the `errno` its message names (a full
    /// disk is the environment's, retried by the next run), else `.io` without a code (a crashed or
    /// killed program is the environment's too, never the recording's).
    static package func failure(path: String, temporary: String, child: ChildProcess, framesSent: Int, fallback: String) -> AudioError {
        let status = child.wait()
        // ffmpeg names the temporary file; the message names the output already.
        var why = FFmpegDecoder.summary(child, path: temporary)
        if why.isEmpty { why = fallback }
        var code: Int32 = 0
        for c in [ENOSPC, EDQUOT, EROFS, EACCES, EFBIG, EIO] where why.contains(String(cString: strerror(c))) {
            code = c
            break
        }
        return .io(path: path, detail: "encode failed: ffmpeg \(status) after \(framesSent) frames: \(why)", code: code)
    }
}
