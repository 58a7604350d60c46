/// Everything that can go wrong in SegnoWaveform: settings that make no sense, stream formats
/// it cannot describe, and waveform files (`.dat`, `.json`) it refuses to read.
///
/// Messages name the value that was wrong and, for settings, the rule it broke, so the caller
/// only has to prefix the file or spec key.
public enum WaveformError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `samples_per_pixel` (given, or derived from `pixels_per_second` or `points`) is below 2.
    case invalidSamplesPerPixel(Int)
    /// `pixels_per_second` is not a positive number.
    case invalidPixelsPerSecond(Int)
    /// `points` is not a positive number.
    case invalidPoints(Int)
    /// An `--end`/`--start` span that is not a positive number of seconds.
    case invalidSpan(Double)
    /// `points` was asked for, but the stream's frame count is not known before it starts.
    case pointsNeedFrameCount
    /// The sample rate is not a positive number of Hz.
    case invalidSampleRate(Int)
    /// The channel count is outside what the output can hold (1–24 split, 1–1024 mixed).
    case invalidChannelCount(Int)
    /// `bits` is neither 8 nor 16.
    case invalidBits(Int)
    /// No zoom level was given to a peak generator.
    case noZoomLevels
    /// A block handed to the generator has a different channel count than the stream it started with.
    case blockChannelMismatch(expected: Int, got: Int)
    /// A coarser zoom was asked for that is not a whole multiple of the data's samples per pixel.
    case notWholeMultiple(from: Int, to: Int)
    /// A rescale was asked to a finer zoom than the data has (information that is gone).
    case finerZoom(from: Int, to: Int)
    /// A picture or level count is zero or negative (width, height, number of levels).
    case invalidSize(String, Int)
    /// A colour string is not `#rrggbb` or `#rrggbbaa`.
    case invalidColor(String)
    /// An encoded level string is not the base64 text `WaveformLevels.encode` produces.
    case invalidLevelsEncoding
    /// A waveform file ended before its header or data did (`needed` and `got` are byte counts).
    case truncated(needed: Int, got: Int)
    /// A waveform file has a version other than 1 or 2.
    case unsupportedVersion(Int)
    /// A `.dat` file has flag bits other than the 8-bit flag (bit 0).
    case unsupportedFlags(UInt32)
    /// A waveform file holds a number of values other than `length × channels × 2`.
    case dataSizeMismatch(expectedValues: Int, actualValues: Int)
    /// A `.dat` file has bytes after its data.
    case trailingBytes(Int)
    /// A data value lies outside the range of its bit depth (−128…127 or −32768…32767).
    case valueOutOfRange(Int)
    /// A JSON waveform file is not well-formed, or not of the expected shape, at `offset` (bytes).
    case malformedJSON(offset: Int, reason: String)
    /// A JSON waveform file lacks a required key (`version`, `channels`, …, `data`).
    case missingKey(String)
    /// A JSON waveform file has the same key twice.
    case duplicateKey(String)

    public var description: String {
        switch self {
        case .invalidSamplesPerPixel(let n):
            return "invalid samples per pixel: \(n), minimum 2"
        case .invalidPixelsPerSecond(let n):
            return "invalid pixels per second: \(n), must be greater than zero"
        case .invalidPoints(let n):
            return "invalid points: \(n), must be greater than zero"
        case .invalidSpan(let x):
            return "invalid time span: \(x) s, must be greater than zero"
        case .pointsNeedFrameCount:
            return "points needs the number of frames before the audio starts, and this source does not tell it; use samples_per_pixel or pixels_per_second"
        case .invalidSampleRate(let n):
            return "invalid sample rate: \(n) Hz, minimum 1 Hz"
        case .invalidChannelCount(let n):
            return "cannot describe \(n) channels (1 to 24 when split, 1 to 1024 when mixed)"
        case .invalidBits(let n):
            return "invalid bits: \(n), must be 8 or 16"
        case .noZoomLevels:
            return "no zoom level given"
        case .blockChannelMismatch(let expected, let got):
            return "block has \(got) channels, the stream has \(expected)"
        case .notWholeMultiple(let from, let to):
            return "cannot make \(to) samples per pixel from \(from) exactly (not a whole multiple); compute it from the samples instead"
        case .finerZoom(let from, let to):
            return "cannot make \(to) samples per pixel from coarser data at \(from); compute it from the samples instead"
        case .invalidSize(let what, let n):
            return "invalid \(what): \(n), must be greater than zero"
        case .invalidColor(let text):
            return "invalid colour \"\(text)\": expected #rrggbb or #rrggbbaa"
        case .invalidLevelsEncoding:
            return "invalid levels encoding: expected base64 of bytes"
        case .truncated(let needed, let got):
            return "waveform file truncated: needs \(needed) bytes, has \(got)"
        case .unsupportedVersion(let v):
            return "unsupported waveform data version: \(v), expected 1 or 2"
        case .unsupportedFlags(let f):
            return "unsupported waveform data flags: 0x\(String(f, radix: 16)), expected 0 (16-bit) or 1 (8-bit)"
        case .dataSizeMismatch(let expected, let actual):
            return "waveform data holds \(actual) values, header says \(expected) (length × channels × 2)"
        case .trailingBytes(let n):
            return "waveform file has \(n) bytes after its data"
        case .valueOutOfRange(let v):
            return "waveform data value out of range for its bits: \(v)"
        case .malformedJSON(let offset, let reason):
            return "malformed waveform JSON at byte \(offset): \(reason)"
        case .missingKey(let key):
            return "waveform JSON lacks \"\(key)\""
        case .duplicateKey(let key):
            return "waveform JSON has \"\(key)\" twice"
        }
    }
}
