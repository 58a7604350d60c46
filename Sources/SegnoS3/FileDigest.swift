import Crypto
import Foundation

/// MD5 and SHA-256 of a local file or a range of it, read in 1 MiB blocks with `pread`
/// (memory stays at one block whatever the file's size).
struct FileDigest: Sendable, Equatable {
    /// Raw MD5 bytes (16).
    var md5: [UInt8]
    /// Lower-case hex SHA-256.
    var sha256: String
    /// Bytes digested.
    var length: Int64

    var md5Base64: String { Data(md5).base64EncodedString() }
    var md5Hex: String { Hex.encode(md5) }

    /// Digests `length` bytes from `offset` (nil = to the end of the file). A digest that is not
    /// wanted (`md5: false` or `sha256: false`) is not computed and left empty: MD5 costs about
    /// three times as much as SHA-256 on CPUs with SHA extensions.
    static func of(path: String, offset: Int64 = 0, length: Int64? = nil, md5 wantMD5: Bool = true,
                   sha256 wantSHA256: Bool = true) throws -> FileDigest {
        let file = try OpenFile(path: path)
        defer { file.close() }
        var md5 = Insecure.MD5()
        var sha = SHA256()
        let block = 1 << 20
        var buffer = [UInt8](repeating: 0, count: block)
        var position = offset
        let end = length.map { offset + $0 }
        var total: Int64 = 0
        while true {
            let want = end.map { Int(min(Int64(block), $0 - position)) } ?? block
            if want <= 0 { break }
            let got = try file.read(into: &buffer, count: want, at: position)
            if got == 0 { break }
            buffer.withUnsafeBufferPointer { pointer in
                let slice = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(pointer)[0..<got])
                if wantMD5 { md5.update(bufferPointer: slice) }
                if wantSHA256 { sha.update(bufferPointer: slice) }
            }
            position += Int64(got)
            total += Int64(got)
        }
        if let length, total != length {
            throw S3Error.fileUnreadable(path: path, message: "file ended after \(total) of \(length) bytes (changed while uploading?)")
        }
        return FileDigest(md5: wantMD5 ? Array(md5.finalize()) : [], sha256: wantSHA256 ? Hex.encode(sha.finalize()) : "",
                          length: total)
    }

    /// MD5 and SHA-256 of bytes in memory.
    static func of(data: Data) -> FileDigest {
        FileDigest(md5: Array(Insecure.MD5.hash(data: data)), sha256: Hex.encode(SHA256.hash(data: data)),
                   length: Int64(data.count))
    }

    /// Reads `length` bytes at `offset` into memory (one multipart part).
    static func read(path: String, offset: Int64, length: Int) throws -> Data {
        let file = try OpenFile(path: path)
        defer { file.close() }
        var data = Data(count: length)
        var filled = 0
        try data.withUnsafeMutableBytes { raw in
            while filled < length {
                let got = try file.read(into: raw.baseAddress! + filled, count: length - filled, at: offset + Int64(filled))
                if got == 0 { break }
                filled += got
            }
        }
        if filled != length {
            throw S3Error.fileUnreadable(path: path, message: "file ended after \(offset + Int64(filled)) bytes (changed while uploading?)")
        }
        return data
    }

    /// Size of the file in bytes.
    static func size(path: String) throws -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw S3Error.fileUnreadable(path: path, message: String(cString: strerror(errno)))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw S3Error.fileUnreadable(path: path, message: "not a regular file")
        }
        return Int64(info.st_size)
    }
}

/// A read-only POSIX file descriptor.
private struct OpenFile {
    let fd: Int32
    let path: String

    init(path: String) throws {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw S3Error.fileUnreadable(path: path, message: String(cString: strerror(errno))) }
    }

    func close() { _ = Foundation.close(fd) }

    func read(into buffer: inout [UInt8], count: Int, at offset: Int64) throws -> Int {
        try buffer.withUnsafeMutableBytes { try read(into: $0.baseAddress!, count: count, at: offset) }
    }

    func read(into pointer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws -> Int {
        while true {
            let got = pread(fd, pointer, count, off_t(offset))
            if got >= 0 { return got }
            if errno == EINTR { continue }
            throw S3Error.fileUnreadable(path: path, message: String(cString: strerror(errno)))
        }
    }
}
