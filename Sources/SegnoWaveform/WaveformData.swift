/// Peak data as audiowaveform writes it: for each point (pixel) and each channel, a minimum and a
/// maximum, interleaved `min_c0, max_c0, min_c1, max_c1, …` point after point.
///
/// Values are in the data's own bit depth: −32768…32767 when `bits` is 16, −128…127 when 8.
/// The initialiser checks every invariant, so a value that exists can always be encoded.
/// Encoders and readers: `WaveformJSON`, `WaveformDat`; pictures: `WaveformPicture`.
public struct WaveformData: Sendable, Hashable {
    /// Output channels: 1 when mixed, the stream's channel count when split (1–24).
    public let channels: Int
    /// Sample rate of the audio the peaks describe, in Hz.
    public let sampleRate: Int
    /// Frames per point, at least 2.
    public let samplesPerPixel: Int
    /// 8 or 16.
    public let bits: Int
    /// `length × channels × 2` values, interleaved as described above.
    public let data: [Int16]

    /// Checks the invariants: channels 1–24, sampleRate and samplesPerPixel fit an int32 field
    /// (sampleRate ≥ 1, samplesPerPixel ≥ 2), bits 8|16, at most 2³² − 1 points,
    /// `data.count` a multiple of `channels × 2`, and every value within range for `bits`.
    public init(channels: Int, sampleRate: Int, samplesPerPixel: Int, bits: Int, data: [Int16])
        throws(WaveformError)
    {
        guard (1...WaveformData.maxChannels).contains(channels) else { throw .invalidChannelCount(channels) }
        guard sampleRate >= 1, sampleRate <= Int(Int32.max) else { throw .invalidSampleRate(sampleRate) }
        guard samplesPerPixel >= 2, samplesPerPixel <= Int(Int32.max) else {
            throw .invalidSamplesPerPixel(samplesPerPixel)
        }
        guard bits == 8 || bits == 16 else { throw .invalidBits(bits) }
        guard data.count % (channels * 2) == 0 else {
            let length = data.count / (channels * 2)
            throw .dataSizeMismatch(expectedValues: (length + 1) * channels * 2, actualValues: data.count)
        }
        guard data.count / (channels * 2) <= Int(UInt32.max) else {
            throw .dataSizeMismatch(expectedValues: Int(UInt32.max) * channels * 2, actualValues: data.count)
        }
        if bits == 8, let bad = data.first(where: { $0 < -128 || $0 > 127 }) {
            throw .valueOutOfRange(Int(bad))
        }
        self.init(unchecked: channels, sampleRate, samplesPerPixel, bits, data)
    }

    /// For callers that built the data themselves and know the invariants hold.
    init(unchecked channels: Int, _ sampleRate: Int, _ samplesPerPixel: Int, _ bits: Int, _ data: [Int16]) {
        self.channels = channels
        self.sampleRate = sampleRate
        self.samplesPerPixel = samplesPerPixel
        self.bits = bits
        self.data = data
    }

    /// Number of points (pixels): ⌈frames / samplesPerPixel⌉ for generated data.
    public var length: Int { data.count / (channels * 2) }

    /// The `.dat` version this data is written with: 1 for one channel, 2 otherwise.
    /// (The JSON format always says version 2.)
    public var version: Int { channels == 1 ? 1 : 2 }

    /// Minimum of `channel` at point `index`.
    public func min(channel: Int, at index: Int) -> Int16 { data[(index * channels + channel) * 2] }

    /// Maximum of `channel` at point `index`.
    public func max(channel: Int, at index: Int) -> Int16 { data[(index * channels + channel) * 2 + 1] }

    /// Seconds the points cover (length × samplesPerPixel / sampleRate): the audio's duration
    /// rounded up to a whole point.
    public var coveredSeconds: Double { Double(length * samplesPerPixel) / Double(sampleRate) }

    /// The same data at another bit depth. 16 → 8 divides by 256 truncating toward zero, as
    /// audiowaveform does (−255 → 0, −256 → −1, 32767 → 127, −32768 → −128; a right shift would
    /// give −1 for −255). 8 → 16 multiplies by 256 (how audiowaveform reads 8-bit files).
    public func converted(toBits newBits: Int) throws(WaveformError) -> WaveformData {
        guard newBits == 8 || newBits == 16 else { throw .invalidBits(newBits) }
        if newBits == bits { return self }
        let out: [Int16]
        if newBits == 8 {
            out = data.map { $0 / 256 }
        } else {
            out = data.map { $0 &* 256 }
        }
        return WaveformData(unchecked: channels, sampleRate, samplesPerPixel, newBits, out)
    }

    /// The data at a coarser zoom, `newSamplesPerPixel` frames per point.
    ///
    /// Exact (equal to generating at that zoom from the samples, last partial point included)
    /// only when `newSamplesPerPixel` is a whole multiple k of `samplesPerPixel`: point j is then
    /// the min and max of points [j·k, (j+1)·k). Anything else throws `.notWholeMultiple` or
    /// `.finerZoom`; compute such zooms from the samples. Also exact on 8-bit data, because the
    /// 16 → 8 division is monotone and so commutes with min and max.
    public func rescaled(toSamplesPerPixel newSamplesPerPixel: Int) throws(WaveformError) -> WaveformData {
        guard newSamplesPerPixel >= 2 else { throw .invalidSamplesPerPixel(newSamplesPerPixel) }
        if newSamplesPerPixel == samplesPerPixel { return self }
        guard newSamplesPerPixel > samplesPerPixel else {
            throw .finerZoom(from: samplesPerPixel, to: newSamplesPerPixel)
        }
        guard newSamplesPerPixel % samplesPerPixel == 0 else {
            throw .notWholeMultiple(from: samplesPerPixel, to: newSamplesPerPixel)
        }
        let k = newSamplesPerPixel / samplesPerPixel
        let newLength = (length + k - 1) / k
        var out = [Int16](repeating: 0, count: newLength * channels * 2)
        for j in 0..<newLength {
            let first = j * k, end = Swift.min(length, first + k)
            for c in 0..<channels {
                var lo = Int16.max, hi = Int16.min
                for i in first..<end {
                    lo = Swift.min(lo, min(channel: c, at: i))
                    hi = Swift.max(hi, max(channel: c, at: i))
                }
                out[(j * channels + c) * 2] = lo
                out[(j * channels + c) * 2 + 1] = hi
            }
        }
        return WaveformData(unchecked: channels, sampleRate, newSamplesPerPixel, bits, out)
    }

    /// The most channels waveform data can hold (audiowaveform's limit).
    public static let maxChannels = 24
}
