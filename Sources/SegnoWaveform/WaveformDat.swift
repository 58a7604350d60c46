/// audiowaveform's binary `.dat` format, versions 1 and 2 (all fields little-endian):
///
/// | offset | type   | field                                              |
/// |--------|--------|----------------------------------------------------|
/// | 0      | int32  | version: 1 for one channel, 2 otherwise            |
/// | 4      | uint32 | flags: 1 for 8-bit data, 0 for 16-bit               |
/// | 8      | int32  | sample rate (Hz)                                   |
/// | 12     | int32  | samples per pixel                                  |
/// | 16     | uint32 | length (points)                                    |
/// | 20     | int32  | channels (version 2 only)                          |
/// | 20/24  | int8 or int16 × length × channels × 2 | min, max per channel per point |
public enum WaveformDat {
    /// Bytes before the data: 20 for version 1, 24 for version 2.
    public static func headerSize(version: Int) -> Int { version == 1 ? 20 : 24 }

    /// The bytes of the `.dat` file for `data`.
    public static func encode(_ data: WaveformData) -> [UInt8] {
        let version = data.version
        let width = data.bits / 8
        var out: [UInt8] = []
        out.reserveCapacity(headerSize(version: version) + data.data.count * width)
        appendLE(UInt32(version), to: &out)
        appendLE(data.bits == 8 ? 1 : 0, to: &out)
        appendLE(UInt32(truncatingIfNeeded: data.sampleRate), to: &out)
        appendLE(UInt32(truncatingIfNeeded: data.samplesPerPixel), to: &out)
        appendLE(UInt32(truncatingIfNeeded: data.length), to: &out)
        if version == 2 { appendLE(UInt32(data.channels), to: &out) }
        if width == 1 {
            for v in data.data { out.append(UInt8(bitPattern: Int8(truncatingIfNeeded: v))) }
        } else {
            for v in data.data {
                let u = UInt16(bitPattern: v)
                out.append(UInt8(truncatingIfNeeded: u))
                out.append(UInt8(truncatingIfNeeded: u >> 8))
            }
        }
        return out
    }

    /// Reads a `.dat` file, checking everything: version 1 or 2, flags 0 or 1, sample rate ≥ 1,
    /// samples per pixel ≥ 2, channels 1–24, and exactly `length × channels × 2` values after the
    /// header (a shorter file is `.dataSizeMismatch`, a longer one `.trailingBytes`).
    public static func decode(_ bytes: [UInt8]) throws(WaveformError) -> WaveformData {
        guard bytes.count >= 20 else { throw .truncated(needed: 20, got: bytes.count) }
        let version = Int(Int32(bitPattern: readLE(bytes, 0)))
        guard version == 1 || version == 2 else { throw .unsupportedVersion(version) }
        let header = headerSize(version: version)
        guard bytes.count >= header else { throw .truncated(needed: header, got: bytes.count) }
        let flags = readLE(bytes, 4)
        guard flags <= 1 else { throw .unsupportedFlags(flags) }
        let sampleRate = Int(Int32(bitPattern: readLE(bytes, 8)))
        guard sampleRate >= 1 else { throw .invalidSampleRate(sampleRate) }
        let spp = Int(Int32(bitPattern: readLE(bytes, 12)))
        guard spp >= 2 else { throw .invalidSamplesPerPixel(spp) }
        let length = Int(readLE(bytes, 16))
        let channels = version == 2 ? Int(Int32(bitPattern: readLE(bytes, 20))) : 1
        guard (1...WaveformData.maxChannels).contains(channels) else { throw .invalidChannelCount(channels) }
        let bits = flags == 1 ? 8 : 16
        let width = bits / 8
        let expected = length * channels * 2  // ≤ 2³² · 48, no overflow in Int
        let available = bytes.count - header
        guard available >= expected * width else {
            throw .dataSizeMismatch(expectedValues: expected, actualValues: available / width)
        }
        guard available == expected * width else { throw .trailingBytes(available - expected * width) }
        var data = [Int16](repeating: 0, count: expected)
        if width == 1 {
            for k in 0..<expected { data[k] = Int16(Int8(bitPattern: bytes[header + k])) }
        } else {
            for k in 0..<expected {
                let lo = UInt16(bytes[header + 2 * k]), hi = UInt16(bytes[header + 2 * k + 1])
                data[k] = Int16(bitPattern: lo | hi << 8)
            }
        }
        return WaveformData(unchecked: channels, sampleRate, spp, bits, data)
    }

    static func appendLE(_ v: UInt32, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: v))
        out.append(UInt8(truncatingIfNeeded: v >> 8))
        out.append(UInt8(truncatingIfNeeded: v >> 16))
        out.append(UInt8(truncatingIfNeeded: v >> 24))
    }

    static func readLE(_ b: [UInt8], _ at: Int) -> UInt32 {
        UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
    }
}
