/// A minimal PNG writer: 8-bit RGBA, no interlace, one IDAT chunk compressed with `Deflate`.
/// Row filters: the first row None, every other row Up (a waveform's rows differ from the row
/// above in a few columns only, so Up turns them into long runs of zeros).
enum PNGEncoder {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// `rgba` holds `width × height` pixels of 4 bytes, row after row.
    static func encodeRGBA(_ rgba: [UInt8], width: Int, height: Int) -> [UInt8] {
        precondition(rgba.count == width * height * 4)
        let stride = width * 4
        var raw = [UInt8](repeating: 0, count: height * (stride + 1))
        for y in 0..<height {
            let o = y * (stride + 1), s = y * stride
            if y == 0 {
                raw[o] = 0  // None
                for k in 0..<stride { raw[o + 1 + k] = rgba[s + k] }
            } else {
                raw[o] = 2  // Up
                for k in 0..<stride { raw[o + 1 + k] = rgba[s + k] &- rgba[s - stride + k] }
            }
        }
        var ihdr: [UInt8] = []
        appendBE(UInt32(width), &ihdr)
        appendBE(UInt32(height), &ihdr)
        ihdr += [8, 6, 0, 0, 0]  // bit depth 8, colour type RGBA, deflate, filter set 0, no interlace
        var out = signature
        appendChunk("IHDR", ihdr, &out)
        appendChunk("IDAT", Deflate.zlib(raw), &out)
        appendChunk("IEND", [], &out)
        return out
    }

    static func appendChunk(_ type: String, _ data: [UInt8], _ out: inout [UInt8]) {
        appendBE(UInt32(data.count), &out)
        let typeAndData = Array(type.utf8) + data
        out += typeAndData
        appendBE(CRC32.checksum(typeAndData), &out)
    }

    static func appendBE(_ v: UInt32, _ out: inout [UInt8]) {
        out += [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }
}

/// CRC-32 (ISO 3309, as PNG and gzip use it: reflected polynomial 0xEDB88320).
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}

/// Adler-32 (RFC 1950), the zlib stream's checksum.
enum Adler32 {
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        var i = 0
        while i < bytes.count {
            let end = Swift.min(bytes.count, i + 5552)  // largest run before the sums can overflow
            while i < end {
                a += UInt32(bytes[i])
                b += a
                i += 1
            }
            a %= 65521
            b %= 65521
        }
        return b << 16 | a
    }
}

/// A small deflate compressor (RFC 1951): greedy LZ77 over a 32 KB window with short hash
/// chains, coded in one block with the fixed Huffman codes. Not zlib's ratio, but waveform
/// pictures are mostly runs and compress well.
enum Deflate {
    /// A zlib stream (RFC 1950) holding `data`.
    static func zlib(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]  // deflate, 32 KB window, "fastest" level; 0x7801 % 31 == 0
        out += deflate(data)
        PNGEncoder.appendBE(Adler32.checksum(data), &out)
        return out
    }

    static let lengthBase: [Int] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59,
                                    67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthExtra: [Int] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
                                     4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBase: [Int] = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385,
                                      513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    static let distanceExtra: [Int] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8,
                                       9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

    static let window = 32768
    static let minMatch = 3
    static let maxMatch = 258
    static let hashBits = 15
    static let maxChain = 16

    /// Raw deflate data (one final block, fixed Huffman codes).
    static func deflate(_ data: [UInt8]) -> [UInt8] {
        var w = BitWriter()
        w.write(1, 1)  // BFINAL
        w.write(1, 2)  // BTYPE 01: fixed Huffman
        let n = data.count
        var head = [Int32](repeating: -1, count: 1 << hashBits)
        var prev = [Int32](repeating: -1, count: window)
        func hash(_ i: Int) -> Int {
            let v = UInt32(data[i]) << 16 | UInt32(data[i + 1]) << 8 | UInt32(data[i + 2])
            return Int((v &* 2_654_435_761) >> (32 - UInt32(hashBits)))
        }
        func insert(_ i: Int) {
            guard i + minMatch <= n else { return }
            let h = hash(i)
            prev[i & (window - 1)] = head[h]
            head[h] = Int32(i)
        }
        var i = 0
        while i < n {
            var bestLength = 0, bestDistance = 0
            if i + minMatch <= n {
                var candidate = Int(head[hash(i)])
                var chain = 0
                let limit = Swift.min(maxMatch, n - i)
                while candidate >= 0, i - candidate <= window, chain < maxChain {
                    var l = 0
                    while l < limit && data[candidate + l] == data[i + l] { l += 1 }
                    if l > bestLength {
                        bestLength = l
                        bestDistance = i - candidate
                        if l == limit { break }
                    }
                    let next = Int(prev[candidate & (window - 1)])
                    if next >= candidate { break }  // the slot was reused by a newer position
                    candidate = next
                    chain += 1
                }
            }
            if bestLength >= minMatch {
                writeLength(bestLength, &w)
                writeDistance(bestDistance, &w)
                for k in i..<(i + bestLength) { insert(k) }
                i += bestLength
            } else {
                writeLiteral(Int(data[i]), &w)
                insert(i)
                i += 1
            }
        }
        writeLiteral(256, &w)  // end of block
        return w.finish()
    }

    /// Fixed Huffman code of a literal/length symbol 0…287 (RFC 1951 §3.2.6).
    static func writeLiteral(_ s: Int, _ w: inout BitWriter) {
        switch s {
        case 0...143: w.writeHuffman(0x30 + s, 8)
        case 144...255: w.writeHuffman(0x190 + s - 144, 9)
        case 256...279: w.writeHuffman(s - 256, 7)
        default: w.writeHuffman(0xC0 + s - 280, 8)
        }
    }

    static func writeLength(_ length: Int, _ w: inout BitWriter) {
        var code = lengthBase.count - 1
        while lengthBase[code] > length { code -= 1 }
        writeLiteral(257 + code, &w)
        if lengthExtra[code] > 0 { w.write(UInt64(length - lengthBase[code]), lengthExtra[code]) }
    }

    static func writeDistance(_ distance: Int, _ w: inout BitWriter) {
        var code = distanceBase.count - 1
        while distanceBase[code] > distance { code -= 1 }
        w.writeHuffman(code, 5)
        if distanceExtra[code] > 0 { w.write(UInt64(distance - distanceBase[code]), distanceExtra[code]) }
    }
}

/// Writes bits least significant first, as deflate packs them.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var buffer: UInt64 = 0
    private var count = 0

    /// Writes the low `bits` bits of `value`, least significant first (header fields, extra bits).
    mutating func write(_ value: UInt64, _ bits: Int) {
        buffer |= value << UInt64(count)
        count += bits
        while count >= 8 {
            bytes.append(UInt8(truncatingIfNeeded: buffer))
            buffer >>= 8
            count -= 8
        }
    }

    /// Writes a Huffman code, which deflate packs most significant bit first.
    mutating func writeHuffman(_ code: Int, _ bits: Int) {
        var reversed: UInt64 = 0
        for k in 0..<bits { reversed |= UInt64((code >> k) & 1) << UInt64(bits - 1 - k) }
        write(reversed, bits)
    }

    /// Pads the last byte with zeros and returns everything written.
    mutating func finish() -> [UInt8] {
        if count > 0 { bytes.append(UInt8(truncatingIfNeeded: buffer)) }
        buffer = 0
        count = 0
        return bytes
    }
}
