import Foundation
import SegnoAudio
import SegnoCore

/// A station's capture window as a timeline of seconds from its first audio: audio advances it,
/// and so do gaps (a dropped connection), so segment `k` always covers [k × segment, (k+1) ×
/// segment) of the window and is named by the wall-clock time where it starts. Cuts fall between
/// units (an MP3/AAC frame, an HLS segment), at the unit boundary nearest to the grid line: a
/// segment's audio is its length ± half a unit, less its gaps. Owned by one station's thread.
final package class SegmentTimeline {
    package let station: String
    package let input: JobSpec.StreamInput
    package let format: SegmentWriter.Format
    package let ffmpeg: String
    /// Wall-clock time of position 0 (the first audio of the window).
    package let start: Date
    /// Seconds on the timeline: audio plus gaps.
    private(set) package var position = 0.0
    private var current: SegmentWriter?
    /// Which grid cell (`k`) the current segment fills.
    private var currentIndex = 0
    private var currentTitle: String?
    private var url: URL
    /// Called with the path of each segment renamed into place.
    package let onSegment: (String) -> Void

    package init(station: String, url: URL, input: JobSpec.StreamInput, format: SegmentWriter.Format, ffmpeg: String, start: Date,
         onSegment: @escaping (String) -> Void) {
        self.station = station
        self.url = url
        self.input = input
        self.format = format
        self.ffmpeg = ffmpeg
        self.start = start
        self.onSegment = onSegment
    }

    deinit { current?.abandon() }

    /// True once the window's length of timeline is captured.
    package var isFull: Bool { complete || position >= input.duration - 1e-6 }
    /// Set when a unit would have ended past the window.
    private var complete = false

    /// The URL being recorded (the playlist entry that answered), written into each cue sidecar.
    package func setURL(_ u: URL) { url = u }

    /// Adds one unit of `seconds` audio. Returns false (and writes nothing) when the unit would
    /// end the window nearer past its end than before it: the capture is complete.
    @discardableResult
    package func add(_ bytes: [UInt8], seconds: Double) throws(StreamError) -> Bool {
        let middle = position + seconds / 2
        if middle > input.duration { complete = true; return false }
        let index = Int(middle / input.segment)
        if current != nil && index > currentIndex { try close() }
        if current == nil {
            currentIndex = index
            let w = try SegmentWriter(captureRoot: input.capture, station: station, started: start.addingTimeInterval(position),
                                      format: format, ffmpeg: ffmpeg)
            if let t = currentTitle { w.title(t) }
            current = w
        }
        try current!.write(bytes, seconds: seconds)
        position += seconds
        return true
    }

    /// A title that starts at the current position (ICY `StreamTitle`, HLS `#EXTINF`).
    package func title(_ t: String) {
        // An empty StreamTitle says nothing (servers send it before the first song is known).
        guard !t.isEmpty else { return }
        currentTitle = t
        current?.title(t)
    }

    /// `seconds` of the station's audio are missing here.
    package func gap(_ seconds: Double) {
        guard seconds > 0 else { return }
        let s = min(seconds, max(0, input.duration - position))
        current?.gap(s)
        position += s
    }

    /// Closes the segment being written (complete, renamed into place), if any.
    package func close() throws(StreamError) {
        guard let c = current else { return }
        current = nil
        let path = try c.finish(station: station, url: url)
        onSegment(path)
    }
}
