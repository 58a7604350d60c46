import Crypto
import Foundation

/// SHA-256 of files, read in 1 MiB chunks (memory does not grow with the file).
public enum FileHash {
    /// The digest and size of the file at `path`.
    public static func sha256(path: String) throws -> (digest: Data, size: Int64) {
        guard let h = FileHandle(forReadingAtPath: path) else {
            throw AudioError.io(path: path, detail: "cannot read back to hash it")
        }
        defer { try? h.close() }
        var hasher = SHA256()
        var size: Int64 = 0
        while true {
            let chunk = try h.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { break }
            size += Int64(chunk.count)
            hasher.update(data: chunk)
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
