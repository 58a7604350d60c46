import Foundation
import SegnoCore

/// How `segno info` learns the exact number of frames a decoder will yield.
package enum ExactLength: Equatable {
    /// The container's header is exact.
    case header
    /// Counted from frame headers or a packet table, without decoding.
    case counted(Int)
    /// Only decoding to the end tells.
    case decode

    /// True when `d.info.frames` is what `d` will yield. Reads at most a frame header.
    static package func headerIsExact(_ d: any AudioDecoder, path: String) -> Bool {
        if let f = d as? FFmpegDecoder { return f.exactFrames != nil }
        let i = d.info
        if ["MP1", "MP2", "MP3"].contains(i.codec) { return FrameScan.mp3HasLengthHeader(path: path) }
        if i.container == "CAF" && i.codec.hasPrefix("ALAC") { return false }
        return true
    }

    /// How to get the exact length of what `d` yields. Scans the file's frame headers where the
    /// header is an estimate; costs one read of the file.
    static package func method(for d: any AudioDecoder, path: String) -> ExactLength {
        if headerIsExact(d, path: path) { return .header }
        let i = d.info
        let counted: Int?
        if d is FFmpegDecoder {
            switch i.container {
            case "ADTS": counted = FrameScan.adts(path: path, decodedRate: i.sampleRate)
            case "AMR": counted = FrameScan.amr(path: path)
            // ffmpeg, like mpg123, yields every frame of an MP3 without a length header.
            case _ where i.codec == "MP3" && !FrameScan.mp3HasLengthHeader(path: path): counted = FrameScan.mp3(path: path)
            default: counted = nil
            }
        } else if ["MP1", "MP2", "MP3"].contains(i.codec) {
            // `Mpg123Decoder` scanned the stream at open, so its length is this count; libsndfile
            // (an MPEG file the sniffer did not name) stops at mpg123's estimate when the stream is
            // longer (measured): the decoder yields the lesser of the two.
            counted = FrameScan.mp3(path: path).map { min($0, i.frames) }
        } else if i.container == "CAF" && i.codec.hasPrefix("ALAC") {
            counted = FrameScan.cafValidFrames(path: path)
        } else {
            counted = nil
        }
        return counted.map { .counted($0) } ?? .decode
    }
}
