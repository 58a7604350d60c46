import Foundation
import SegnoCore
import SegnoDSP

/// Streaming decode through FFmpeg, for what libsndfile cannot read: AAC and ALAC in
/// MP4/M4A/3GP, AAC in CAF, ADTS, AMR, IMA4 in CAF. The stream facts and tags are learnt when
/// the file is opened (`MP4Probe` reads a common MP4 header itself, `ffprobe -of json` the rest);
/// on the first `read` the decode starts writing raw interleaved Float32 on a pipe, which is read
/// block by block (constant memory, no temporary files). The decode runs in a `segno-decode`
/// helper taken from `helpers` (one per worker, serving file after file) when there is one, else
/// in an `ffmpeg` child started for this file; both yield the same samples.
///
/// Gapless: ffmpeg skips the encoder's priming frames that an MP4 edit list or `iTunSMPB`
/// declares; this decoder also drops the end padding by stopping at the length they declare, so
/// an AAC file yields the frames it was encoded from: exactly with `iTunSMPB` or an edit list in
/// the audio's own timescale, within a millisecond with an edit list in milliseconds (what
/// ffmpeg's own muxer writes). Raw streams (ADTS) declare nothing and keep ffmpeg's own length
/// (the encoder's priming and padding included).
///
/// An `ffmpeg` child is killed (SIGKILL) and reaped by `close()`, which the runner calls when the
/// recording ends, fails or is abandoned, and by `deinit`; a helper goes back to its pool when
/// the stream ended, and is killed when the file is abandoned mid-stream. At the end of the
/// stream the decode's status and error output are checked, and the length is compared with the
/// container's header, so a damaged or truncated file fails instead of passing as a short recording.
public final class FFmpegDecoder: AudioDecoder {
    public let info: SourceInfo
    private let path: String
    private let tools: FFmpegTools
    /// Frames the container declares exactly; the decode stops there (nil: ffmpeg's own length).
    package let exactFrames: Int?
    private let declaredFrames: Int?
    private let helpers: DecodeHelperPool?
    private var child: PCMSource?
    private var ended = false
    private var framesRead = 0
    private var discard = [Float]()
    /// Process id of the running or last `ffmpeg` child (tests check it was reaped).
    private(set) package var decoderProcessID: pid_t?
    /// Process id of the `segno-decode` helper that decoded this file, nil without one.
    private(set) package var helperProcessID: pid_t?
    /// Process id of the `ffprobe` run at open (reaped before `init` returned); 0 when the header
    /// was read directly.
    package let probeProcessID: pid_t

    /// Frames a stream may fall short of its container's declared length without being called
    /// truncated: headers round to whole packets (ALAC 4096 frames, AAC 1024), ffmpeg writes MP4
    /// edit lists in milliseconds, and ffprobe rounds durations; a cut file misses far more.
    static package let lengthSlack = 8192

    /// Learns the stream's facts and tags (from the header of a common MP4 file, else with
    /// ffprobe); the decode child starts on the first `read`. `kind` is what the first bytes look
    /// like (from `ContentSniffer`); `readHeaders: false` always asks ffprobe. `helpers` decode
    /// without a process per file (nil: the `ffmpeg` program). Throws `AudioError` for missing,
    /// unreadable, empty, non-audio and damaged files. Called once per recording.
    public init(path: String, tools: FFmpegTools, kind: ContentSniffer.Kind? = nil, readHeaders: Bool = true,
                helpers: DecodeHelperPool? = nil) throws {
        Glibc.close(try SndFileDecoder.openChecked(path))
        let kind = kind ?? ContentSniffer.sniff(path: path)
        let probe = try (kind.isMP4Family && readHeaders ? MP4Probe.probe(path: path, kind: kind) : nil)
            ?? FFprobe.run(path: path, kind: kind, tools: tools)
        self.path = path
        self.tools = tools
        self.helpers = helpers
        info = probe.info
        exactFrames = probe.exactFrames
        declaredFrames = probe.declaredFrames
        probeProcessID = probe.processID
    }

    deinit { close() }

    /// Fills `block` with up to `maxFrames` frames; 0 at the end. Starts the decode on the first call.
    /// Throws `AudioError.truncated` or `.decodeFailed` at the end when ffmpeg failed or the
    /// stream is much shorter than its container declares. Called once per block, one thread.
    public func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        let ch = info.channels
        block.reset(channels: ch, capacity: maxFrames)
        block.frames = 0
        if ended { return 0 }
        if child == nil { try start() }
        guard let child else { return 0 }
        var want = maxFrames
        if let exact = exactFrames { want = min(want, exact - framesRead) }
        if want <= 0 {
            try finish(child, dropRest: true)
            return 0
        }
        let got = try fill(&block.samples, frames: want, channels: ch, from: child)
        if got == 0 {
            try finish(child, dropRest: false)
            return 0
        }
        block.frames = got
        framesRead += got
        return got
    }

    /// Kills and reaps the ffmpeg child if one is running (gives a helper back, or kills it
    /// mid-stream). Safe to call twice.
    public func close() {
        child?.abandon()
        child = nil
        ended = true
    }

    // MARK: - The child

    private func start() throws {
        if let helpers, let stream = helpers.open(path: path, rate: info.sampleRate, channels: info.channels) {
            child = HelperPCM(stream: stream)
            helperProcessID = stream.pid
            return
        }
        #if _endian(big)
        let raw = "f32be"
        #else
        let raw = "f32le"
        #endif
        // -ar/-ac pin the output to what the probe reported, so the PCM always matches `info`.
        let args = ["-nostdin", "-hide_banner", "-nostats", "-loglevel", "error", "-xerror",
                    "-i", Self.inputURL(path), "-map", "0:a:0",
                    "-ar", String(info.sampleRate), "-ac", String(info.channels),
                    "-c:a", "pcm_\(raw)", "-f", raw, "pipe:1"]
        do {
            let c = try ChildProcess(executable: tools.ffmpeg, arguments: args)
            child = ProgramPCM(child: c)
            decoderProcessID = c.pid
        } catch {
            ended = true
            throw AudioError.decodeFailed(path: path, detail: "cannot run \(tools.ffmpeg): \(error)")
        }
    }

    /// Reads whole frames into `samples` until `frames` are there or the stream ends.
    private func fill(_ samples: inout [Float], frames: Int, channels: Int, from child: PCMSource) throws -> Int {
        let frameBytes = channels * MemoryLayout<Float>.size
        let wanted = frames * frameBytes
        var have = 0
        try samples.withUnsafeMutableBytes { raw in
            while have < wanted {
                let n: Int
                do { n = try child.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[have..<wanted])) } catch {
                    throw AudioError.decodeFailed(path: path, detail: "reading \(child.program)'s output: \(error)")
                }
                if n == 0 { break }
                have += n
            }
        }
        return have / frameBytes
    }

    /// At the end of the decode's output (or of the declared length): reap the child or give the
    /// helper back, check the status and error output, and check the length against the
    /// container's header.
    private func finish(_ child: PCMSource, dropRest: Bool) throws {
        ended = true
        if dropRest {
            // The encoder's end padding (under two codec frames) still has to be read so the exit
            // status can be checked; it is discarded.
            if discard.isEmpty { discard = [Float](repeating: 0, count: 4096 * info.channels) }
            while try fill(&discard, frames: 4096, channels: info.channels, from: child) > 0 {}
        }
        let (succeeded, status, why) = child.finish(path: path)
        self.child = nil
        var shortBy: String? = nil
        if let declared = declaredFrames, framesRead + Self.lengthSlack < declared {
            let rate = Double(info.sampleRate)
            shortBy = String(format: "the %@ header declares %d frames (%.3f s), %@ decoded only %d (%.3f s)",
                             info.container, declared, Double(declared) / rate, child.program, framesRead, Double(framesRead) / rate)
        }
        if !succeeded || Self.reportsDamage(why) {
            let detail = "\(child.program) \(succeeded ? "reported errors" : "failed (\(status))")"
                + " after \(framesRead) frames: " + (why.isEmpty ? "no message" : why)
            let error = Self.failure(path: path, detail: detail)
            if case .truncated = error, let shortBy { throw AudioError.truncated(path: path, detail: "\(shortBy) (\(why))") }
            throw error
        }
        if let shortBy { throw AudioError.truncated(path: path, detail: shortBy) }
    }

    // MARK: - Shared with FFprobe

    /// `path` as an ffmpeg input URL. The `file:` protocol keeps a name starting with `-` from
    /// being read as an option and a name holding `:` from being read as a protocol.
    static package func inputURL(_ path: String) -> String { "file:" + path }

    /// The child's last error lines, without the repeated file name, on one line.
    static package func summary(_ child: ChildProcess, path: String) -> String {
        withoutURL(child.stderrSummary(), path: path)
    }

    /// `text` without the `file:` URL of `path` that FFmpeg's messages repeat.
    static package func withoutURL(_ text: String, path: String) -> String {
        var s = text
        for prefix in [AudioError.quoted(inputURL(path)) + ": ", AudioError.quoted(inputURL(path))] {
            s = s.replacingOccurrences(of: prefix, with: "")
        }
        return s
    }

    /// ffmpeg goes on after many decode errors (exit 0), so its messages are checked too.
    static package func reportsDamage(_ stderr: String) -> Bool {
        stderr.contains("Invalid data") || stderr.contains("rror while decoding") || stderr.contains("partial file")
    }

    /// A failure from ffmpeg or ffprobe, as `.truncated` when the message says the file ends early.
    static package func failure(path: String, detail: String) -> AudioError {
        if detail.contains("moov atom not found") {
            return .truncated(path: path, detail: "the MP4 index ('moov') is missing: the file was cut short or the recorder never finished it (\(detail))")
        }
        // The MP4 reader marks a packet cut short by the end of the file as corrupt.
        for sign in ["corrupt input packet", "partial file", "Truncating packet"] where detail.contains(sign) {
            return .truncated(path: path, detail: detail)
        }
        return .decodeFailed(path: path, detail: detail)
    }
}

/// Where an `FFmpegDecoder`'s raw Float32 comes from: an `ffmpeg` child or a helper's stream.
package protocol PCMSource: AnyObject {
    /// "ffmpeg" or "segno-decode", for messages.
    var program: String { get }
    /// Reads up to `buffer.count` bytes of interleaved Float32; 0 at the end. Throws `POSIXError`.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// After `read` returned 0: whether the decode succeeded, its status ("exit status 1"), and
    /// its error output on one line (the file's URL left out).
    func finish(path: String) -> (succeeded: Bool, status: String, messages: String)
    /// Stops the decode wherever it is. Safe to call twice.
    func abandon()
}

/// An `ffmpeg` child started for one file.
final package class ProgramPCM: PCMSource {
    package let child: ChildProcess
    package init(child: ChildProcess) { self.child = child }
    package var program: String { "ffmpeg" }
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { try child.readStdout(into: buffer) }
    package func finish(path: String) -> (succeeded: Bool, status: String, messages: String) {
        let status = child.wait()
        return (status.succeeded, status.description, FFmpegDecoder.summary(child, path: path))
    }
    package func abandon() { child.terminate() }
}

/// One file's stream from a `segno-decode` helper.
final package class HelperPCM: PCMSource {
    package let stream: HelperStream
    package init(stream: HelperStream) { self.stream = stream }
    package var program: String { DecodeHelperPool.programName }
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { try stream.read(into: buffer) }
    package func finish(path: String) -> (succeeded: Bool, status: String, messages: String) {
        let outcome = stream.result
        stream.close()
        switch outcome {
        case .ended(_, let log)?:
            return (true, "done", FFmpegDecoder.withoutURL(log, path: path))
        case .failed(let reason)?:
            return (false, "stopped at an error", FFmpegDecoder.withoutURL(reason, path: path))
        case .died(let status, let stderr)?:
            return (false, "the helper died, \(status)", stderr)
        case nil:
            return (false, "stream ended without an end message", "")
        }
    }
    package func abandon() { stream.close() }
}
