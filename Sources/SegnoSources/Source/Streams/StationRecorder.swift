import Foundation
import Logging
import SegnoAudio
import SegnoCore

/// Records one station for the window on its own thread: resolves its URL (playlists, HLS
/// master), reads the audio itself and cuts it into segments through a `SegmentTimeline`.
///
/// Icecast/Shoutcast: segno reads the HTTP stream itself with `Icy-MetaData: 1`, takes the
/// metadata blocks out, splits the audio into frames (exact audio time, cuts between frames) and
/// pipes the frames to ffmpeg, one ffmpeg per segment. One reader means one connection to the
/// station, titles placed at the exact audio position where they arrived, and reconnects whose
/// gap is measured where the audio stops — a parallel metadata reader would need a second
/// connection and could only guess how its titles line up with ffmpeg's audio.
///
/// HLS: the media playlist is polled; new segments are fetched in sequence order from the live
/// edge and piped to ffmpeg (`mpegts` in, the audio copied out); `#EXTINF` titles become cues and
/// a jump in the media sequence is a gap.
///
/// A station that cannot be reached when the window starts fails at once (one line); one that
/// drops later is reconnected with back-off (`firstBackoff` doubling to `maxBackoff`) until the
/// window ends.
final package class StationRecorder {
    package let station: JobSpec.StreamInput.Station
    package let input: JobSpec.StreamInput
    package let ffmpeg: String
    /// True when the recording must end now (signal, --max-time, end of the window).
    package let shouldStop: () -> Bool
    /// Wall-clock end of the window (plus the allowance for connection latency).
    package let hardEnd: Date
    package let logger: Logger
    package let onSegment: (String) -> Void

    /// Seconds past the window's wall-clock end a capture may run to fill its last unit (the first
    /// connection takes a moment; the timeline starts at the first audio).
    static package let latencyAllowance = 2.0
    /// Seconds before the first reconnect after a drop; doubled after each failed attempt.
    static package let firstBackoff = 0.5
    /// The longest wait between reconnect attempts, in seconds. It is also the most audio a
    /// capture loses after the station is back, beside the connection's latency: short, because
    /// a live stream's lost seconds are gone and an attempt is one HTTP request (decision 0103).
    static package let maxBackoff = 2.0

    /// The wait, in seconds, before the attempt after one that waited `wait` and failed.
    static package func backoff(after wait: Double) -> Double { min(maxBackoff, wait * 2) }

    package init(station: JobSpec.StreamInput.Station, input: JobSpec.StreamInput, ffmpeg: String, hardEnd: Date, logger: Logger,
         shouldStop: @escaping () -> Bool, onSegment: @escaping (String) -> Void) {
        self.station = station
        self.input = input
        self.ffmpeg = ffmpeg
        self.hardEnd = hardEnd
        self.logger = logger
        self.shouldStop = shouldStop
        self.onSegment = onSegment
    }

    private var over: Bool { shouldStop() || Date() >= hardEnd }

    /// A resolved source: an ICY/HTTP audio stream already answering, or an HLS media playlist URL.
    package enum Resolved {
        case audio(any ByteStream, FrameSplitter.Codec)
        case hls(URL, codecs: String?)
    }

    /// Records until the window is full or over. Throws when the station cannot be recorded at all.
    package func run() throws(StreamError) {
        var timeline: SegmentTimeline?
        defer { try? timeline?.close() }
        var backoff = Self.firstBackoff
        var lastFailure: StreamError?
        while !over && !(timeline?.isFull ?? false) {
            do {
                switch try resolve(station.url, depth: 0) {
                case .audio(let stream, let codec):
                    try recordICY(stream, codec: codec, timeline: &timeline)
                case .hls(let media, let codecs):
                    try recordHLS(media, codecs: codecs, timeline: &timeline)
                }
                backoff = Self.firstBackoff
                if timeline?.isFull ?? false { break }
                lastFailure = .connection(station.url, "the server ended the stream")
            } catch {
                // Nothing recorded yet: the station is unreachable or not recordable; fail it now.
                // A segment that cannot be written (ffmpeg, the disk) is no reason to reconnect.
                guard timeline != nil else { throw error }
                if case .capture = error { throw error }
                lastFailure = error
            }
            if over || (timeline?.isFull ?? false) { break }
            logger.info("stream dropped; reconnecting", metadata: ["stream": "\(station.name)", "error": "\(lastFailure.map { "\($0)" } ?? "")"])
            sleep(backoff)
            backoff = Self.backoff(after: backoff)
        }
    }

    /// Sleeps `seconds`, waking early to stop.
    private func sleep(_ seconds: Double) {
        let until = Date().addingTimeInterval(seconds)
        while Date() < until && !over { Thread.sleep(forTimeInterval: min(0.1, max(0, until.timeIntervalSinceNow))) }
    }

    /// Follows playlists to something recordable. Entries are tried in order: the first that
    /// answers wins, a dead one falls through to the next.
    package func resolve(_ url: URL, depth: Int) throws(StreamError) -> Resolved {
        if depth > 4 { throw .playlist(url, "nests playlists more than 4 deep") }
        let stream = try HTTPStreamOpener.open(url, headers: ["Icy-MetaData": "1"], timeout: input.timeout)
        if !Playlist.isPlaylist(contentType: stream.contentType, url: stream.url) {
            guard let codec = FrameSplitter.codec(contentType: stream.contentType) else {
                stream.close()
                throw .unsupported(stream.url, "content type \(stream.contentType ?? "none") is not a stream segno records (MP3, AAC, HLS, or a playlist of them)")
            }
            return .audio(stream, codec)
        }
        let body: [UInt8]
        do { body = try stream.readAll(limit: 1 << 20) } catch { stream.close(); throw error }
        stream.close()
        switch try Playlist.parse(String(decoding: body, as: UTF8.self), base: stream.url) {
        case .hlsMedia:
            return .hls(stream.url, codecs: nil)
        case .hlsMaster(let variants):
            var failure: StreamError?
            for v in variants {
                do {
                    _ = try HTTPStreamOpener.fetch(v.url, timeout: input.timeout)
                    return .hls(v.url, codecs: v.codecs)
                } catch { failure = error }
            }
            throw failure ?? .playlist(url, "HLS master playlist lists no rendition")
        case .entries(let urls):
            var failure: StreamError?
            for u in urls {
                do { return try resolve(u, depth: depth + 1) } catch {
                    logger.info("playlist entry failed; trying the next", metadata: ["stream": "\(station.name)", "error": "\(error)"])
                    failure = error
                }
            }
            throw failure ?? .playlist(url, "holds no stream URL")
        }
    }

    /// The timeline, made at the first audio of the window (or the one already running, after a
    /// gap measured as the wall-clock time the timeline fell behind).
    private func timeline(_ existing: inout SegmentTimeline?, format: SegmentWriter.Format, url: URL, measureGap: Bool = true) -> SegmentTimeline {
        if let t = existing {
            t.setURL(url)
            guard measureGap else { return t }
            let behind = Date().timeIntervalSince(t.start) - t.position
            if behind > 0.05 {
                logger.info("stream reconnected; gap recorded", metadata: ["stream": "\(station.name)", "gap.seconds": "\(String(format: "%.3f", behind))"])
                t.gap(behind)
            }
            return t
        }
        let t = SegmentTimeline(station: station.name, url: url, input: input, format: format, ffmpeg: ffmpeg, start: Date(),
                                onSegment: onSegment)
        existing = t
        return t
    }

    /// Reads an Icecast/Shoutcast (or plain HTTP) audio stream until it ends, fails or the window is over.
    package func recordICY(_ stream: any ByteStream, codec: FrameSplitter.Codec, timeline existing: inout SegmentTimeline?) throws(StreamError) {
        defer { stream.close() }
        let metaint = Int(stream.headers["icy-metaint"] ?? "") ?? 0
        var demux = ICYDemuxer(metaint: metaint)
        var splitter = FrameSplitter(codec: codec)
        let format = SegmentWriter.Format(input: codec.ffmpegInput, output: codec.ffmpegOutput, ext: codec.ext)
        var timeline: SegmentTimeline?
        while !over {
            guard let chunk = try stream.read() else { return }
            for event in demux.feed(chunk) {
                switch event {
                case .title(let t):
                    if let timeline { timeline.title(t) } else { pendingTitle = t }
                case .audio(let bytes):
                    for frame in splitter.feed(bytes) {
                        if timeline == nil {
                            let t = self.timeline(&existing, format: format, url: stream.url)
                            if let p = pendingTitle { t.title(p); pendingTitle = nil }
                            timeline = t
                        }
                        if !(try timeline!.add(frame.bytes, seconds: frame.seconds)) { return }
                    }
                }
            }
        }
    }

    /// A title that arrived before the first frame of a connection.
    private var pendingTitle: String?

    /// The media sequence number of the last HLS segment recorded (kept across reconnects).
    private var hlsLast: Int?

    /// Polls an HLS media playlist and records its segments in order until the window is over.
    package func recordHLS(_ media: URL, codecs: String?, timeline existing: inout SegmentTimeline?) throws(StreamError) {
        var timeline: SegmentTimeline?
        var target = 2.0
        while !over {
            let fetched = try HTTPStreamOpener.fetch(media, timeout: input.timeout)
            guard case .hlsMedia(let playlist) = try Playlist.parse(String(decoding: fetched.body, as: UTF8.self), base: fetched.url) else {
                throw .playlist(media, "is not an HLS media playlist")
            }
            target = playlist.targetDuration
            // Start at the live edge (the newest segment); a finished playlist from its start.
            if hlsLast == nil, let newest = playlist.segments.last {
                hlsLast = (playlist.ended ? playlist.segments[0].sequence : newest.sequence) - 1
            }
            let fresh = playlist.segments.filter { $0.sequence > (hlsLast ?? Int.min) }
            for seg in fresh {
                if over { return }
                let bytes = try HTTPStreamOpener.fetch(seg.url, timeout: input.timeout, limit: 64 << 20).body
                if timeline == nil {
                    let format = Self.hlsFormat(segment: seg.url, codecs: codecs)
                    // After a reconnect the media sequence tells what was missed, not the clock.
                    timeline = self.timeline(&existing, format: format, url: media, measureGap: false)
                }
                if let l = hlsLast, seg.sequence > l + 1, timeline!.position > 0 {
                    // Segments rolled off the playlist before they were fetched.
                    let missed = Double(seg.sequence - l - 1) * target
                    logger.info("HLS segments missed; gap recorded", metadata: ["stream": "\(station.name)", "gap.seconds": "\(missed)"])
                    timeline!.gap(missed)
                }
                if let t = seg.title { timeline!.title(t) }
                if !(try timeline!.add(bytes, seconds: seg.duration)) { return }
                hlsLast = seg.sequence
                if timeline!.isFull { return }
            }
            if playlist.ended && fresh.isEmpty { return }
            sleep(min(5, max(0.2, target / 2)))
        }
    }

    /// What ffmpeg reads from HLS segments and writes: TS (or raw ADTS/MP3 segments) in, the audio
    /// copied into ADTS (AAC) or MP3 by the rendition's CODECS.
    static package func hlsFormat(segment: URL, codecs: String?) -> SegmentWriter.Format {
        let c = (codecs ?? "").lowercased()
        let mp3 = c.contains("mp4a.40.34") || c.contains("mp4a.6b") || c.contains("mp3")
        let input: String
        switch segment.pathExtension.lowercased() {
        case "aac": input = "aac"
        case "mp3": input = "mp3"
        default: input = "mpegts"
        }
        return mp3 || input == "mp3" ? .init(input: input, output: "mp3", ext: "mp3") : .init(input: input, output: "adts", ext: "aac")
    }
}
