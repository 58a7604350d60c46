import Foundation
import SegnoCore

/// A bounded window of a file, read with `pread`: the salvage readers (Ogg pages, ADTS frames)
/// look at bytes near a position and resynchronise forward, so the file passes once through one
/// buffer however damaged it is. Owned by one reader.
package struct FileWindow {
    /// The buffer; bytes `0..<count` hold the file from offset `start`.
    private(set) package var bytes: [UInt8]
    /// File offset of `bytes[0]`.
    private(set) package var start: Int64 = 0
    /// Valid bytes in `bytes`.
    private(set) package var count = 0

    /// A window of `capacity` bytes (allocated once).
    package init(capacity: Int) { bytes = [UInt8](repeating: 0, count: capacity) }

    /// Makes `length` bytes from offset `at` of `fd` (a file of `fileSize` bytes) available,
    /// reading a whole window from `at` when they are not already there. False past the end of
    /// the file, before its start, for a closed descriptor, or when the read comes up short.
    package mutating func ensure(fd: Int32, fileSize: Int64, at: Int64, length: Int) -> Bool {
        if at >= start && at + Int64(length) <= start + Int64(count) { return true }
        guard at >= 0, at + Int64(length) <= fileSize, fd >= 0 else { return false }
        start = at
        count = 0
        let want = Int(min(Int64(bytes.count), fileSize - at))
        var got = 0
        bytes.withUnsafeMutableBytes { raw in
            while got < want {
                let n = pread(fd, raw.baseAddress! + got, want - got, off_t(at) + off_t(got))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                got += n
            }
        }
        count = got
        return count >= length
    }
}
