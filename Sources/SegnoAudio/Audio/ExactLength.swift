import Foundation
import SegnoCore

/// Whether a container's header gives the exact number of frames a decoder will yield
/// (`segno info --fast` marks the others as estimates).
package enum ExactLength {
    /// True when `d.info.frames` is what `d` will yield. Reads at most a frame header.
    static package func headerIsExact(_ d: any AudioDecoder, path: String) -> Bool {
        if let f = d as? FFmpegDecoder { return f.exactFrames != nil }
        let i = d.info
        if ["MP1", "MP2", "MP3"].contains(i.codec) { return FrameScan.mp3HasLengthHeader(path: path) }
        if i.container == "CAF" && i.codec.hasPrefix("ALAC") { return false }
        return true
    }
}
