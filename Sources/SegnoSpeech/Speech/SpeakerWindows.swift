import Foundation

/// One recording's speech windows, found and sent to the embedding helper while the audio flows
/// (decision 0074): the 16 kHz mono samples go to the voice activity detector and into a buffer
/// that holds only what a speech segment not yet reported may still need (from the detector's
/// `decided` sample on); each segment the detector closes is cut into windows
/// (`Diarizer.windows`) that go to the helper at once. Memory stays bounded by the longest speech
/// segment (Silero splits speech at 10 s; WebRTC's segments end at 300 ms of silence), not the
/// recording's length: what is kept for the whole recording are the speech segments, the windows
/// and, from the helper, one embedding (256 floats) per window.
/// Lifecycle: `feed` for each run of samples, then `finish` once.
package final class SpeakerWindows {
    private let detector: any VoiceDetector
    private let helper: SpeakerHelper
    /// Samples from `base` (16 kHz sample index) on.
    private var buffer: [Float] = []
    private var base = 0
    private var fed = 0
    private var fresh: [Range<Int>] = []
    /// Every speech segment reported, in order ([start, end) in 16 kHz samples).
    private(set) package var speech: [Range<Int>] = []
    /// Every window sent, in order.
    private(set) package var windows: [Range<Int>] = []
    /// The most samples the buffer held at once (tests check it stays bounded).
    private(set) package var largestBuffer = 0

    package init(detector: any VoiceDetector, helper: SpeakerHelper) {
        self.detector = detector
        self.helper = helper
    }

    /// Takes the next samples (16 kHz mono, [-1, 1]). Called for each block, in order.
    package func feed(_ samples: UnsafeBufferPointer<Float>) throws(SpeechError) {
        guard let p = samples.baseAddress, !samples.isEmpty else { return }
        buffer.append(contentsOf: samples)
        fed += samples.count
        largestBuffer = max(largestBuffer, buffer.count)
        detector.accept(p, count: samples.count)
        try sendReported()
        // Audio before `decided` is in a reported segment (and sent) or silence.
        let keepFrom = min(detector.decided, fed)
        let dead = keepFrom - base
        if dead > 0 && (dead >= 16_000 || dead * 2 >= buffer.count) {
            buffer.removeFirst(dead)
            base = keepFrom
        }
    }

    /// Closes what the detector holds, sends the last windows and returns the embedding of each
    /// window (in `windows` order), or why the helper could not embed them (`.failure`). Throws
    /// when the helper died. Called once after the last samples.
    package func finish() throws(SpeechError) -> Result<[[Float]], SpeechError> {
        detector.flush()
        try sendReported()
        buffer = []
        return try helper.embeddings()
    }

    private func sendReported() throws(SpeechError) {
        fresh.removeAll(keepingCapacity: true)
        detector.takeSegments(into: &fresh)
        for segment in fresh {
            speech.append(segment)
            for w in Diarizer.windows(speech: [segment], rate: VoiceActivityEngine.rate) {
                let a = max(w.lowerBound, base) - base, b = min(w.upperBound, base + buffer.count) - base
                guard b > a else { continue }
                try buffer.withUnsafeBufferPointer { (all) throws(SpeechError) in
                    try helper.send(window: UnsafeBufferPointer(rebasing: all[a..<b]))
                }
                windows.append(w)
            }
        }
    }
}
