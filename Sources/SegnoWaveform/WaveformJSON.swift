/// audiowaveform's JSON format (what peaks.js and waveform-data.js read).
///
/// Written exactly as audiowaveform 1.10.3 writes it: one line, no spaces, keys in this order,
/// a newline at the end, and version always 2:
///
///     {"version":2,"channels":C,"sample_rate":R,"samples_per_pixel":S,"bits":B,"length":L,"data":[…]}
///
/// The only addition is `"duration"` (seconds), written before `"data"` and only when asked.
public enum WaveformJSON {
    /// The bytes of the JSON file for `data`. `duration`, in seconds, adds a `"duration"` key
    /// (written with Swift's shortest round-trip form, e.g. `12.5`; left out if not finite).
    public static func encode(_ data: WaveformData, duration: Double? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128 + data.data.count * 7)
        out.append(contentsOf: Array("{\"version\":2,\"channels\":".utf8))
        appendInteger(data.channels, to: &out)
        out.append(contentsOf: Array(",\"sample_rate\":".utf8))
        appendInteger(data.sampleRate, to: &out)
        out.append(contentsOf: Array(",\"samples_per_pixel\":".utf8))
        appendInteger(data.samplesPerPixel, to: &out)
        out.append(contentsOf: Array(",\"bits\":".utf8))
        appendInteger(data.bits, to: &out)
        out.append(contentsOf: Array(",\"length\":".utf8))
        appendInteger(data.length, to: &out)
        if let duration, duration.isFinite {
            out.append(contentsOf: Array(",\"duration\":".utf8))
            out.append(contentsOf: Array("\(duration)".utf8))
        }
        out.append(contentsOf: Array(",\"data\":[".utf8))
        for (i, v) in data.data.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            appendInteger(Int(v), to: &out)
        }
        out.append(contentsOf: Array("]}\n".utf8))
        return out
    }

    /// Reads a JSON waveform file. Whitespace and key order are free; unknown keys (such as
    /// `"duration"`) are skipped. Required: `version` (1 or 2), `channels` (1–24), `sample_rate`
    /// (≥ 1), `samples_per_pixel` (≥ 2), `bits` (8 or 16), `length` (≥ 0) and `data`, an array
    /// of exactly `length × channels × 2` integers within range for `bits`.
    public static func decode(_ bytes: [UInt8]) throws(WaveformError) -> WaveformData {
        var p = JSONScanner(bytes)
        return try p.readWaveform()
    }

    /// Appends the decimal digits of `value`.
    static func appendInteger(_ value: Int, to out: inout [UInt8]) {
        if value == 0 { out.append(UInt8(ascii: "0")); return }
        var v = value.magnitude
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        withUnsafeMutableBytes(of: &digits) { d in
            while v > 0 {
                d[n] = UInt8(truncatingIfNeeded: v % 10) + UInt8(ascii: "0")
                v /= 10
                n += 1
            }
            while n > 0 {
                n -= 1
                out.append(d[n])
            }
        }
    }
}

/// A strict reader of the one JSON shape waveform files have. Positions are byte offsets.
struct JSONScanner {
    let bytes: [UInt8]
    var i = 0
    /// Deepest nesting accepted inside skipped values (hostile input cannot exhaust the stack).
    static let maxDepth = 64

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        // A UTF-8 byte order mark is tolerated.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
    }

    func fail(_ reason: String) -> WaveformError { .malformedJSON(offset: i, reason: reason) }

    mutating func skipSpace() {
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    mutating func expect(_ c: UInt8, _ what: String) throws(WaveformError) {
        skipSpace()
        guard i < bytes.count, bytes[i] == c else { throw fail("expected \(what)") }
        i += 1
    }

    /// Consumes `c` if it is next (after whitespace).
    mutating func take(_ c: UInt8) -> Bool {
        skipSpace()
        if i < bytes.count, bytes[i] == c { i += 1; return true }
        return false
    }

    mutating func readWaveform() throws(WaveformError) -> WaveformData {
        var version: Int?, channels: Int?, sampleRate: Int?, spp: Int?, bits: Int?, length: Int?
        var values: [Int]?
        try expect(UInt8(ascii: "{"), "an object")
        if !take(UInt8(ascii: "}")) {
            repeat {
                let key = try readString()
                try expect(UInt8(ascii: ":"), "':' after a key")
                func store(_ slot: inout Int?) throws(WaveformError) {
                    guard slot == nil else { throw .duplicateKey(key) }
                    slot = try readInteger(for: key)
                }
                switch key {
                case "version": try store(&version)
                case "channels": try store(&channels)
                case "sample_rate": try store(&sampleRate)
                case "samples_per_pixel": try store(&spp)
                case "bits": try store(&bits)
                case "length": try store(&length)
                case "data":
                    guard values == nil else { throw .duplicateKey(key) }
                    values = try readIntegerArray()
                default:
                    try skipValue(depth: 0)
                }
            } while take(UInt8(ascii: ","))
            try expect(UInt8(ascii: "}"), "',' or '}'")
        }
        skipSpace()
        guard i == bytes.count else { throw fail("unexpected bytes after the object") }

        guard let version else { throw .missingKey("version") }
        guard let channels else { throw .missingKey("channels") }
        guard let sampleRate else { throw .missingKey("sample_rate") }
        guard let spp else { throw .missingKey("samples_per_pixel") }
        guard let bits else { throw .missingKey("bits") }
        guard let length else { throw .missingKey("length") }
        guard let values else { throw .missingKey("data") }
        guard version == 1 || version == 2 else { throw .unsupportedVersion(version) }
        guard (1...WaveformData.maxChannels).contains(channels) else { throw .invalidChannelCount(channels) }
        guard sampleRate >= 1 else { throw .invalidSampleRate(sampleRate) }
        guard spp >= 2 else { throw .invalidSamplesPerPixel(spp) }
        guard bits == 8 || bits == 16 else { throw .invalidBits(bits) }
        guard length >= 0, length <= Int(UInt32.max) else {
            throw .dataSizeMismatch(expectedValues: length, actualValues: values.count)
        }
        let expected = length * channels * 2
        guard values.count == expected else {
            throw .dataSizeMismatch(expectedValues: expected, actualValues: values.count)
        }
        let range = bits == 8 ? -128...127 : -32768...32767
        var data = [Int16](repeating: 0, count: values.count)
        for (k, v) in values.enumerated() {
            guard range.contains(v) else { throw .valueOutOfRange(v) }
            data[k] = Int16(v)
        }
        return WaveformData(unchecked: channels, sampleRate, spp, bits, data)
    }

    /// A string without escapes is returned as is; escapes are kept undecoded (keys that
    /// matter never contain any).
    mutating func readString() throws(WaveformError) -> String {
        try expect(UInt8(ascii: "\""), "a string")
        let start = i
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                let s = String(decoding: bytes[start..<i], as: UTF8.self)
                i += 1
                return s
            }
            if c == UInt8(ascii: "\\") { i += 2; continue }
            if c < 0x20 { throw fail("control character in a string") }
            i += 1
        }
        throw fail("unterminated string")
    }

    /// An integer in plain JSON form (`-`? digits, no fraction or exponent).
    mutating func readInteger(for key: String) throws(WaveformError) -> Int {
        skipSpace()
        let negative = i < bytes.count && bytes[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        let start = i
        var value = 0
        while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 {
            if i - start >= 12 { throw fail("number too long for \"\(key)\"") }
            value = value * 10 + Int(bytes[i] - 0x30)
            i += 1
        }
        guard i > start else { throw fail("expected an integer for \"\(key)\"") }
        if i - start > 1 && bytes[start] == 0x30 { throw fail("leading zero in a number") }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") || bytes[i] | 0x20 == UInt8(ascii: "e") {
            throw fail("expected an integer for \"\(key)\"")
        }
        return negative ? -value : value
    }

    mutating func readIntegerArray() throws(WaveformError) -> [Int] {
        try expect(UInt8(ascii: "["), "an array for \"data\"")
        var out: [Int] = []
        if take(UInt8(ascii: "]")) { return out }
        repeat {
            out.append(try readInteger(for: "data"))
        } while take(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"), "',' or ']' in \"data\"")
        return out
    }

    /// Skips any JSON value (unknown keys), checking its syntax loosely.
    mutating func skipValue(depth: Int) throws(WaveformError) {
        guard depth < Self.maxDepth else { throw fail("nested too deeply") }
        skipSpace()
        guard i < bytes.count else { throw fail("expected a value") }
        switch bytes[i] {
        case UInt8(ascii: "\""):
            _ = try readString()
        case UInt8(ascii: "{"):
            i += 1
            if take(UInt8(ascii: "}")) { return }
            repeat {
                _ = try readString()
                try expect(UInt8(ascii: ":"), "':' after a key")
                try skipValue(depth: depth + 1)
            } while take(UInt8(ascii: ","))
            try expect(UInt8(ascii: "}"), "',' or '}'")
        case UInt8(ascii: "["):
            i += 1
            if take(UInt8(ascii: "]")) { return }
            repeat { try skipValue(depth: depth + 1) } while take(UInt8(ascii: ","))
            try expect(UInt8(ascii: "]"), "',' or ']'")
        case UInt8(ascii: "t"): try skipWord("true")
        case UInt8(ascii: "f"): try skipWord("false")
        case UInt8(ascii: "n"): try skipWord("null")
        default:
            let start = i
            while i < bytes.count, "+-.0123456789eE".utf8.contains(bytes[i]) { i += 1 }
            guard i > start else { throw fail("expected a value") }
        }
    }

    mutating func skipWord(_ word: String) throws(WaveformError) {
        for c in word.utf8 {
            guard i < bytes.count, bytes[i] == c else { throw fail("expected \(word)") }
            i += 1
        }
    }
}
