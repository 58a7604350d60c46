import Foundation

/// Options of a single PUT (and of a multipart upload's creation).
public struct PutObjectOptions: Sendable, Equatable {
    /// User metadata, sent as `x-amz-meta-<key>` (keys lower-cased, 2 KB in total at most).
    public var metadata: [String: String]
    /// `Content-Type` of the object (e.g. `audio/flac`); nil lets the server choose.
    public var contentType: String?
    /// `x-amz-storage-class` (e.g. `STANDARD_IA`); nil for the bucket's default.
    public var storageClass: String?
    /// Send `If-None-Match: *`: the PUT fails with `PreconditionFailed` (412) when the key exists.
    public var ifNoneMatch: Bool

    public init(metadata: [String: String] = [:], contentType: String? = nil, storageClass: String? = nil,
                ifNoneMatch: Bool = false) {
        self.metadata = metadata
        self.contentType = contentType
        self.storageClass = storageClass
        self.ifNoneMatch = ifNoneMatch
    }

    /// Headers common to PUT and CreateMultipartUpload.
    func headers() -> [String: String] {
        var headers = S3Metadata.headers(metadata)
        if let contentType { headers["Content-Type"] = contentType }
        if let storageClass { headers["x-amz-storage-class"] = storageClass }
        return headers
    }
}

/// What a PUT returned.
public struct PutObjectResult: Sendable, Equatable {
    /// ETag without quotes.
    public var etag: String
    public var versionId: String?
}

/// What HEAD tells about an object.
public struct ObjectInfo: Sendable, Equatable {
    /// Bytes.
    public var size: Int64
    /// ETag without quotes (`<md5 hex>` for single PUTs, `<hex>-N` for multipart uploads).
    public var etag: String
    public var contentType: String?
    public var lastModified: Date?
    /// User metadata: keys lower-cased without `x-amz-meta-`, values decoded.
    public var metadata: [String: String]
    public var storageClass: String?
    public var versionId: String?

    /// The `segno-sha256` metadata `upload` stores, if present.
    public var sha256: String? { metadata[S3Metadata.sha256Key] }
}

extension S3Client {
    /// Uploads a file with one PUT, streaming its body from disk (never whole in memory).
    /// Reads the file once first for `Content-MD5` and the payload hash.
    /// Use `upload(file:...)` to pick multipart for large files.
    /// - Throws: `S3Error` (`metadataTooLarge` before anything is sent).
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func putObject(bucket: String, key: String, file: URL, options: PutObjectOptions = PutObjectOptions())
        throws -> PutObjectResult
    {
        try S3Metadata.validate(options.metadata)
        let digest = try FileDigest.of(path: file.path)
        return try putObject(bucket: bucket, key: key, body: .file(file), digest: digest, options: options)
    }

    /// Uploads bytes in memory with one PUT.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func putObject(bucket: String, key: String, data: Data, options: PutObjectOptions = PutObjectOptions())
        throws -> PutObjectResult
    {
        try S3Metadata.validate(options.metadata)
        return try putObject(bucket: bucket, key: key, body: .data(data), digest: FileDigest.of(data: data), options: options)
    }

    func putObject(bucket: String, key: String, body: RequestBody, digest: FileDigest, options: PutObjectOptions)
        throws -> PutObjectResult
    {
        var call = Call(operation: "PutObject", method: "PUT", bucket: bucket, key: key)
        call.headers = options.headers()
        call.headers["Content-MD5"] = digest.md5Base64
        if options.ifNoneMatch { call.headers["If-None-Match"] = "*" }
        call.body = body
        call.payloadHash = digest.sha256
        let response = try perform(call)
        let etag = Self.unquote(response.header("etag") ?? "")
        try checkETag(etag, md5Hex: digest.md5Hex, resource: call.resource)
        return PutObjectResult(etag: etag, versionId: response.header("x-amz-version-id"))
    }

    /// HEAD: the object's size, ETag, type and metadata, or nil when it does not exist (404).
    /// A HEAD answer has no error document, so on other errors the same resource is fetched once
    /// with GET (one byte) to learn the server's error code (e.g. `SignatureDoesNotMatch`).
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func headObject(bucket: String, key: String) throws -> ObjectInfo? {
        var call = Call(operation: "HeadObject", method: "HEAD", bucket: bucket, key: key)
        call.accept = [404]
        let response: HTTPResponse
        do {
            response = try perform(call)
        } catch let error as S3Error where error.status.map({ (400..<500).contains($0) }) == true {
            var probe = Call(operation: "HeadObject", method: "GET", bucket: bucket, key: key)
            probe.headers["Range"] = "bytes=0-0"
            probe.accept = [404, 416]
            do { _ = try perform(probe) } catch let detailed as S3Error where detailed.status == error.status {
                throw detailed
            }
            throw error
        }
        if response.status == 404 { return nil }
        var metadata: [String: String] = [:]
        for (name, value) in response.headers where name.hasPrefix("x-amz-meta-") {
            metadata[String(name.dropFirst("x-amz-meta-".count))] = S3Metadata.decodeValue(value)
        }
        return ObjectInfo(
            size: Int64(response.header("content-length") ?? "") ?? 0,
            etag: Self.unquote(response.header("etag") ?? ""),
            contentType: response.header("content-type"),
            lastModified: response.header("last-modified").flatMap(S3Dates.parseHTTP),
            metadata: metadata,
            storageClass: response.header("x-amz-storage-class"),
            versionId: response.header("x-amz-version-id"))
    }

    /// GET: the object's bytes (or a byte range, inclusive), in memory. For small objects and tests.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func getObject(bucket: String, key: String, range: ClosedRange<Int64>? = nil) throws -> Data {
        var call = Call(operation: "GetObject", method: "GET", bucket: bucket, key: key)
        if let range { call.headers["Range"] = "bytes=\(range.lowerBound)-\(range.upperBound)" }
        return try perform(call).body
    }

    /// DELETE an object. Deleting a missing key succeeds (S3 semantics).
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func deleteObject(bucket: String, key: String) throws {
        var call = Call(operation: "DeleteObject", method: "DELETE", bucket: bucket, key: key)
        call.accept = [404]
        _ = try perform(call)
    }

    /// Creates a bucket; succeeds when this account already owns it.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func createBucket(_ bucket: String) throws {
        var call = Call(operation: "CreateBucket", method: "PUT", bucket: bucket, key: nil)
        if endpoint.region != "us-east-1" && endpoint.region != "auto" {
            let xml = "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                + "<LocationConstraint>\(XMLElement.escape(endpoint.region))</LocationConstraint></CreateBucketConfiguration>"
            let data = Data(xml.utf8)
            call.body = .data(data)
            call.payloadHash = PayloadHash.of(data)
            call.headers["Content-Type"] = "application/xml"
        }
        do { _ = try perform(call) } catch let error as S3Error where error.code == "BucketAlreadyOwnedByYou" {}
    }

    /// One listed object.
    public struct ListedObject: Sendable {
        public var key: String
        public var size: Int64
        /// Without quotes.
        public var etag: String
        public var lastModified: Date?
    }

    /// Every object under `prefix` with its size, ETag and time, all pages (ListObjectsV2).
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func listObjectsDetailed(bucket: String, prefix: String = "") throws -> [ListedObject] {
        var results: [ListedObject] = []
        var token: String?
        repeat {
            var call = Call(operation: "ListObjectsV2", method: "GET", bucket: bucket, key: nil)
            call.query = [("list-type", "2"), ("prefix", prefix), ("encoding-type", "url")]
            if let token { call.query.append(("continuation-token", token)) }
            let root = try parse(perform(call), call)
            for item in root.all("Contents") {
                guard let key = item.string("Key") else { continue }
                results.append(ListedObject(key: S3URIEncoding.decode(key), size: Int64(item.string("Size") ?? "") ?? 0,
                                            etag: Self.unquote(item.string("ETag") ?? ""),
                                            lastModified: item.string("LastModified").flatMap(S3Dates.parseISO8601)))
            }
            token = root.string("IsTruncated") == "true" ? root.string("NextContinuationToken") : nil
        } while token != nil
        return results
    }

    /// Keys (and sizes) under `prefix`, all pages (ListObjectsV2).
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func listObjects(bucket: String, prefix: String = "") throws -> [(key: String, size: Int64)] {
        try listObjectsDetailed(bucket: bucket, prefix: prefix).map { ($0.key, $0.size) }
    }

    /// The XML root of a successful answer.
    func parse(_ response: HTTPResponse, _ call: Call) throws -> XMLElement {
        guard let root = XMLElement.parse(response.body) else {
            throw S3Error.unexpectedResponse(operation: call.operation, resource: call.resource,
                                             message: "body is not XML (\(response.body.count) bytes)")
        }
        return root
    }

    /// Checks that an ETag is the MD5 we sent (when strict and the ETag looks like an MD5).
    func checkETag(_ etag: String, md5Hex: String, resource: String) throws {
        guard configuration.strictETags, Self.looksLikeMD5(etag) else { return }
        if etag.lowercased() != md5Hex {
            throw S3Error.integrity(resource: resource, message: "ETag \(etag) is not the MD5 \(md5Hex) of the data sent")
        }
    }

    static func looksLikeMD5(_ etag: String) -> Bool {
        etag.utf8.count == 32 && Hex.decode(etag) != nil
    }

    static func unquote(_ etag: String) -> String {
        var text = etag.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("W/") { text.removeFirst(2) }
        return text.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }
}
