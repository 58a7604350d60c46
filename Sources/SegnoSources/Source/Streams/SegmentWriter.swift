import Foundation
import SegnoAudio
import SegnoCore

/// One segment file being captured: the stream's bytes go to `ffmpeg -c copy` on its stdin, which
/// writes the stream's own container (MP3, ADTS AAC) under a temporary name in the capture folder.
/// `finish` writes the cue sidecar, then renames the audio into place, so the folder scan never
/// sees a segment that is not whole. Owned by one station's thread.
///
/// Names (local time of the segment's first audio): `{station}/{YYYY-MM-DD}/{HH-MM-SS}.{ext}` and
/// beside it `{HH-MM-SS}.cue.json`: `{"station", "url", "started", "duration", "title",
/// "titles": [{"offset", "title"}], "gaps": [{"at", "seconds"}]}` (offsets in seconds of the
/// segment's audio).
final package class SegmentWriter {
    /// What ffmpeg reads and writes.
    package struct Format: Sendable, Equatable {
        /// ffmpeg demuxer for the bytes piped in (`mp3`, `aac`, `mpegts`).
        package var input: String
        /// ffmpeg muxer of the file (`mp3`, `adts`).
        package var output: String
        package var ext: String
    }

    package let finalPath: String
    package let cuePath: String
    package let started: Date
    private let file: OutputFile
    private let child: ChildProcess
    /// Seconds of audio written so far.
    private(set) package var seconds = 0.0
    private(set) package var titles: [(offset: Double, title: String)] = []
    private(set) package var gaps: [(at: Double, seconds: Double)] = []

    /// Starts ffmpeg for a segment of `station` beginning at `started`.
    package init(captureRoot: String, station: String, started: Date, format: Format, ffmpeg: String) throws(StreamError) {
        self.started = started
        var t = time_t(started.timeIntervalSince1970.rounded(.down))
        var tmv = tm()
        localtime_r(&t, &tmv)
        let day = String(format: "%04d-%02d-%02d", Int(tmv.tm_year) + 1900, Int(tmv.tm_mon) + 1, Int(tmv.tm_mday))
        let folder = "\(captureRoot)/\(station)/\(day)"
        var stem = String(format: "%02d-%02d-%02d", Int(tmv.tm_hour), Int(tmv.tm_min), Int(tmv.tm_sec))
        // Two segments in one second (a restart): the second gets "-2".
        var n = 1
        while FileManager.default.fileExists(atPath: "\(folder)/\(stem).\(format.ext)") || FileManager.default.fileExists(atPath: "\(folder)/\(stem).cue.json") {
            n += 1
            stem = String(format: "%02d-%02d-%02d-%d", Int(tmv.tm_hour), Int(tmv.tm_min), Int(tmv.tm_sec), n)
        }
        finalPath = "\(folder)/\(stem).\(format.ext)"
        cuePath = "\(folder)/\(stem).cue.json"
        do { file = try OutputFile(finalPath: finalPath) } catch { throw .capture("\(error)") }
        do {
            child = try ChildProcess(executable: ffmpeg, arguments: [
                "-hide_banner", "-loglevel", "error", "-f", format.input, "-i", "pipe:0",
                "-map", "0:a:0", "-c", "copy", "-f", format.output, "-y", file.tempPath,
            ], stdinPipe: true)
        } catch {
            file.discard()
            throw .capture("cannot start \(ffmpeg): \(error)")
        }
    }

    deinit { abandon() }

    /// Appends stream bytes holding `seconds` of audio.
    package func write(_ bytes: [UInt8], seconds: Double) throws(StreamError) {
        // A station's ffmpeg that dies must give EPIPE on write, not kill segno.
        do { try SignalMask.withoutSIGPIPE { try child.writeStdin(bytes) } } catch {
            throw .capture("ffmpeg stopped while writing \(AudioError.quoted(finalPath)): \(child.stderrSummary())")
        }
        self.seconds += seconds
    }

    /// A title that starts here (not repeated when it is the one already running).
    package func title(_ t: String) {
        if titles.last?.title != t { titles.append((seconds, t)) }
    }

    /// A stretch of `seconds` the station's audio is missing here (a dropped connection).
    package func gap(_ seconds: Double) {
        gaps.append((self.seconds, seconds))
    }

    /// Closes ffmpeg's input, waits for it, writes the cue sidecar and renames the segment into
    /// place. Returns the final path.
    package func finish(station: String, url: URL) throws(StreamError) -> String {
        child.closeStdin()
        let end = child.wait()
        guard end.succeeded else {
            file.discard()
            throw .capture("ffmpeg failed on \(AudioError.quoted(finalPath)) (\(end)): \(child.stderrSummary())")
        }
        let first = titles.first?.title
        let cue: JSONValue = .object([
            ("station", .string(station)),
            ("url", .string(url.absoluteString)),
            ("started", .string(Self.isoMilliseconds(started))),
            ("duration", .double((seconds * 1000).rounded() / 1000)),
            ("title", .string(first.map { "\(station) - \($0)" } ?? station)),
            ("titles", .array(titles.map { .object([("offset", .double(($0.offset * 1000).rounded() / 1000)), ("title", .string($0.title))]) })),
            ("gaps", .array(gaps.map { .object([("at", .double(($0.at * 1000).rounded() / 1000)), ("seconds", .double(($0.seconds * 1000).rounded() / 1000))]) })),
        ])
        do {
            try OutputFile.write(Array((cue.serialized() + "\n").utf8), to: cuePath)
            try file.commit()
        } catch {
            file.discard()
            throw .capture("\(error)")
        }
        return finalPath
    }

    /// Stops ffmpeg and deletes the temporary file. Safe to call after `finish`.
    package func abandon() {
        child.terminate()
        file.discard()
    }

    /// "2026-11-23T08:00:00.125Z": when the segment's first audio arrived, to the millisecond.
    static package func isoMilliseconds(_ date: Date) -> String {
        let whole = date.timeIntervalSince1970.rounded(.down)
        let ms = min(999, Int(((date.timeIntervalSince1970 - whole) * 1000).rounded()))
        let s = RecordingContext.isoDateTime(Date(timeIntervalSince1970: whole))
        return String(s.dropLast()) + String(format: ".%03dZ", ms)
    }

    /// The cue sidecar of a captured segment (`…/08-00-00.mp3` → `…/08-00-00.cue.json`).
    static package func cuePath(forSegment path: String) -> String {
        (path as NSString).deletingPathExtension + ".cue.json"
    }
}
