/// How many frames one waveform point (pixel) covers, as a user asks for it.
///
/// Validate with `validate()` when the spec or command line is read; turn into samples per
/// pixel with `samplesPerPixel(sampleRate:frames:)` when the stream's format is known.
public enum WaveformResolution: Sendable, Hashable, CustomStringConvertible {
    /// A fixed number of frames per point (audiowaveform's `-z`/`--zoom`), at least 2.
    case samplesPerPixel(Int)
    /// Points per second of audio (`--pixels-per-second`): spp = sampleRate / pps in integer
    /// division (44100 Hz at 128 → 344), which must come out at least 2.
    case pixelsPerSecond(Int)
    /// About this many points over the whole recording. spp = max(2, ⌈frames / points⌉), so the
    /// data never has more than `points` points (it has fewer when `points` does not divide the
    /// frame count, and when frames / points < 2). Needs the frame count before the first block;
    /// if the stream then turns out longer or shorter, spp stays and the length follows the audio.
    case points(Int)
    /// audiowaveform's `--end` (with `--start` and `--width`), and `-z auto` for pictures:
    /// `seconds` of audio across `width` points, spp = ⌊seconds × rate⌋ / width in integer
    /// division, as audiowaveform computes it. `seconds` nil means the whole recording
    /// (spp = ⌊frames / width⌋; needs the frame count like `points`).
    case span(seconds: Double?, width: Int)

    /// Checks what can be checked without the audio: called when a spec or command line is read.
    public func validate() throws(WaveformError) {
        switch self {
        case .samplesPerPixel(let n): if n < 2 { throw .invalidSamplesPerPixel(n) }
        case .pixelsPerSecond(let n): if n < 1 { throw .invalidPixelsPerSecond(n) }
        case .points(let n): if n < 1 { throw .invalidPoints(n) }
        case .span(let seconds, let width):
            if width < 1 { throw .invalidSize("width", width) }
            if let seconds, !(seconds.isFinite && seconds > 0) { throw .invalidSpan(seconds) }
        }
    }

    /// Samples (frames) per pixel for a stream at `sampleRate` Hz holding `frames` frames
    /// (nil when the source cannot tell). Called once per recording, when the stream starts.
    public func samplesPerPixel(sampleRate: Int, frames: Int?) throws(WaveformError) -> Int {
        try validate()
        guard sampleRate >= 1 else { throw .invalidSampleRate(sampleRate) }
        let spp: Int
        switch self {
        case .samplesPerPixel(let n):
            spp = n
        case .pixelsPerSecond(let pps):
            spp = sampleRate / pps
        case .points(let points):
            guard let frames, frames >= 0 else { throw .pointsNeedFrameCount }
            spp = Swift.max(2, (frames + points - 1) / points)
        case .span(let seconds, let width):
            if let seconds {
                let samples = seconds * Double(sampleRate)
                guard samples < 9.0e18 else { throw .invalidSpan(seconds) }
                spp = Int(samples) / width
            } else {
                guard let frames, frames >= 0 else { throw .pointsNeedFrameCount }
                spp = frames / width
            }
        }
        guard spp >= 2, spp <= Int(Int32.max) else { throw .invalidSamplesPerPixel(spp) }
        return spp
    }

    public var description: String {
        switch self {
        case .samplesPerPixel(let n): return "\(n) samples per pixel"
        case .pixelsPerSecond(let n): return "\(n) pixels per second"
        case .points(let n): return "\(n) points"
        case .span(let seconds?, let width): return "\(seconds) s over \(width) points"
        case .span(nil, let width): return "whole recording over \(width) points"
        }
    }
}
