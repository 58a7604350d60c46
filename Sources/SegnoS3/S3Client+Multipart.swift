import Crypto
import Foundation

/// A part the server has: its number, ETag (no quotes) and size in bytes.
public struct UploadedPart: Sendable, Equatable, Codable {
    public var partNumber: Int
    public var etag: String
    public var size: Int64

    public init(partNumber: Int, etag: String, size: Int64) {
        self.partNumber = partNumber
        self.etag = etag
        self.size = size
    }
}

/// An unfinished multipart upload in a bucket.
public struct MultipartUploadInfo: Sendable, Equatable {
    public var key: String
    public var uploadId: String
    public var initiated: Date?
}

extension S3Client {
    /// Starts a multipart upload; metadata, content type and storage class are given here.
    /// - Returns: the upload id.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func createMultipartUpload(bucket: String, key: String, options: PutObjectOptions = PutObjectOptions())
        throws -> String
    {
        try S3Metadata.validate(options.metadata)
        var call = Call(operation: "CreateMultipartUpload", method: "POST", bucket: bucket, key: key)
        call.query = [("uploads", nil)]
        call.headers = options.headers()
        let root = try parse(perform(call), call)
        guard let id = root.string("UploadId"), !id.isEmpty else {
            throw S3Error.unexpectedResponse(operation: call.operation, resource: call.resource, message: "no UploadId")
        }
        return id
    }

    /// Uploads one part (1…10000) from memory with `Content-MD5`, and checks the ETag is its MD5.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func uploadPart(bucket: String, key: String, uploadId: String, partNumber: Int, data: Data) throws -> UploadedPart {
        guard (1...10_000).contains(partNumber) else {
            throw S3Error.invalidConfiguration("part number \(partNumber) is outside 1…10000")
        }
        let md5 = Insecure.MD5.hash(data: data)
        var call = Call(operation: "UploadPart", method: "PUT", bucket: bucket, key: key)
        call.query = [("partNumber", String(partNumber)), ("uploadId", uploadId)]
        call.headers["Content-MD5"] = Data(md5).base64EncodedString()
        call.body = .data(data)
        call.payloadHash = configuration.signPayload ? PayloadHash.of(data) : PayloadHash.unsigned
        let response = try perform(call)
        let etag = Self.unquote(response.header("etag") ?? "")
        try checkETag(etag, md5Hex: Hex.encode(md5), resource: call.resource + " part \(partNumber)")
        count { $0.partsUploaded += 1 }
        return UploadedPart(partNumber: partNumber, etag: etag.isEmpty ? Hex.encode(md5) : etag, size: Int64(data.count))
    }

    /// The parts the server holds for an upload, all pages, in part order.
    /// - Throws: `S3Error.server` with code `NoSuchUpload` when the upload is gone.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func listParts(bucket: String, key: String, uploadId: String) throws -> [UploadedPart] {
        var parts: [UploadedPart] = []
        var marker: String?
        repeat {
            var call = Call(operation: "ListParts", method: "GET", bucket: bucket, key: key)
            call.query = [("uploadId", uploadId)]
            if let marker { call.query.append(("part-number-marker", marker)) }
            let root = try parse(perform(call), call)
            for part in root.all("Part") {
                guard let number = part.string("PartNumber").flatMap({ Int($0) }) else { continue }
                parts.append(UploadedPart(partNumber: number, etag: Self.unquote(part.string("ETag") ?? ""),
                                          size: Int64(part.string("Size") ?? "") ?? 0))
            }
            let next = root.string("NextPartNumberMarker")
            marker = root.string("IsTruncated") == "true" && next != marker ? next : nil
        } while marker != nil
        return parts.sorted { $0.partNumber < $1.partNumber }
    }

    /// Completes an upload from its parts and checks the final ETag: with strict ETags and MD5 part
    /// ETags it must be the MD5 of the concatenated part MD5s followed by `-N`.
    /// - Returns: the object's ETag (no quotes).
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func completeMultipartUpload(bucket: String, key: String, uploadId: String, parts: [UploadedPart],
                                        ifNoneMatch: Bool = false) throws -> String
    {
        let sorted = parts.sorted { $0.partNumber < $1.partNumber }
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in sorted {
            xml += "<Part><PartNumber>\(part.partNumber)</PartNumber><ETag>\"\(XMLElement.escape(part.etag))\"</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let body = Data(xml.utf8)
        var call = Call(operation: "CompleteMultipartUpload", method: "POST", bucket: bucket, key: key)
        call.query = [("uploadId", uploadId)]
        call.headers["Content-Type"] = "application/xml"
        if ifNoneMatch { call.headers["If-None-Match"] = "*" }
        call.body = .data(body)
        call.payloadHash = PayloadHash.of(body)
        let root = try parse(perform(call), call)
        var etag = Self.unquote(root.string("ETag") ?? "")
        if etag.isEmpty {
            // Ceph RGW 16 answers `<ETag></ETag>`: ask for the object's ETag instead.
            etag = try headObject(bucket: bucket, key: key)?.etag ?? ""
        }
        if let expected = Self.multipartETag(sorted.map(\.etag)), configuration.strictETags,
           etag.contains("-"), etag.lowercased() != expected {
            throw S3Error.integrity(resource: call.resource,
                                    message: "final ETag \(etag) is not \(expected) (MD5 of the \(sorted.count) part MD5s)")
        }
        return etag
    }

    /// The `-N` ETag S3 gives a multipart object: MD5 of the parts' binary MD5s, then `-count`.
    /// Nil when a part ETag is not an MD5.
    public static func multipartETag(_ partETags: [String]) -> String? {
        var md5 = Insecure.MD5()
        for etag in partETags {
            guard looksLikeMD5(etag), let bytes = Hex.decode(etag) else { return nil }
            md5.update(data: bytes)
        }
        return Hex.encode(md5.finalize()) + "-\(partETags.count)"
    }

    /// Aborts an upload, freeing its parts. A missing upload (404) counts as aborted.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func abortMultipartUpload(bucket: String, key: String, uploadId: String) throws {
        var call = Call(operation: "AbortMultipartUpload", method: "DELETE", bucket: bucket, key: key)
        call.query = [("uploadId", uploadId)]
        call.accept = [404]
        _ = try perform(call)
    }

    /// Unfinished uploads under `prefix`, all pages.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func listMultipartUploads(bucket: String, prefix: String = "") throws -> [MultipartUploadInfo] {
        var uploads: [MultipartUploadInfo] = []
        var keyMarker: String?
        var idMarker: String?
        while true {
            var call = Call(operation: "ListMultipartUploads", method: "GET", bucket: bucket, key: nil)
            call.query = [("uploads", nil)]
            if !prefix.isEmpty { call.query.append(("prefix", prefix)) }
            if let keyMarker { call.query.append(("key-marker", keyMarker)) }
            if let idMarker { call.query.append(("upload-id-marker", idMarker)) }
            let root = try parse(perform(call), call)
            for upload in root.all("Upload") {
                guard let key = upload.string("Key"), let id = upload.string("UploadId") else { continue }
                uploads.append(MultipartUploadInfo(key: key, uploadId: id,
                                                   initiated: upload.string("Initiated").flatMap(S3Dates.parseISO8601)))
            }
            guard root.string("IsTruncated") == "true",
                  let nextKey = root.string("NextKeyMarker"), !nextKey.isEmpty else { break }
            let nextId = root.string("NextUploadIdMarker")
            if nextKey == keyMarker && nextId == idMarker { break }
            keyMarker = nextKey
            idMarker = nextId
        }
        return uploads
    }

    /// Aborts the unfinished uploads under `prefix` started before `date` (e.g. a day ago): the
    /// leftovers of runs that were killed and never resumed. Called once per run.
    /// - Returns: the uploads that were aborted.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    public func abortMultipartUploads(bucket: String, prefix: String, initiatedBefore date: Date) throws
        -> [MultipartUploadInfo]
    {
        let stale = try listMultipartUploads(bucket: bucket, prefix: prefix)
            .filter { ($0.initiated ?? .distantFuture) < date }
        for upload in stale {
            try abortMultipartUpload(bucket: bucket, key: upload.key, uploadId: upload.uploadId)
            logger.info("S3 stale multipart upload aborted", metadata: [
                "s3.resource": "s3://\(bucket)/\(upload.key)", "s3.uploadId": "\(upload.uploadId)",
            ])
        }
        return stale
    }
}
