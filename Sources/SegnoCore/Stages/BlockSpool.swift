import Foundation
import SegnoDSP

/// The stream at one place of a chain, written once and read back as often as needed, block for
/// block (issue 34 item 4, decision 0052): an analysing transform's measuring passes and the pass
/// after it read this instead of decoding the recording again and re-running what stands before it.
///
/// Each record is the block's frame count, the source frames read when the block was made (what
/// progress reports on replay), then its Float32 samples as they lie in memory: a replay hands the
/// stages the very blocks, cut at the very places, of the pass that wrote them, so their outputs
/// are byte-identical. The file has no name (`O_TMPFILE`, or a temporary name unlinked at once
/// where the file system lacks it): nothing looks like an output, and it vanishes when closed,
/// whether the recording succeeded, failed or the process was killed.
final package class BlockSpool {
    /// Channels of every block.
    package let channels: Int
    private let fd: Int32
    /// The recording and the folder, for errors.
    private let recording: String
    private let folder: String
    /// A record's head: the block's frame count and the source frames read when it was made.
    private static let headerBytes = MemoryLayout<(Int64, Int64)>.size

    /// Linux's `O_TMPFILE` (Glibc's macro does not reach Swift): `__O_TMPFILE | O_DIRECTORY`,
    /// 020000000 on every architecture Swift runs on.
    private static let tmpfileFlag: Int32 = 0o20000000 | O_DIRECTORY

    /// An empty spool in `folder`, for blocks of `channels`. Throws an `.io` error naming
    /// `recording` when the folder cannot hold one.
    package init(folder: String, channels: Int, recording: String) throws(AudioError) {
        self.channels = channels
        self.recording = recording
        self.folder = folder
        var fd = open(folder, Self.tmpfileFlag | O_RDWR | O_CLOEXEC, 0o600)
        if fd < 0 && errno == ENOENT {
            try OutputFile.makeFolders(folder, for: recording)
            fd = open(folder, Self.tmpfileFlag | O_RDWR | O_CLOEXEC, 0o600)
        }
        if fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) {
            // No O_TMPFILE here (some network file systems): a temporary name, gone at once.
            let token = String(UInt64.random(in: 0...UInt64.max), radix: 36)
            let path = (folder as NSString).appendingPathComponent("\(OutputFile.tempPrefix)\(OutputFile.owner).\(token)-spool")
            fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 { unlink(path) }
        }
        if fd < 0 { throw Self.error(recording, "create", folder, errno) }
        self.fd = fd
    }

    deinit { close(fd) }

    private static func error(_ recording: String, _ what: String, _ folder: String, _ code: Int32) -> AudioError {
        .system(recording, "cannot \(what) the spool of the measuring passes in \(AudioError.quoted(folder))", errno: code)
    }

    /// Appends `block` (of `channels`), made when `sourceFrames` source frames had been read.
    package func write(_ block: AudioBlock, sourceFrames: Int) throws(AudioError) {
        let fd = self.fd
        let header = (Int64(block.frames), Int64(sourceFrames))
        var failure = withUnsafeBytes(of: header) { OutputFile.writeAll(fd, $0.bindMemory(to: UInt8.self)) }
        if failure == 0 && block.frames > 0 {
            let bytes = block.frames * channels * MemoryLayout<Float>.size
            failure = block.samples.withUnsafeBytes { OutputFile.writeAll(fd, UnsafeRawBufferPointer(rebasing: $0[0..<bytes]).bindMemory(to: UInt8.self)) }
        }
        if failure != 0 { throw Self.error(recording, "write", folder, failure) }
    }

    /// Goes back to the first block, for another pass.
    package func rewind() throws(AudioError) {
        if lseek(fd, 0, SEEK_SET) < 0 { throw Self.error(recording, "read", folder, errno) }
    }

    /// Reads the next block into `block` (its storage reused when large enough); returns the source
    /// frames read when it was made, or nil after the last block.
    package func read(into block: inout AudioBlock) throws(AudioError) -> Int? {
        var header: (Int64, Int64) = (0, 0)
        let got = withUnsafeMutableBytes(of: &header) { readAll($0) }
        if got == 0 { return nil }
        guard got == Self.headerBytes else { throw truncated(got) }
        let frames = Int(header.0)
        block.reset(channels: channels, capacity: frames)
        if frames > 0 {
            let want = frames * channels * MemoryLayout<Float>.size
            let n = block.samples.withUnsafeMutableBytes { readAll(UnsafeMutableRawBufferPointer(rebasing: $0[0..<want])) }
            guard n == want else { throw truncated(n) }
        }
        block.frames = frames
        return Int(header.1)
    }

    private func truncated(_ got: Int) -> AudioError {
        got < 0 ? Self.error(recording, "read", folder, Int32(-got)) : Self.error(recording, "read", folder, EIO)
    }

    /// Fills `buffer` unless the file ends first: the bytes read, or minus `errno`.
    private func readAll(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
        var off = 0
        while off < buffer.count {
            let n = Foundation.read(fd, buffer.baseAddress! + off, buffer.count - off)
            if n < 0 { if errno == EINTR { continue }; return -Int(errno) }
            if n == 0 { break }
            off += n
        }
        return off
    }
}
