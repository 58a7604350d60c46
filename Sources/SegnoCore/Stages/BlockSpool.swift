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
    /// What the spool is, for errors: "the spool of the measuring passes".
    private let purpose: String
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
        self.purpose = "the spool of the measuring passes"
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

    /// A spool kept under a name, `path` (a checkpoint's stream, decision 0095): created when
    /// missing, cut to its first `keeping` bytes (the blocks a checkpoint vouches for; 0 for a new
    /// stream), read from its start. Reads up to `keeping` replay those blocks, and writes then go
    /// on after them.
    package init(path: String, channels: Int, recording: String, keeping: Int64) throws(AudioError) {
        self.channels = channels
        self.recording = recording
        self.folder = (path as NSString).deletingLastPathComponent
        self.purpose = "the checkpoint stream"
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd < 0 { throw AudioError.system(recording, "cannot open the checkpoint stream \(AudioError.quoted(path))", errno: errno) }
        if ftruncate(fd, off_t(keeping)) != 0 {
            let e = errno
            close(fd)
            throw AudioError.system(recording, "cannot cut the checkpoint stream \(AudioError.quoted(path))", errno: e)
        }
        self.fd = fd
    }

    /// Bytes before the next read or write: after the last block written, the stream's length.
    package var offset: Int64 { Int64(lseek(fd, 0, SEEK_CUR)) }

    /// Puts what was written on the disk (`fdatasync`), before a checkpoint vouches for it.
    package func sync() throws(AudioError) {
        if fdatasync(fd) != 0 { throw error("write", errno) }
    }

    deinit { close(fd) }

    private static func error(_ recording: String, _ what: String, _ folder: String, _ code: Int32,
                              purpose: String = "the spool of the measuring passes") -> AudioError {
        .system(recording, "cannot \(what) \(purpose) in \(AudioError.quoted(folder))", errno: code)
    }

    private func error(_ what: String, _ code: Int32) -> AudioError {
        Self.error(recording, what, folder, code, purpose: purpose)
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
        if failure != 0 { throw error("write", failure) }
    }

    /// Goes back to the first block, for another pass.
    package func rewind() throws(AudioError) {
        if lseek(fd, 0, SEEK_SET) < 0 { throw error("read", errno) }
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
        got < 0 ? error("read", Int32(-got)) : error("read", EIO)
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
