import SegnoAudio
import SegnoCore
/// Cuts an MP3 or AAC (ADTS) byte stream into whole frames with their length in samples, so a
/// capture can count audio time exactly and cut segments between frames. Finds sync at the
/// start, after a reconnect and after garbage (a header is trusted only when the next frame's
/// header follows where it says). Pure: any chunk sizes give the same frames.
package struct FrameSplitter {
    package enum Codec: String, Sendable {
        case mp3, aac
        /// The file extension and the ffmpeg demuxer/muxer of the stream's own container.
        package var ext: String { self == .mp3 ? "mp3" : "aac" }
        package var ffmpegInput: String { self == .mp3 ? "mp3" : "aac" }
        package var ffmpegOutput: String { self == .mp3 ? "mp3" : "adts" }
    }

    package struct Frame: Equatable {
        package var bytes: [UInt8]
        /// Samples per channel in this frame.
        package var samples: Int
        /// Hz.
        package var rate: Int
        package var seconds: Double { Double(samples) / Double(rate) }
    }

    package struct Header: Equatable {
        package var length: Int
        package var samples: Int
        package var rate: Int
    }

    package let codec: Codec
    private var buffer: [UInt8] = []
    private var synced = false
    /// Bytes dropped while looking for sync (junk, ID3 tags, a frame cut by a reconnect).
    private(set) package var skippedBytes = 0

    package init(codec: Codec) { self.codec = codec }

    /// Frames completed by `bytes`.
    mutating package func feed(_ bytes: [UInt8]) -> [Frame] {
        buffer += bytes
        var frames: [Frame] = []
        var i = 0
        while buffer.count - i >= 10 {
            guard let h = header(at: i) else {
                synced = false
                i += 1
                skippedBytes += 1
                continue
            }
            if !synced {
                // Trust a first header only if another follows it.
                if buffer.count - i < h.length + 10 { break }
                guard let next = header(at: i + h.length), next.rate == h.rate else { i += 1; skippedBytes += 1; continue }
            }
            guard buffer.count - i >= h.length else { break }
            synced = true
            frames.append(Frame(bytes: Array(buffer[i..<(i + h.length)]), samples: h.samples, rate: h.rate))
            i += h.length
        }
        buffer.removeFirst(i)
        return frames
    }

    /// Forgets a partial frame (the connection dropped): the next bytes are searched for sync.
    mutating package func reset() {
        skippedBytes += buffer.count
        buffer = []
        synced = false
    }

    package func header(at i: Int) -> Header? {
        codec == .mp3 ? Self.mpegHeader(buffer, i) : Self.adtsHeader(buffer, i)
    }

    static package let mpegRates = [[11025, 12000, 8000], [0, 0, 0], [22050, 24000, 16000], [44100, 48000, 32000]]  // by version bits
    static package let bitratesV1: [[Int]] = [
        [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],  // layer I
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],     // layer II
        [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],      // layer III
    ]
    static package let bitratesV2: [[Int]] = [
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],     // layer I
        [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],          // layers II and III
    ]

    /// An MPEG audio (layer I/II/III, MPEG 1/2/2.5) frame header at `i`, or nil.
    static package func mpegHeader(_ b: [UInt8], _ i: Int) -> Header? {
        guard i + 4 <= b.count, b[i] == 0xFF, b[i + 1] & 0xE0 == 0xE0 else { return nil }
        let version = Int(b[i + 1] >> 3) & 3      // 0 = 2.5, 2 = 2, 3 = 1
        let layerBits = Int(b[i + 1] >> 1) & 3    // 1 = III, 2 = II, 3 = I
        let brIndex = Int(b[i + 2] >> 4)
        let srIndex = Int(b[i + 2] >> 2) & 3
        let padding = Int(b[i + 2] >> 1) & 1
        guard version != 1, layerBits != 0, brIndex != 0, brIndex != 15, srIndex != 3 else { return nil }
        let layer = 4 - layerBits                 // 1, 2, 3
        let rate = mpegRates[version][srIndex]
        let kbps = version == 3 ? bitratesV1[layer - 1][brIndex] : bitratesV2[layer == 1 ? 0 : 1][brIndex]
        let bps = kbps * 1000
        let length: Int, samples: Int
        switch layer {
        case 1: length = (12 * bps / rate + padding) * 4; samples = 384
        case 2: length = 144 * bps / rate + padding; samples = 1152
        default:
            length = (version == 3 ? 144 : 72) * bps / rate + padding
            samples = version == 3 ? 1152 : 576
        }
        guard length >= 4 else { return nil }
        return Header(length: length, samples: samples, rate: rate)
    }

    static package let adtsRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    /// An ADTS frame header at `i`, or nil.
    static package func adtsHeader(_ b: [UInt8], _ i: Int) -> Header? {
        guard i + 7 <= b.count, b[i] == 0xFF, b[i + 1] & 0xF6 == 0xF0 else { return nil }
        let srIndex = Int(b[i + 2] >> 2) & 0xF
        guard srIndex < adtsRates.count else { return nil }
        let length = (Int(b[i + 3] & 3) << 11) | (Int(b[i + 4]) << 3) | Int(b[i + 5] >> 5)
        let blocks = Int(b[i + 6] & 3) + 1
        let headerSize = b[i + 1] & 1 == 1 ? 7 : 9
        guard length > headerSize else { return nil }
        return Header(length: length, samples: 1024 * blocks, rate: adtsRates[srIndex])
    }

    /// The codec a content type announces, or nil (then the stream cannot be recorded).
    static package func codec(contentType: String?) -> Codec? {
        let type = (contentType ?? "").split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        switch type {
        case "audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg": return .mp3
        case "audio/aac", "audio/aacp", "audio/x-aac", "audio/x-aacp", "audio/mp4a-latm": return .aac
        default: return nil
        }
    }
}
