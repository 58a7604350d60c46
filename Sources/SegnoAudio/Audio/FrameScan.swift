import Foundation
import SegnoCore

/// Exact lengths of streams whose container only estimates one, counted from frame headers
/// without decoding: MP3 (no Xing/Info/VBRI header), ADTS AAC, AMR, and ALAC in CAF (its `pakt`
/// chunk). Used by `segno info`. Every scanner returns nil when the stream is anything but
/// regular (a cut last frame, junk between frames, free-format MP3, AMR comfort-noise frames):
/// the decoder then has the last word, because only a decode tells what it will yield.
package enum FrameScan {
    /// Frames in an MP3 stream: complete frames × samples per frame (1152 for MPEG-1 layer III,
    /// 576 for MPEG-2/2.5, 384 for layer I), the frame holding a Xing/Info/VBRI header left out.
    /// mpg123 (through libsndfile) yields every frame of a stream without such a header, with no
    /// gapless trimming (measured). Nil when the stream is irregular.
    static package func mp3(path: String) -> Int? {
        guard let r = ByteSource(path: path) else { return nil }
        var at = id3v2Size(r)
        var frames = 0
        var first: (version: Int, layer: Int, rate: Int)? = nil
        while at < r.size {
            guard let h = r.bytes(at, 4), let f = MPEGFrame(h) else {
                return trailingTag(r, at) && first != nil ? frames : nil
            }
            if let first, first != (f.version, f.layer, f.rate) { return nil }
            guard at + Int64(f.length) <= r.size else { return nil }  // cut last frame
            if first == nil {
                first = (f.version, f.layer, f.rate)
                if hasLengthHeader(r, at, f) { at += Int64(f.length); continue }
            }
            frames += f.samples
            at += Int64(f.length)
        }
        return first == nil ? nil : frames
    }

    /// True when an MPEG audio frame header starts the file (after an ID3v2 tag): what segno
    /// hands to libmpg123, which would otherwise search the whole file for something frame-like.
    static package func mp3StartsWithFrame(path: String) -> Bool {
        guard let r = ByteSource(path: path), let h = r.bytes(id3v2Size(r), 4) else { return false }
        return MPEGFrame(h) != nil
    }

    /// True when two MPEG audio frames in a row start in the `within` bytes from byte `from` (less
    /// the 4 bytes of a header read ahead): the audio goes on there (a tag or other trailing data
    /// does not look like that).
    static package func mp3FramesFollow(path: String, from: Int64, within: Int64) -> Bool {
        guard let r = ByteSource(path: path) else { return false }
        for at in max(0, from - 4)..<min(r.size, from + within) {
            guard let h = r.bytes(at, 4), let f = MPEGFrame(h), let next = r.bytes(at + Int64(f.length), 4),
                  let g = MPEGFrame(next), (g.version, g.layer, g.rate) == (f.version, f.layer, f.rate) else { continue }
            return true
        }
        return false
    }

    /// For an MP3 whose ID3v2 tag declares a size past the end of the file (a damaged tag
    /// header: decoders skip the whole file as tag): the size declared and the first offset after
    /// the tag's header where three MPEG audio frames of one stream follow each other. Nil when the
    /// tag fits the file, or no such frames are found. Reads the file once at most.
    static package func mp3TagPastEnd(path: String) -> (declared: Int64, audioAt: Int64)? {
        guard let r = ByteSource(path: path) else { return nil }
        let declared = id3v2Size(r)
        guard declared > r.size else { return nil }
        var at: Int64 = 10
        while at + 4 <= r.size {
            defer { at += 1 }
            guard let h = r.bytes(at, 4), let f = MPEGFrame(h) else { continue }
            var next = at + Int64(f.length), chained = 1
            while chained < 3, let n = r.bytes(next, 4), let g = MPEGFrame(n), (g.version, g.layer, g.rate) == (f.version, f.layer, f.rate) {
                chained += 1
                next += Int64(g.length)
            }
            if chained == 3 || (chained == 2 && next >= r.size) { return (declared, at) }
        }
        return nil
    }

    /// The first offset from `from` where three MPEG audio frames at `rate` follow each other
    /// (or two and the end of the file), and the first of them; nil when there is none.
    static package func mp3NextChain(path: String, from: Int64, rate: Int) -> (at: Int64, frame: MPEGFrame)? {
        guard let r = ByteSource(path: path) else { return nil }
        var at = max(0, from)
        while at + 4 <= r.size {
            defer { at += 1 }
            guard let h = r.bytes(at, 4), let f = MPEGFrame(h), f.rate == rate else { continue }
            var next = at + Int64(f.length), chained = 1
            while chained < 3, let n = r.bytes(next, 4), let g = MPEGFrame(n), (g.version, g.layer, g.rate) == (f.version, f.layer, f.rate) {
                chained += 1
                next += Int64(g.length)
            }
            if chained == 3 || (chained == 2 && next >= r.size) { return (at, f) }
        }
        return nil
    }

    /// True when the first MP3 frame carries a Xing/Info/VBRI header: mpg123's length then comes
    /// from it (with the LAME tag's encoder delay and padding), not from an estimate.
    static package func mp3HasLengthHeader(path: String) -> Bool {
        guard let r = ByteSource(path: path) else { return false }
        let at = id3v2Size(r)
        guard let h = r.bytes(at, 4), let f = MPEGFrame(h) else { return false }
        return hasLengthHeader(r, at, f)
    }

    // MARK: - Shared

    /// Bytes taken by an ID3v2 tag at the start (0 when there is none).
    private static func id3v2Size(_ r: ByteSource) -> Int64 {
        guard let h = r.bytes(0, 10), Array(h.prefix(3)) == Array("ID3".utf8) else { return 0 }
        let size = h[6...9].reduce(Int64(0)) { $0 << 7 | Int64($1 & 0x7F) }
        return 10 + size + (h[5] & 0x10 != 0 ? 10 : 0)
    }

    /// True when the bytes from `at` are a tag decoders skip (ID3v1, APEv2, Lyrics3).
    private static func trailingTag(_ r: ByteSource, _ at: Int64) -> Bool {
        guard let b = r.bytes(at, min(8, Int(r.size - at))) else { return false }
        let s = String(decoding: b, as: UTF8.self)
        return s.hasPrefix("TAG") || s.hasPrefix("APETAGEX") || s.hasPrefix("LYRICS")
    }

    /// True when the MP3 frame at `at` holds a Xing/Info header (after the side information) or
    /// a VBRI header (32 bytes after the frame header).
    private static func hasLengthHeader(_ r: ByteSource, _ at: Int64, _ f: MPEGFrame) -> Bool {
        let side: Int64 = f.version == 3 ? (f.mono ? 17 : 32) : (f.mono ? 9 : 17)
        for offset in [4 + side, 36] {
            if let tag = r.bytes(at + offset, 4) {
                let s = String(decoding: tag, as: UTF8.self)
                if s == "Xing" || s == "Info" || s == "VBRI" { return true }
            }
        }
        return false
    }
}

/// One MPEG audio frame header (layers I–III, MPEG-1/2/2.5).
package struct MPEGFrame {
    /// 3 MPEG-1, 2 MPEG-2, 0 MPEG-2.5.
    package var version: Int
    /// 1, 2 or 3.
    package var layer: Int
    /// Hz.
    package var rate: Int
    /// Bytes, header included.
    package var length: Int
    /// Frames of audio it decodes to.
    package var samples: Int
    package var mono: Bool

    /// Nil unless `h` (4 bytes) is a valid, non-free-format header.
    package init?(_ h: [UInt8]) {
        guard h.count >= 4, h[0] == 0xFF, h[1] & 0xE0 == 0xE0 else { return nil }
        let version = Int(h[1] >> 3) & 3, layerBits = Int(h[1] >> 1) & 3
        let bitrateIndex = Int(h[2] >> 4), rateIndex = Int(h[2] >> 2) & 3
        guard version != 1, layerBits != 0, bitrateIndex != 0, bitrateIndex != 15, rateIndex != 3 else { return nil }
        let layer = 4 - layerBits
        let mpeg1 = version == 3
        let table: [Int]
        switch (mpeg1, layer) {
        case (true, 1): table = [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448]
        case (true, 2): table = [32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384]
        case (true, _): table = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
        case (false, 1): table = [32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256]
        case (false, _): table = [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
        }
        let base = [44100, 48000, 32000][rateIndex]
        let rate = version == 3 ? base : version == 2 ? base / 2 : base / 4
        let bitrate = table[bitrateIndex - 1] * 1000
        let padding = Int(h[2] >> 1) & 1
        self.version = version
        self.layer = layer
        self.rate = rate
        mono = (h[3] >> 6) == 3
        switch layer {
        case 1:
            samples = 384
            length = (12 * bitrate / rate + padding) * 4
        case 2:
            samples = 1152
            length = 144 * bitrate / rate + padding
        default:
            samples = mpeg1 ? 1152 : 576
            length = (mpeg1 ? 144 : 72) * bitrate / rate + padding
        }
    }
}

/// Reads a file through a 1 MiB window, so a scan costs about one `pread` per MiB.
final package class ByteSource {
    package let size: Int64
    private let fd: Int32
    private var window: [UInt8] = []
    private var windowStart: Int64 = 0

    package init?(path: String) {
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0 else { close(fd); return nil }
        size = Int64(st.st_size)
    }

    deinit { close(fd) }

    /// `count` bytes at `offset`, or nil past the end of the file.
    package func bytes(_ offset: Int64, _ count: Int) -> [UInt8]? {
        guard count >= 0, offset >= 0, offset + Int64(count) <= size else { return nil }
        if offset < windowStart || offset + Int64(count) > windowStart + Int64(window.count) {
            let want = Int(min(max(Int64(count), 1 << 20), size - offset))
            var b = [UInt8](repeating: 0, count: want)
            let n = b.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(offset)) }
            guard n >= count else { return nil }
            window = Array(b.prefix(n))
            windowStart = offset
        }
        let s = Int(offset - windowStart)
        return Array(window[s..<(s + count)])
    }
}
