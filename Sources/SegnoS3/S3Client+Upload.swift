import Crypto
import Foundation

/// How `S3Client.upload` sends a file.
public struct UploadOptions: Sendable {
    /// Files of this many bytes or more go up in parts (default 16 MiB).
    public var multipartThreshold: Int64
    /// Bytes per part (default 8 MiB; S3 allows 5 MiB to 5 GiB). Raised automatically when the
    /// file would need more than 10 000 parts. One part per worker is held in memory.
    public var partSize: Int64
    /// Parts sent at the same time for one file (default 4).
    public var partConcurrency: Int
    /// `x-amz-storage-class`, nil for the bucket's default.
    public var storageClass: String?
    /// False: never replace an existing object (`If-None-Match: *` on PUT; a HEAD check before a
    /// multipart upload). The upload then fails with code `PreconditionFailed`.
    public var overwrite: Bool
    /// Lower-case hex SHA-256 of the file's current content when the caller already knows it
    /// (e.g. from the state store: saves one read of a large file); nil to compute it. Used for
    /// multipart uploads only (a single PUT hashes the bytes it sends anyway).
    public var sha256: String?
    /// Asked before each part (and before a single PUT); returning false stops the upload with
    /// `S3Error.cancelled`, leaving a multipart upload recorded for the next call to resume.
    public var shouldContinue: (@Sendable () -> Bool)?
    /// Called after each part the server accepted (from worker threads).
    public var partUploaded: (@Sendable (UploadedPart) -> Void)?

    public static let defaultMultipartThreshold: Int64 = 16 << 20
    public static let defaultPartSize: Int64 = 8 << 20
    public static let minimumPartSize: Int64 = 5 << 20

    public init(multipartThreshold: Int64 = UploadOptions.defaultMultipartThreshold,
                partSize: Int64 = UploadOptions.defaultPartSize, partConcurrency: Int = 4,
                storageClass: String? = nil, overwrite: Bool = true, sha256: String? = nil,
                shouldContinue: (@Sendable () -> Bool)? = nil, partUploaded: (@Sendable (UploadedPart) -> Void)? = nil) {
        self.multipartThreshold = multipartThreshold
        self.partSize = partSize
        self.partConcurrency = partConcurrency
        self.storageClass = storageClass
        self.overwrite = overwrite
        self.sha256 = sha256
        self.shouldContinue = shouldContinue
        self.partUploaded = partUploaded
    }

    /// Checks the sizes; called by `upload` before anything is read or sent.
    public func validate() throws {
        if partSize < Self.minimumPartSize || partSize > 5 << 30 {
            throw S3Error.invalidConfiguration("part size \(partSize) is outside 5 MiB…5 GiB")
        }
        if multipartThreshold < 1 { throw S3Error.invalidConfiguration("multipart threshold must be positive") }
        if partConcurrency < 1 { throw S3Error.invalidConfiguration("part concurrency must be at least 1") }
    }
}

/// What `upload` did.
public struct UploadResult: Sendable, Equatable {
    /// The object's ETag (no quotes).
    public var etag: String
    /// SHA-256 of the local file, also stored as `x-amz-meta-segno-sha256`.
    public var sha256: String
    /// Bytes of the file.
    public var size: Int64
    public var multipart: Bool
    /// Parts sent by this call (0 for a single PUT).
    public var partsUploaded: Int
    /// Parts an earlier, interrupted call had already sent.
    public var partsReused: Int
    /// True when a recorded multipart upload was continued.
    public var resumed: Bool
}

/// The answer of `verify`.
public enum VerifyOutcome: Sendable, Equatable {
    /// The object exists and its `segno-sha256` (and size, when given) match.
    case verified(ObjectInfo)
    case missing
    /// The object exists but holds something else (or was not uploaded by segno).
    case mismatch(remoteSHA256: String?)
}

extension S3Client {
    /// Uploads a local file: one streamed PUT below `options.multipartThreshold`, otherwise a
    /// multipart upload whose progress is recorded in `progressStore` and resumed (via ListParts,
    /// skipping parts already there with a matching ETag) when an earlier call was interrupted.
    /// Stores the file's SHA-256 as `x-amz-meta-segno-sha256`. Called once per file to upload,
    /// from a worker thread.
    /// - Parameters:
    ///   - metadata: user metadata (`x-amz-meta-*`); with `segno-sha256` at most 2 KB.
    ///   - contentType: e.g. `audio/flac`.
    /// - Throws: `S3Error` (`metadataTooLarge` and `invalidConfiguration` before anything is sent,
    ///   `cancelled` when `shouldContinue` said stop), or whatever `progressStore` throws.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func upload(file: URL, bucket: String, key: String, metadata: [String: String] = [:],
                       contentType: String? = nil, options: UploadOptions = UploadOptions(),
                       progressStore: (any MultipartProgressStore)? = nil) throws -> UploadResult
    {
        try options.validate()
        var userMetadata = metadata
        userMetadata.removeValue(forKey: S3Metadata.sha256Key)
        try S3Metadata.validate(userMetadata, reserve: S3Metadata.reservedBytes)
        try S3Endpoint.validate(bucket: bucket)
        let path = file.path
        let size = try FileDigest.size(path: path)
        let resource = "s3://\(bucket)/\(key)"
        let storeKey = MultipartUploadKey(bucket: bucket, key: key)
        if options.shouldContinue?() == false { throw S3Error.cancelled(resource: resource) }

        if size < options.multipartThreshold {
            // Up to one part's size the file is read once into memory (no more memory than a
            // multipart upload holds per worker); larger single PUTs stream from the file.
            let body: RequestBody
            let digest: FileDigest
            if size <= options.partSize {
                let data = try FileDigest.read(path: path, offset: 0, length: Int(size))
                body = .data(data)
                digest = FileDigest.of(data: data)
            } else {
                body = .file(file)
                digest = try FileDigest.of(path: path)
            }
            var put = PutObjectOptions(metadata: userMetadata, contentType: contentType,
                                       storageClass: options.storageClass, ifNoneMatch: !options.overwrite)
            put.metadata[S3Metadata.sha256Key] = digest.sha256
            let result = try putObject(bucket: bucket, key: key, body: body, digest: digest, options: put)
            if let store = progressStore, let stale = try store.load(storeKey) {
                // An earlier multipart attempt (larger file or another threshold) is now useless.
                try? abortMultipartUpload(bucket: bucket, key: key, uploadId: stale.uploadId)
                try store.clear(storeKey)
            }
            return UploadResult(etag: result.etag, sha256: digest.sha256, size: size, multipart: false,
                                partsUploaded: 0, partsReused: 0, resumed: false)
        }

        let sha256 = try options.sha256 ?? FileDigest.of(path: path, md5: false).sha256
        var progress = try progressStore?.load(storeKey)
        var serverParts: [Int: UploadedPart] = [:]
        if let recorded = progress, recorded.fileSHA256 != sha256 {
            // The file changed since the interrupted upload: that upload can never be completed.
            try? abortMultipartUpload(bucket: bucket, key: key, uploadId: recorded.uploadId)
            try progressStore?.clear(storeKey)
            progress = nil
        }
        if let recorded = progress {
            do {
                for part in try listParts(bucket: bucket, key: key, uploadId: recorded.uploadId) {
                    serverParts[part.partNumber] = part
                }
            } catch let error as S3Error where error.code == "NoSuchUpload" || error.status == 404 {
                // Completed by a call that died before clearing its record, or aborted.
                if let info = try headObject(bucket: bucket, key: key), info.sha256 == sha256, info.size == size {
                    try progressStore?.clear(storeKey)
                    return UploadResult(etag: info.etag, sha256: sha256, size: size, multipart: true,
                                        partsUploaded: 0, partsReused: 0, resumed: true)
                }
                try progressStore?.clear(storeKey)
                progress = nil
            }
        }
        let resumed = progress != nil
        if progress == nil {
            if !options.overwrite, try headObject(bucket: bucket, key: key) != nil {
                throw S3Error.server(operation: "CreateMultipartUpload", resource: resource, status: 412,
                                     code: "PreconditionFailed", message: "the object exists and overwrite is off",
                                     requestId: nil)
            }
            var partSize = options.partSize
            while (size + partSize - 1) / partSize > 10_000 { partSize *= 2 }
            var create = PutObjectOptions(metadata: userMetadata, contentType: contentType,
                                          storageClass: options.storageClass)
            create.metadata[S3Metadata.sha256Key] = sha256
            if progressStore != nil {
                // An upload of this key that the store does not know was created by a call killed
                // before it could record it (the caller is this key's only writer now): abort it,
                // or it would stay open, holding its parts, until the bucket's lifecycle rule.
                for orphan in try listMultipartUploads(bucket: bucket, prefix: key) where orphan.key == key {
                    try? abortMultipartUpload(bucket: bucket, key: key, uploadId: orphan.uploadId)
                }
            }
            let uploadId = try createMultipartUpload(bucket: bucket, key: key, options: create)
            progress = MultipartProgress(fileSHA256: sha256, uploadId: uploadId, partSize: partSize, startedAt: Date())
            try progressStore?.save(progress!, for: storeKey)
        }
        let plan = progress!
        let partSize = plan.partSize
        let partCount = Int((size + partSize - 1) / partSize)
        @Sendable func length(of part: Int) -> Int64 { min(partSize, size - Int64(part - 1) * partSize) }

        // Parts already on the server: recorded with the same ETag, or unrecorded (the process died
        // between the upload and the record) but with the MD5 of the local bytes.
        var done: [Int: UploadedPart] = [:]
        var pending: [Int] = []
        for number in 1...partCount {
            if let there = serverParts[number], there.size == length(of: number) {
                if let recorded = plan.parts[number], recorded == there.etag {
                    done[number] = there
                    continue
                }
                if Self.looksLikeMD5(there.etag) {
                    let local = try FileDigest.of(path: path, offset: Int64(number - 1) * partSize, length: length(of: number),
                                                  sha256: false)
                    if local.md5Hex == there.etag.lowercased() {
                        done[number] = there
                        continue
                    }
                }
            }
            pending.append(number)
        }
        let reused = done.count
        let state = Locked((progress: plan, done: done, queue: pending[...], failure: (any Error)?.none, sent: 0))
        if reused != plan.parts.count || done.contains(where: { plan.parts[$0.key] != $0.value.etag }) {
            try state.withLock { s in
                s.progress.parts = s.done.mapValues(\.etag)
                try progressStore?.save(s.progress, for: storeKey)
            }
        }

        let workers = min(options.partConcurrency, max(1, pending.count))
        Self.runConcurrently(workers) {
            while true {
                let next: Int? = state.withLock { s in
                    guard s.failure == nil, let n = s.queue.first else { return nil }
                    if options.shouldContinue?() == false {
                        s.failure = S3Error.cancelled(resource: resource)
                        return nil
                    }
                    s.queue.removeFirst()
                    return n
                }
                guard let number = next else { return }
                do {
                    let data = try FileDigest.read(path: path, offset: Int64(number - 1) * partSize,
                                                   length: Int(length(of: number)))
                    let part = try self.uploadPart(bucket: bucket, key: key, uploadId: plan.uploadId,
                                                   partNumber: number, data: data)
                    try state.withLock { s in
                        s.done[number] = part
                        s.sent += 1
                        s.progress.parts[number] = part.etag
                        try progressStore?.save(s.progress, for: storeKey)
                    }
                    options.partUploaded?(part)
                } catch {
                    state.withLock { s in
                        if s.failure == nil { s.failure = error }
                    }
                    return
                }
            }
        }
        let final = state.value
        if let failure = final.failure { throw failure }

        let parts = (1...partCount).map { final.done[$0]! }
        let etag: String
        do {
            etag = try completeMultipartUpload(bucket: bucket, key: key, uploadId: plan.uploadId, parts: parts)
        } catch let error as S3Error where error.code == "NoSuchUpload" {
            // A retried Complete whose first attempt did complete the object.
            guard let info = try headObject(bucket: bucket, key: key), info.sha256 == sha256, info.size == size else {
                throw error
            }
            etag = info.etag
        }
        try progressStore?.clear(storeKey)
        return UploadResult(etag: etag, sha256: sha256, size: size, multipart: true, partsUploaded: final.sent,
                            partsReused: reused, resumed: resumed)
    }

    /// HEADs the object and compares its `segno-sha256` (and size, when given) with the local
    /// file's. Called by a re-run to decide whether a recorded upload is still in place.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func verify(bucket: String, key: String, sha256: String, size: Int64? = nil) throws -> VerifyOutcome {
        guard let info = try headObject(bucket: bucket, key: key) else { return .missing }
        guard info.sha256?.lowercased() == sha256.lowercased(), size.map({ $0 == info.size }) ?? true else {
            return .mismatch(remoteSHA256: info.sha256)
        }
        return .verified(info)
    }

    /// SHA-256 (lower-case hex) of a local file, read in 1 MiB blocks.
    public static func sha256(ofFile file: URL) throws -> String { try FileDigest.of(path: file.path, md5: false).sha256 }

    /// Runs `body` on `count` threads (the caller's included) and returns when all have finished.
    static func runConcurrently(_ count: Int, _ body: @escaping @Sendable () -> Void) {
        if count <= 1 { body(); return }
        let group = DispatchGroup()
        for _ in 1..<count {
            group.enter()
            let thread = Thread {
                body()
                group.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        body()
        group.wait()
    }
}
