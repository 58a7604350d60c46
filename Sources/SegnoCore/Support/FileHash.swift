import Crypto
import Foundation

/// SHA-256 of files, read in 1 MiB chunks (memory does not grow with the file).
public enum FileHash {
    /// The digest and size of the file at `path` (through its pinned output root, if any).
    public static func sha256(path: String) throws(AudioError) -> (digest: Data, size: Int64) {
        let fd = open(OutputRootPin.physical(path), O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw AudioError.system(path, "cannot read", errno: errno) }
        defer { close(fd) }
        return try sha256(fd: fd, path: path)
    }

    /// The digest and size of what `fd` (open for reading, at its start) holds; `path` names it in errors.
    static package func sha256(fd: Int32, path: String) throws(AudioError) -> (digest: Data, size: Int64) {
        var hasher = SHA256()
        var size: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw AudioError.system(path, "read failed", errno: errno) }
            if n == 0 { break }
            size += Int64(n)
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        return (Data(hasher.finalize()), size)
    }

    /// One digest for a step's files: the file's own digest when there is one, else SHA-256 of
    /// the digests in order.
    public static func combine(_ digests: [Data]) -> Data {
        if digests.count == 1 { return digests[0] }
        var h = SHA256()
        for d in digests { h.update(data: d) }
        return Data(h.finalize())
    }

    /// Lower-case hex of bytes.
    public static func hex(_ d: Data) -> String { d.map { String(format: "%02x", $0) }.joined() }
}

/// Files segno writes again in place without running their step (speaker names, decision 0084).
public enum OutputRewrite {
    /// True when the files at `paths` are the ones a step recorded (their combined hash is
    /// `hash`), or already hold `contents` (written by a pass stopped before the state recorded
    /// it); false when one is missing, unreadable or changed by someone else.
    public static func isOurs(_ paths: [String], hash: Data, orAlready contents: [[UInt8]]) -> Bool {
        guard let now = try? paths.map({ try FileHash.sha256(path: $0).digest }) else { return false }
        if FileHash.combine(now) == hash { return true }
        guard contents.count == paths.count else { return false }
        return zip(now, contents).allSatisfy { $0 == Data(SHA256.hash(data: $1)) }
    }
}

