import Foundation
import SegnoCore

/// Finds the frames of an AAC stream in ADTS framing, in order, through a 256 KiB window of the
/// file: a frame is a 0xFFF syncword whose fixed fields (MPEG version, layer 0, protection,
/// profile, sampling rate, channel configuration) are the stream's and whose length leads to the
/// next such header (or a header cut by the end of the file, or the end itself); bytes that are
/// not such a frame are skipped. Used by `ADTSSalvageDecoder` and `StreamRepair`; one per pass.
final package class ADTSFrameReader {
    package struct Frame {
        package var offset: Int64
        package var length: Int
        /// Raw data blocks in the frame (1…4), 1024 frames of audio each (2048 with SBR).
        package var blocks: Int
        /// Bytes skipped before this frame because they were not one.
        package var skippedBefore: Int64
    }

    package let fileSize: Int64
    private var fd: Int32
    private var file = FileWindow(capacity: windowBytes)
    private var window: [UInt8] { file.bytes }
    private var windowStart: Int64 { file.start }
    private var windowCount: Int { file.count }
    private(set) package var position: Int64 = 0
    /// The stream's fixed header bits (set by `lock`).
    private(set) package var fixed: UInt32 = 0
    /// Bytes at the end of the file that are not a whole frame, once `next` returned nil.
    private(set) package var tailBytes: Int64 = 0
    static package let windowBytes = 256 * 1024
    static package let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    /// Opens `path` after its ID3v2 tag, if any. Throws `AudioError` when it cannot be read.
    package init(path: String) throws {
        fd = try SndFileDecoder.openChecked(path)
        var st = stat()
        fileSize = fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
        position = id3Size()
    }

    deinit { close() }

    package func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// The sampling rate and channel configuration of the locked stream.
    package var rate: Int { Self.rates[min(12, Int((fixed >> 10) & 0xF))] }
    package var channelConfiguration: Int { Int((fixed >> 8) & 1) << 2 | Int((fixed >> 6) & 3) }

    /// Finds the stream: the first offset where three consistent headers follow each other (or
    /// two and the end of the file). Returns the bytes skipped to it; nil when there is none.
    package func lock() -> Int64? {
        var skipped: Int64 = 0
        while position < fileSize {
            if let h = header(at: position, expecting: nil) {
                let next = position + Int64(h.length)
                if let n = header(at: next, expecting: h.fixed),
                   next + Int64(n.length) >= fileSize || header(at: next + Int64(n.length), expecting: h.fixed) != nil {
                    fixed = h.fixed
                    return skipped
                }
            }
            position += 1
            skipped += 1
        }
        return nil
    }

    /// The next frame, skipping what is not one; nil at the end of the file (see `tailBytes`).
    package func next() -> Frame? {
        var skipped: Int64 = 0
        while position < fileSize {
            if let h = header(at: position, expecting: fixed), chained(position + Int64(h.length)) {
                let f = Frame(offset: position, length: h.length, blocks: h.blocks, skippedBefore: skipped)
                position += Int64(h.length)
                return f
            }
            position += 1
            skipped += 1
        }
        if skipped > 0 { tailBytes = skipped }
        return nil
    }

    /// Appends `frame`'s bytes to `out`.
    package func append(_ frame: Frame, to out: inout [UInt8]) {
        guard ensure(frame.offset, frame.length) else { return }
        let i = Int(frame.offset - windowStart)
        out += window[i..<(i + frame.length)]
    }

    /// The size of an ID3v2 tag at the start of the file (0 when there is none).
    private func id3Size() -> Int64 {
        guard ensure(0, 10), window[0] == 0x49, window[1] == 0x44, window[2] == 0x33 else { return 0 }
        let s = (Int64(window[6] & 0x7F) << 21) | (Int64(window[7] & 0x7F) << 14) | (Int64(window[8] & 0x7F) << 7) | Int64(window[9] & 0x7F)
        return min(fileSize, 10 + s + (window[5] & 0x10 != 0 ? 10 : 0))
    }

    private func ensure(_ at: Int64, _ count: Int) -> Bool {
        file.ensure(fd: fd, fileSize: fileSize, at: at, length: count)
    }

    /// The ADTS header at `at` when it is valid (and has the stream's fixed fields, when given),
    /// with the frame fully inside the file (unless `cut` allows it to run past the end).
    private func header(at: Int64, expecting: UInt32?, cut: Bool = false) -> (fixed: UInt32, length: Int, blocks: Int)? {
        guard ensure(at, 7) else { return nil }
        let i = Int(at - windowStart)
        let b1 = window[i + 1], b2 = window[i + 2], b3 = window[i + 3], b4 = window[i + 4], b5 = window[i + 5], b6 = window[i + 6]
        guard window[i] == 0xFF, b1 & 0xF6 == 0xF0 else { return nil }     // syncword, layer 0
        guard (b2 >> 2) & 0xF < 13 else { return nil }
        // ID, protection, profile, sampling index, channel configuration (private bit ignored).
        let fixed = UInt32(b1 & 0x09) << 16 | UInt32(b2 & 0xFD) << 8 | UInt32(b3 & 0xC0)
        if let expecting, fixed != expecting { return nil }
        let length = Int(b3 & 0x03) << 11 | Int(b4) << 3 | Int(b5 >> 5)
        let headerBytes = b1 & 1 == 0 ? 9 : 7
        guard length > headerBytes, cut || at + Int64(length) <= fileSize else { return nil }
        return (fixed, length, Int(b6 & 3) + 1)
    }

    /// True when `next` starts a frame of the stream (perhaps one cut by the end of the file) or
    /// is the end of the file.
    private func chained(_ next: Int64) -> Bool {
        next >= fileSize || header(at: next, expecting: fixed, cut: true) != nil
    }
}
