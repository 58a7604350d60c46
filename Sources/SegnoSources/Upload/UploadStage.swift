import Foundation
import Logging
import SegnoAudio
import SegnoCore
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
public struct UploadConfig: UploadStageConfig {
    /// A `file://` target's folder template (the loader's overlap check), nil for S3.
    public var localFolder: PathTemplate? {
        if case .folder(let t) = target { return t }
        return nil
    }
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
    public static let extraVariables: Set<String> = ["levels", "title", "recorded", "chapters"]

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
    static package func parseTarget(_ text: String) throws(TemplateError) -> Target {
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

extension UploadConfig {
    /// `upload:` in a spec: every option check, before any audio flows.
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(declaredBy: declaration)
        let to = try o["to"]!.string()
        let target: UploadConfig.Target
        do { target = try UploadConfig.parseTarget(to) } catch { throw o["to"]!.error(error.message) }
        var endpoint: URL? = nil
        if let e = o["endpoint"] {
            let text = try e.string()
            guard let u = URL(string: text), let scheme = u.scheme, ["http", "https"].contains(scheme), u.host != nil else {
                throw e.error("\"\(text)\" is not an http(s) URL")
            }
            endpoint = u
        }
        var metadata: [(String, PathTemplate)] = []
        var literalBytes = 0
        if let m = o["metadata"] {
            for (key, value) in try m.mapping() {
                guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                    throw value.error("metadata keys are ASCII letters, digits, '-' and '_'")
                }
                if key.lowercased() == "segno-sha256" { throw value.error("segno-sha256 is set by segno itself") }
                let t = try StageRegistry.parseTemplate(value, extraVariables: UploadConfig.extraVariables)
                literalBytes += key.utf8.count + t.text.utf8.count
                metadata.append((key.lowercased(), t))
            }
            if literalBytes > 2048 - 80 { throw m.error("user metadata is \(literalBytes) bytes before templates expand; S3 allows 2 KB") }
        }
        var tapKinds: [String]? = nil
        if let f = o["files"] {
            tapKinds = []
            for item in try f.list(allowSingle: true) {
                let k = try item.string()
                guard c.tapKinds?.contains(k) ?? true else { throw item.error("\"\(k)\" is not a tap kind (encode, waveform, metadata)") }
                guard c.taps.contains(k) else { throw item.error("no \(k) tap comes before this upload") }
                tapKinds?.append(k)
            }
        }
        var addressing: S3Addressing? = nil
        if let a = o["addressing"] { addressing = try a.choice(S3Addressing.self) }
        var config = UploadConfig(to: to, target: target, endpoint: endpoint, region: try o["region"]?.string(), addressing: addressing,
                                  metadata: metadata, contentType: try o["content_type"]?.string(), storageClass: try o["storage_class"]?.string(),
                                  multipartThreshold: Int64(try o["multipart_threshold"]?.int(in: multipartThresholdRange, unit: "bytes") ?? Int(UploadOptions.defaultMultipartThreshold)),
                                  partSize: Int64(try o["part_size"]?.int(in: partSizeRange, unit: "bytes") ?? Int(UploadOptions.defaultPartSize)),
                                  files: tapKinds, overwrite: try o["overwrite"]?.bool() ?? true, prune: try o["prune"]?.bool() ?? false)
        if let l = o["prune_limit"] { config.pruneLimit = try parsePruneLimit(l) }
        return config
    }
    /// `prune_limit: 25` (recordings) or `prune_limit: 5%` (of the recordings in the state store).
    static package func parsePruneLimit(_ v: SpecValue) throws(SpecError) -> PruneLimit {
        let text = try v.string().trimmingCharacters(in: .whitespaces)
        if text.hasSuffix("%"), let p = Double(text.dropLast().trimmingCharacters(in: .whitespaces)), p > 0, p <= 100 {
            return .percent(p)
        }
        if let n = Int(text), n >= 0 { return .count(n) }
        throw v.error("prune_limit takes a count of recordings (25) or a share of them (10%), found \"\(text)\"")
    }
}

extension UploadConfig {
    public func makeUploader(environment: [String: String], progressStore: (any MultipartProgressStore)?,
                             logger: Logger) throws -> any RecordingUploader {
        try Uploader(config: self, environment: environment, progressStore: progressStore, logger: logger)
    }
}

extension UploadConfig {
    /// Files at least this big go up in parts, in bytes.
    public static let multipartThresholdRange = 1...(5 << 30)
    /// S3's limits on a part, in bytes (5 MiB … 5 GiB).
    public static let partSizeRange = Int(UploadOptions.minimumPartSize)...(5 << 30)

    public static let declaration = StageDeclaration(
        key: "upload", kind: .upload, summary: "Copies the files the taps wrote to S3 or a folder, after each recording's pass; never twice.",
        options: [
            .init("to", .text, default: nil, help: "s3://BUCKET/PREFIX/ or file:///FOLDER/ (templates allowed); each file goes to to + its name."),
            .init("endpoint", .text, default: "AWS_ENDPOINT_URL, else AWS", help: "An http(s) URL of an S3-compatible service."),
            .init("region", .text, default: "AWS_REGION or ~/.aws/config, else us-east-1", help: "The S3 region."),
            .init("addressing", .choice, default: "path with an endpoint", .oneOf(S3Addressing.self), help: "Bucket in the path or in the host name."),
            .init("metadata", .mapping, default: "none", help: "x-amz-meta-NAME: text template ({levels}, {title}, {recorded}, {chapters}: the chapters tap's list as JSON); 2 KB in all."),
            .init("content_type", .text, default: "from the file's extension", help: "Content-Type of every object."),
            .init("storage_class", .text, default: "the bucket's", help: "S3 storage class (STANDARD_IA, GLACIER, …)."),
            .init("multipart_threshold", .wholeNumber, unit: "bytes", default: String(UploadOptions.defaultMultipartThreshold),
                  .within(multipartThresholdRange), help: "Files at least this big go up in parts that survive a killed run."),
            .init("part_size", .wholeNumber, unit: "bytes", default: String(UploadOptions.defaultPartSize), .within(partSizeRange), help: "Size of each part."),
            .init("files", .list, default: "every tap's", help: "Which taps' files go, by tap kind (a tap stage's key: encode, waveform, metadata…)."),
            .init("overwrite", .boolean, default: "true", help: "Replace an object that exists with other content."),
            .init("prune", .boolean, default: "false", help: "Delete uploaded copies of recordings that are gone from the input."),
            .init("prune_limit", .text, default: "\(PruneLimit.standard)", help: "Most recordings one run prunes: a count (25) or a share (10%)."),
        ],
        example: "upload: { to: \"s3://archive/memos/{dir}/\", endpoint: \"http://127.0.0.1:7480\", files: [encode] }",
        capabilities: [.uploads])
}
