import Foundation
import SegnoS3

/// `upload: { to: "s3://bucket/prefix/{dir}/", endpoint, region, addressing, metadata, … }` runs
/// after a recording's pass, on the files its taps wrote (all, or `files: [encode, waveform]` by
/// tap kind). Each file goes to `to` + its file name. Targets: `s3://BUCKET/PREFIX/` (any
/// S3-compatible service; SigV4) or `file:///FOLDER/` (a local or mounted folder: temporary
/// name, sync, rename, hash check).
///
/// A recorded upload is never repeated: the upload step's fingerprint covers the options and the
/// SHA-256 of every file, so it reruns only when a file or an option changes. Before sending, a
/// HEAD compares `x-amz-meta-segno-sha256`, so a run killed between the upload and the state
/// write does not upload again. Large files go up in parts that survive a killed run.
public struct UploadConfig: StageConfig {
    /// Where files go.
    public enum Target: Sendable, Equatable {
        /// `prefix` nil: objects go to the bucket's top level.
        case s3(bucket: String, prefix: PathTemplate?)
        case folder(PathTemplate)
    }
    public let to: String
    public let target: Target
    /// Custom endpoint (MinIO, R2, GCS, Ceph); nil = AWS (or AWS_ENDPOINT_URL).
    public let endpoint: URL?
    public let region: String?
    public let addressing: S3Addressing?
    /// Templated user metadata, sent as `x-amz-meta-NAME`.
    public let metadata: [(String, PathTemplate)]
    public let contentType: String?
    public let storageClass: String?
    public let multipartThreshold: Int64
    public let partSize: Int64
    /// Tap kinds whose files are uploaded; nil = all.
    public let files: [String]?
    /// False: never replace an existing object (If-None-Match: *).
    public let overwrite: Bool
    /// Delete outputs and uploaded objects of recordings that disappeared from the input.
    public let prune: Bool
    /// At most this many recordings pruned in one run without `--force=prune` (not part of the recipe).
    public var pruneLimit: PruneLimit = .standard

    public var name: String { "upload" }
    public var kind: StageKind { .upload }
    public var version: Int { 1 }
    public var options: [(String, String)] {
        var o: [(String, String)] = [("to", to)]
        if let endpoint { o.append(("endpoint", endpoint.absoluteString)) }
        if let region { o.append(("region", region)) }
        if let addressing { o.append(("addressing", addressing.rawValue)) }
        for (k, v) in metadata { o.append(("metadata." + k, v.text)) }
        if let contentType { o.append(("content_type", contentType)) }
        if let storageClass { o.append(("storage_class", storageClass)) }
        o.append(("multipart_threshold", String(multipartThreshold)))
        o.append(("part_size", String(partSize)))
        if let files { o.append(("files", files.joined(separator: ","))) }
        o.append(("overwrite", String(overwrite)))
        if prune { o.append(("prune", "true")) }
        return o
    }

    public init(to: String, target: Target, endpoint: URL?, region: String?, addressing: S3Addressing?,
                metadata: [(String, PathTemplate)], contentType: String?, storageClass: String?,
                multipartThreshold: Int64, partSize: Int64, files: [String]?, overwrite: Bool, prune: Bool) {
        self.to = to
        self.target = target
        self.endpoint = endpoint
        self.region = region
        self.addressing = addressing
        self.metadata = metadata
        self.contentType = contentType
        self.storageClass = storageClass
        self.multipartThreshold = multipartThreshold
        self.partSize = partSize
        self.files = files
        self.overwrite = overwrite
        self.prune = prune
    }

    /// Template variables uploads may use beyond the standard ones: values the taps report.
    public static let extraVariables: Set<String> = ["levels", "title", "recorded"]

    /// Content type from a file's extension (FLAC audio/flac, CAF audio/x-caf, …).
    public static func contentType(forPath path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "flac": return "audio/flac"
        case "caf": return "audio/x-caf"
        case "wav", "wave", "rf64", "w64": return "audio/wav"
        case "aif", "aiff", "aifc": return "audio/aiff"
        case "mp3": return "audio/mpeg"
        case "ogg", "oga": return "audio/ogg"
        case "opus": return "audio/ogg; codecs=opus"
        case "m4a", "mp4": return "audio/mp4"
        case "json": return "application/json"
        case "dat": return "application/octet-stream"
        case "png": return "image/png"
        case "svg": return "image/svg+xml"
        default: return "application/octet-stream"
        }
    }

    /// Parses `to`: `s3://bucket/prefix/{dir}/` or `file:///folder/{dir}/`.
    static func parseTarget(_ text: String) throws(TemplateError) -> Target {
        if text.hasPrefix("s3://") {
            let rest = text.dropFirst(5)
            let bucket = String(rest.prefix { $0 != "/" })
            guard !bucket.isEmpty, !bucket.contains("{") else { throw TemplateError("\"\(text)\" names no bucket (s3://BUCKET/prefix/)") }
            guard bucket.count >= 3, bucket.count <= 63, bucket.allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "-" || $0 == "." }) else {
                throw TemplateError("\"\(bucket)\" is not a valid bucket name (3–63 lower-case letters, digits, '-' and '.')")
            }
            var prefix = String(rest.dropFirst(bucket.count))
            while prefix.hasPrefix("/") { prefix.removeFirst() }
            return .s3(bucket: bucket, prefix: prefix.isEmpty ? nil : try PathTemplate(prefix, extraVariables: extraVariables))
        }
        if text.hasPrefix("file://") {
            let path = String(text.dropFirst(7))
            guard path.hasPrefix("/") else { throw TemplateError("\"\(text)\" must be an absolute file:/// URL") }
            // PathTemplate refuses absolute paths; the folder is anchored at / explicitly.
            return .folder(try PathTemplate(String(path.dropFirst()), extraVariables: extraVariables))
        }
        throw TemplateError("\"\(text)\" must start with s3:// or file:///")
    }
}
