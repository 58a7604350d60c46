@testable import SegnoWaveform
import Testing

@Suite struct PNGEncoderTests {
    @Test func checksumsMatchTheirStandardCheckValues() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(Adler32.checksum(Array("Wikipedia".utf8)) == 0x11E6_0398)
        #expect(Adler32.checksum([UInt8](repeating: 0xFF, count: 100_000)) == Inflater.adler32([UInt8](repeating: 0xFF, count: 100_000)))
    }

    @Test(arguments: [0, 1, 2, 3, 258, 259, 40_000, 100_000])
    func deflateRoundTrips(size: Int) throws {
        let noise = Fixture.noise(count: size, seed: UInt64(size)).map { UInt8(truncatingIfNeeded: Int($0 * 1000)) }
        let runs = (0..<size).map { UInt8(($0 / 700) % 3) }
        for input in [noise, runs] {
            let z = Deflate.zlib(input)
            #expect(z[0] == 0x78 && (UInt16(z[0]) << 8 | UInt16(z[1])) % 31 == 0)
            #expect(try Inflater.zlib(z) == input)
        }
        if size == 100_000 { #expect(Deflate.zlib(runs).count < 2_000) }
    }

    @Test func writesAValidRGBAPNG() throws {
        let (w, h) = (5, 3)
        var rgba: [UInt8] = []
        for y in 0..<h { for x in 0..<w { rgba += [UInt8(x * 50), UInt8(y * 100), 7, UInt8(255 - x)] } }
        let png = PNGEncoder.encodeRGBA(rgba, width: w, height: h)
        let decoded = try Inflater.png(png)
        #expect(decoded.width == w && decoded.height == h)
        #expect(decoded.rgba == rgba)
    }
}

/// A small, independent inflater for the tests: zlib framing, stored and fixed-Huffman blocks
/// (all the encoder writes), and a PNG reader for 8-bit RGBA with filters None and Up.
enum Inflater {
    struct Failure: Error { let reason: String }

    static func adler32(_ d: [UInt8]) -> UInt32 {
        var a: UInt64 = 1, b: UInt64 = 0
        for x in d { a = (a + UInt64(x)) % 65521; b = (b + a) % 65521 }
        return UInt32(b << 16 | a)
    }

    static func zlib(_ z: [UInt8]) throws -> [UInt8] {
        guard z.count >= 6, z[0] & 0x0F == 8 else { throw Failure(reason: "not a zlib stream") }
        var r = BitReader(bytes: z, bit: 16)
        let out = try inflate(&r)
        let at = (r.bit + 7) / 8
        guard at + 4 == z.count else { throw Failure(reason: "bad trailer position") }
        let stored = UInt32(z[at]) << 24 | UInt32(z[at + 1]) << 16 | UInt32(z[at + 2]) << 8 | UInt32(z[at + 3])
        guard stored == adler32(out) else { throw Failure(reason: "adler32 mismatch") }
        return out
    }

    struct BitReader {
        let bytes: [UInt8]
        var bit: Int
        mutating func read(_ n: Int) throws -> Int {
            var v = 0
            for k in 0..<n {
                guard bit / 8 < bytes.count else { throw Failure(reason: "out of data") }
                v |= Int(bytes[bit / 8] >> UInt8(bit % 8) & 1) << k
                bit += 1
            }
            return v
        }
        mutating func readMSBFirst(_ n: Int) throws -> Int {
            var v = 0
            for _ in 0..<n { v = v << 1 | (try read(1)) }
            return v
        }
    }

    static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
                             131, 163, 195, 227, 258]
    static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
                           2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    static let distExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

    static func fixedSymbol(_ r: inout BitReader) throws -> Int {
        var code = try r.readMSBFirst(7)
        if code <= 23 { return 256 + code }
        code = code << 1 | (try r.read(1))
        if (0x30...0xBF).contains(code) { return code - 0x30 }
        if (0xC0...0xC7).contains(code) { return 280 + code - 0xC0 }
        code = code << 1 | (try r.read(1))
        guard (0x190...0x1FF).contains(code) else { throw Failure(reason: "bad code") }
        return 144 + code - 0x190
    }

    static func inflate(_ r: inout BitReader) throws -> [UInt8] {
        var out: [UInt8] = []
        var final = 0
        repeat {
            final = try r.read(1)
            switch try r.read(2) {
            case 0:
                r.bit = (r.bit + 7) / 8 * 8
                let len = try r.read(16), nlen = try r.read(16)
                guard len ^ nlen == 0xFFFF else { throw Failure(reason: "bad stored length") }
                for _ in 0..<len { out.append(UInt8(try r.read(8))) }
            case 1:
                while true {
                    let s = try fixedSymbol(&r)
                    if s < 256 { out.append(UInt8(s)); continue }
                    if s == 256 { break }
                    let li = s - 257
                    guard li < 29 else { throw Failure(reason: "bad length symbol") }
                    let length = lengthBase[li] + (try r.read(lengthExtra[li]))
                    let di = try r.readMSBFirst(5)
                    guard di < 30 else { throw Failure(reason: "bad distance symbol") }
                    let distance = distBase[di] + (try r.read(distExtra[di]))
                    guard distance <= out.count else { throw Failure(reason: "distance too far") }
                    for _ in 0..<length { out.append(out[out.count - distance]) }
                }
            default:
                throw Failure(reason: "unexpected block type")
            }
        } while final == 0
        return out
    }

    static func png(_ b: [UInt8]) throws -> (width: Int, height: Int, rgba: [UInt8]) {
        guard Array(b.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] else {
            throw Failure(reason: "no signature")
        }
        func be(_ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }
        var i = 8, width = 0, height = 0, idat: [UInt8] = [], types: [String] = []
        while i < b.count {
            let len = be(i)
            let type = String(decoding: b[(i + 4)..<(i + 8)], as: UTF8.self)
            let body = Array(b[(i + 8)..<(i + 8 + len)])
            guard UInt32(be(i + 8 + len)) == CRC32.checksum(Array(b[(i + 4)..<(i + 8 + len)])) else {
                throw Failure(reason: "bad CRC in \(type)")
            }
            types.append(type)
            if type == "IHDR" {
                width = be(i + 8); height = be(i + 12)
                guard Array(body[8...]) == [8, 6, 0, 0, 0] else { throw Failure(reason: "not 8-bit RGBA") }
            }
            if type == "IDAT" { idat += body }
            i += 12 + len
        }
        guard types.first == "IHDR", types.last == "IEND" else { throw Failure(reason: "bad chunk order") }
        let raw = try zlib(idat)
        let stride = width * 4
        guard raw.count == height * (stride + 1) else { throw Failure(reason: "bad image size") }
        var rgba = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            let filter = raw[y * (stride + 1)]
            for k in 0..<stride {
                let v = raw[y * (stride + 1) + 1 + k]
                switch filter {
                case 0: rgba[y * stride + k] = v
                case 2: rgba[y * stride + k] = v &+ (y > 0 ? rgba[(y - 1) * stride + k] : 0)
                default: throw Failure(reason: "filter \(filter)")
                }
            }
        }
        return (width, height, rgba)
    }
}
