import Foundation
import Synchronization

/// Which object a recorded multipart upload is for.
public struct MultipartUploadKey: Hashable, Sendable, Codable, CustomStringConvertible {
    public var bucket: String
    public var key: String

    public init(bucket: String, key: String) {
        self.bucket = bucket
        self.key = key
    }

    public var description: String { "s3://\(bucket)/\(key)" }
}

/// What is known of an unfinished multipart upload: enough to resume it after the process died.
public struct MultipartProgress: Sendable, Equatable, Codable {
    /// Lower-case hex SHA-256 of the local file being uploaded. A different hash on the next call
    /// means the file changed: the old upload is aborted and a new one started.
    public var fileSHA256: String
    public var uploadId: String
    /// Bytes per part (the last part may be shorter).
    public var partSize: Int64
    /// Finished parts: part number → ETag (no quotes).
    public var parts: [Int: String]
    /// When the upload was created (for aborting stale uploads).
    public var startedAt: Date

    public init(fileSHA256: String, uploadId: String, partSize: Int64, parts: [Int: String] = [:], startedAt: Date) {
        self.fileSHA256 = fileSHA256
        self.uploadId = uploadId
        self.partSize = partSize
        self.parts = parts
        self.startedAt = startedAt
    }

    // Stored as JSON in the state database. `startedAt` is seconds since 1970, like every other
    // time there, marked by `"epoch": 1970`; records written before the mark counted from 2001
    // (Foundation's default date encoding) and are still read right.
    enum CodingKeys: String, CodingKey { case fileSHA256, uploadId, partSize, parts, startedAt, epoch }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        fileSHA256 = try c.decode(String.self, forKey: .fileSHA256)
        uploadId = try c.decode(String.self, forKey: .uploadId)
        partSize = try c.decode(Int64.self, forKey: .partSize)
        parts = try c.decode([Int: String].self, forKey: .parts)
        let seconds = try c.decode(Double.self, forKey: .startedAt)
        let epoch = try c.decodeIfPresent(Int.self, forKey: .epoch)
        startedAt = epoch == 1970 ? Date(timeIntervalSince1970: seconds) : Date(timeIntervalSinceReferenceDate: seconds)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(fileSHA256, forKey: .fileSHA256)
        try c.encode(uploadId, forKey: .uploadId)
        try c.encode(partSize, forKey: .partSize)
        try c.encode(parts, forKey: .parts)
        try c.encode(startedAt.timeIntervalSince1970, forKey: .startedAt)
        try c.encode(1970, forKey: .epoch)
    }
}

/// Where `S3Client.upload` records multipart progress, so that a run killed mid-upload resumes
/// the same upload instead of starting over. Every `StateBackend` (SegnoCore's protocol)
/// implements it; this module is the vocabulary the S3 client and the state share, so the core
/// need not import the S3 client (docs/layout.md).
///
/// `upload` calls `load` once at the start, `save` after creating the upload and after every
/// finished part (from several threads, but never two calls at once for one upload), and
/// `clear` once the object is complete (or the record is useless). Implementations must be safe
/// to call from any thread; errors they throw fail the upload.
public protocol MultipartProgressStore: Sendable {
    func load(_ key: MultipartUploadKey) throws -> MultipartProgress?
    func save(_ progress: MultipartProgress, for key: MultipartUploadKey) throws
    func clear(_ key: MultipartUploadKey) throws
}

/// A `MultipartProgressStore` in memory (tests, one-off uploads).
public final class InMemoryMultipartProgressStore: MultipartProgressStore {
    private let records = Mutex([MultipartUploadKey: MultipartProgress]())

    public init() {}

    public func load(_ key: MultipartUploadKey) throws -> MultipartProgress? { records.withLock { $0[key] } }

    public func save(_ progress: MultipartProgress, for key: MultipartUploadKey) throws {
        records.withLock { $0[key] = progress }
    }

    public func clear(_ key: MultipartUploadKey) throws { _ = records.withLock { $0.removeValue(forKey: key) } }

    /// Every record, for inspection.
    public var all: [MultipartUploadKey: MultipartProgress] { records.withLock { $0 } }
}
