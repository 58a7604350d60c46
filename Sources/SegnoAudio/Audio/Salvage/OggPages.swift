import Foundation
import SegnoCore

/// One Ogg page that passed its checksum.
package struct OggPage {
    package var offset: Int64
    package var continued: Bool
    package var bos: Bool
    package var eos: Bool
    /// The granule position (−1: no packet ends on this page).
    package var granule: Int64
    package var serial: UInt32
    package var sequence: UInt32
    package var lacing: [UInt8]
    package var body: [UInt8]
    /// Bytes before this page that were not a valid page (junk, or pages failing their checksum).
    package var skippedBefore: Int64
}

/// Reads the pages of an Ogg file in order, from a window of the file (memory bounded by the
/// window and the largest page, 65,307 bytes), resynchronising on the next "OggS" capture
/// pattern whose page passes its CRC-32 when bytes are damaged. Owned by one salvaging decoder.
final package class OggPageReader {
    private let fd: Int32
    package let fileSize: Int64
    private var file = FileWindow(capacity: windowBytes)
    private var window: [UInt8] { file.bytes }
    private var windowStart: Int64 { file.start }
    private var windowCount: Int { file.count }
    /// The next byte to look at.
    private(set) package var position: Int64
    /// Bytes at the end of the file that were not a whole page (a cut last page), once `next` returned nil.
    private(set) package var tailBytes: Int64 = 0
    /// The page the end of the file cuts, unchecked, its body as far as the file goes (set with `tailBytes`).
    private(set) package var cutPage: OggPage?
    static package let windowBytes = 256 * 1024
    static package let maxPage = 27 + 255 + 255 * 255

    /// Opens `path` from `offset`. Throws `AudioError` when it cannot be read.
    package init(path: String, offset: Int64 = 0) throws {
        fd = try SndFileDecoder.openChecked(path)
        var st = stat()
        fileSize = fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
        position = offset
    }

    deinit { Glibc.close(fd) }

    /// Makes `count` bytes from `at` available in the window; false past the end of the file.
    private func ensure(_ at: Int64, _ count: Int) -> Bool {
        file.ensure(fd: fd, fileSize: fileSize, at: at, length: count)
    }

    private func byte(_ at: Int64) -> UInt8 { window[Int(at - windowStart)] }

    /// The next page that passes its checksum, or nil at the end of the file.
    package func next() -> OggPage? {
        var skipped: Int64 = 0
        while true {
            guard ensure(position, 27) else {
                tailBytes = fileSize - position
                position = fileSize
                return nil
            }
            let p = position
            guard byte(p) == 0x4F, byte(p + 1) == 0x67, byte(p + 2) == 0x67, byte(p + 3) == 0x53, byte(p + 4) == 0,
                  byte(p + 5) & 0xF8 == 0 else {
                position += 1
                skipped += 1
                continue
            }
            let segments = Int(byte(p + 26))
            guard ensure(p, 27 + segments) else { tailBytes = fileSize - p; position = fileSize; return nil }
            var bodyBytes = 0
            for i in 0..<segments { bodyBytes += Int(byte(p + 27 + Int64(i))) }
            let total = 27 + segments + bodyBytes
            guard ensure(p, total) else {
                // A page cut by the end of the file, or a false capture pattern near it: look on.
                if p + Int64(total) > fileSize && tailBytes == 0 && ensure(p, Int(fileSize - p)) {
                    tailBytes = fileSize - p
                    // What the cut page holds (its checksum cannot be checked): the decoder keeps
                    // the packets that end inside the file when the page follows on from the last.
                    let start = Int(p - windowStart)
                    let have = Int(fileSize - p) - 27 - segments
                    cutPage = window.withUnsafeBytes { raw in
                        OggPage(offset: p, continued: byte(p + 5) & 1 != 0, bos: byte(p + 5) & 2 != 0, eos: false,
                                granule: -1,
                                serial: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: start + 14, as: UInt32.self)),
                                sequence: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: start + 18, as: UInt32.self)),
                                lacing: Array(window[(start + 27)..<(start + 27 + segments)]),
                                body: Array(window[(start + 27 + segments)..<(start + 27 + segments + max(have, 0))]),
                                skippedBefore: skipped)
                    }
                }
                position += 1
                skipped += 1
                continue
            }
            let start = Int(p - windowStart)
            let stored = window.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: start + 22, as: UInt32.self)) }
            let crc = window.withUnsafeBufferPointer { OggCRC.page($0.baseAddress! + start, count: total) }
            guard crc == stored else {
                position += 1
                skipped += 1
                continue
            }
            tailBytes = 0
            cutPage = nil
            let page = window.withUnsafeBytes { raw in
                OggPage(offset: p, continued: byte(p + 5) & 1 != 0, bos: byte(p + 5) & 2 != 0, eos: byte(p + 5) & 4 != 0,
                        granule: Int64(littleEndian: raw.loadUnaligned(fromByteOffset: start + 6, as: Int64.self)),
                        serial: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: start + 14, as: UInt32.self)),
                        sequence: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: start + 18, as: UInt32.self)),
                        lacing: Array(window[(start + 27)..<(start + 27 + segments)]),
                        body: Array(window[(start + 27 + segments)..<(start + total)]),
                        skippedBefore: skipped)
            }
            position = p + Int64(total)
            return page
        }
    }

    /// The granule position of the last page of `serial` in the last 64 KiB of the file, or nil.
    package func lastGranule(serial: UInt32) -> Int64? {
        let saved = position
        defer { position = saved }
        position = max(0, fileSize - 65536 - Int64(Self.maxPage))
        var last: Int64?
        while let page = next() {
            if page.serial == serial && page.granule >= 0 { last = page.granule }
        }
        tailBytes = 0
        cutPage = nil
        return last
    }
}

/// Ogg's CRC-32 (polynomial 0x04C11DB7, not reflected, initial value 0), over a page whose
/// checksum field counts as zeros.
package enum OggCRC {
    static package let table: [UInt32] = (0..<256).map { i -> UInt32 in
        var r = UInt32(i) << 24
        for _ in 0..<8 { r = r & 0x8000_0000 != 0 ? (r << 1) ^ 0x04C1_1DB7 : r << 1 }
        return r
    }

    static package func page(_ p: UnsafePointer<UInt8>, count: Int) -> UInt32 {
        table.withUnsafeBufferPointer { t in
            var crc: UInt32 = 0
            for i in 0..<count {
                let b: UInt8 = (22..<26).contains(i) ? 0 : p[i]
                crc = (crc << 8) ^ t[Int(((crc >> 24) ^ UInt32(b)) & 0xFF)]
            }
            return crc
        }
    }
}

/// Writes Ogg pages (for `segno repair`).
enum OggPageWriter {
    /// One page with its checksum.
    static func page(serial: UInt32, sequence: UInt32, granule: Int64, continued: Bool, bos: Bool, eos: Bool,
                     lacing: [UInt8], body: [UInt8]) -> [UInt8] {
        var p: [UInt8] = Array("OggS".utf8) + [0, (continued ? 1 : 0) | (bos ? 2 : 0) | (eos ? 4 : 0)]
        withUnsafeBytes(of: granule.littleEndian) { p += $0 }
        withUnsafeBytes(of: serial.littleEndian) { p += $0 }
        withUnsafeBytes(of: sequence.littleEndian) { p += $0 }
        p += [0, 0, 0, 0, UInt8(lacing.count)] + lacing + body
        stampCRC(&p)
        return p
    }

    /// Sets the page's checksum field.
    static func stampCRC(_ p: inout [UInt8]) {
        let crc = p.withUnsafeBufferPointer { OggCRC.page($0.baseAddress!, count: $0.count) }
        withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { p[22 + i] = $0[i] } }
    }
}
