import Foundation
import Logging
import SegnoAudio
import SegnoCore
import SegnoS3

/// Sends a recording's files for one upload stage: to S3 (through one shared `S3Client`) or to a
/// folder. Built once per run (credentials resolved then); used by every worker.
public final class Uploader: RecordingUploader {
    public let config: UploadConfig
    package let client: S3Client?
    package let progressStore: (any MultipartProgressStore)?

    /// Resolves credentials, region and endpoint from the spec and the environment
    /// (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL,
    /// AWS_PROFILE with ~/.aws/credentials and config). Throws a message naming what is missing;
    /// never one containing a secret.
    public init(config: UploadConfig, environment: [String: String], progressStore: (any MultipartProgressStore)?, logger: Logger) throws {
        self.config = config
        self.progressStore = progressStore
        guard case .s3 = config.target else { client = nil; return }
        client = try Self.client(for: config.to, endpoint: config.endpoint, region: config.region, addressing: config.addressing,
                                 environment: environment, logger: logger)
    }

    /// An S3 client from the spec's endpoint and region and the environment's credentials: for
    /// uploads and for `s3://` inputs. `what` names the target in the message when credentials are missing.
    static package func client(for what: String, endpoint url: URL?, region: String?, addressing: S3Addressing?,
                       environment: [String: String], logger: Logger) throws -> S3Client {
        let env = try AWSEnvironment.resolve(environment: environment)
        guard let credentials = env.credentials else {
            throw UploadError.configuration("\(what): no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with ~/.aws/credentials")
        }
        let region = region ?? env.region ?? "us-east-1"
        let endpoint: S3Endpoint
        if let url = url ?? env.endpoint {
            endpoint = try S3Endpoint(url: url, region: region, addressing: addressing ?? .path)
        } else {
            endpoint = try S3Endpoint.aws(region: region)
        }
        return S3Client(endpoint: endpoint, credentials: credentials, logger: logger)
    }

    /// Where a file goes: (bucket, key) for S3, an absolute path for a folder.
    package func destination(for file: String, context: RecordingContext) throws -> (bucket: String?, key: String) {
        let name = (file as NSString).lastPathComponent
        switch config.target {
        case .s3(let bucket, let prefix):
            let p = try prefix?.resolveRelative(context) ?? ""
            let comps = p.split(separator: "/").filter { $0 != "." && !$0.isEmpty }
            if comps.contains("..") { throw UploadError.configuration("\(config.to) resolves to \"\(p)\" with '..'") }
            return (bucket, (comps.map(Self.keyPart) + [name]).joined(separator: "/"))
        case .folder(let prefix):
            let p = try prefix.resolveRelative(context)
            let comps = p.split(separator: "/").filter { $0 != "." && !$0.isEmpty }
            if comps.contains("..") { throw UploadError.configuration("\(config.to) resolves to \"\(p)\" with '..'") }
            return (nil, "/" + (comps.map(Self.keyPart) + [name]).joined(separator: "/"))
        }
    }

    /// One folder of a destination as resolved from `to:` (a `{tag:…}` value may hold anything):
    /// control characters become spaces, as in output names (`PathTemplate.pathComponent`).
    static package func keyPart(_ part: Substring) -> String {
        part.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
            ? PathTemplate.pathComponent(String(part), fallback: "_") : String(part)
    }

    /// Uploads `files` (absolute path and SHA-256 of each). Returns the remote URIs in order.
    /// A file already at its destination with the same SHA-256 is not sent again.
    /// Called on a worker thread after the recording's pass.
    /// `recipe` (the upload step's fingerprint) is stored as `x-amz-meta-segno-recipe`: an object
    /// is skipped only when both its SHA-256 and its recipe match, so changed metadata or storage
    /// options do reach the server.
    public func upload(files: [(path: String, digest: Data)], context: RecordingContext, recipe: String,
                       shouldContinue: @escaping @Sendable () -> Bool) throws -> [String] {
        var metadata: [String: String] = [Self.recipeKey: recipe]
        for (k, t) in config.metadata {
            do { metadata[k] = try t.resolveRelative(context) } catch { throw UploadError.configuration("metadata.\(k): \(error.message)") }
        }
        var uris: [String] = []
        var seen: [String: String] = [:]
        for (path, _) in files {
            let key = try destination(for: path, context: context).key
            if let other = seen[key] {
                throw UploadError.configuration("\(AudioError.quoted(path)) and \(AudioError.quoted(other)) would both go to \(key); give the taps different file names or restrict files:")
            }
            seen[key] = path
        }
        for (path, digest) in files {
            if !shouldContinue() { throw Interrupted() }
            let sha = FileHash.hex(digest)
            let dest = try destination(for: path, context: context)
            if let bucket = dest.bucket, let client {
                do {
                    if case .verified(let info) = try client.verify(bucket: bucket, key: dest.key, sha256: sha),
                       info.metadata[Self.recipeKey] == recipe {
                        uris.append("s3://\(bucket)/\(dest.key)")
                        continue
                    }
                } catch let e as S3Error {
                    throw UploadError.failed("\(AudioError.quoted(path)) → s3://\(bucket)/\(dest.key): \(e)", FailureClass.failureClass(of: e))
                }
                var options = UploadOptions(multipartThreshold: config.multipartThreshold, partSize: config.partSize,
                                            storageClass: config.storageClass, overwrite: config.overwrite, sha256: sha)
                options.shouldContinue = shouldContinue
                do {
                    _ = try client.upload(file: URL(fileURLWithPath: path), bucket: bucket, key: dest.key, metadata: metadata,
                                          contentType: config.contentType ?? UploadConfig.contentType(forPath: path),
                                          options: options, progressStore: progressStore)
                } catch let e as S3Error {
                    if case .cancelled = e { throw Interrupted() }
                    throw UploadError.failed("\(AudioError.quoted(path)) → s3://\(bucket)/\(dest.key): \(e)", FailureClass.failureClass(of: e))
                }
                uris.append("s3://\(bucket)/\(dest.key)")
            } else {
                try copy(path, to: dest.key, digest: digest)
                uris.append("file://" + dest.key)
            }
        }
        return uris
    }

    /// The URI each file goes to (`s3://bucket/key`, `file:///path`); sends nothing.
    public func destinations(files: [String], context: RecordingContext) throws -> [String] {
        try files.map { path in
            let d = try destination(for: path, context: context)
            return d.bucket.map { "s3://\($0)/\(d.key)" } ?? "file://" + d.key
        }
    }

    /// `segno state rebuild`: the URIs of `files` when every one is already at its destination with
    /// the same SHA-256 (and, for S3, the same `segno-recipe`), else nil. Sends nothing.
    public func inPlace(files: [(path: String, digest: Data)], context: RecordingContext, recipe: String) throws -> [String]? {
        var uris: [String] = []
        for (path, digest) in files {
            let dest = try destination(for: path, context: context)
            if let bucket = dest.bucket, let client {
                guard case .verified(let info) = try client.verify(bucket: bucket, key: dest.key, sha256: FileHash.hex(digest)),
                      info.metadata[Self.recipeKey] == recipe else { return nil }
                uris.append("s3://\(bucket)/\(dest.key)")
            } else {
                guard access(dest.key, F_OK) == 0, (try? FileHash.sha256(path: dest.key).digest) == digest else { return nil }
                uris.append("file://" + dest.key)
            }
        }
        return uris
    }

    /// User-metadata key holding the upload step's fingerprint.
    static package let recipeKey = "segno-recipe"

    /// Copies into the folder target (temporary name, sync, rename), unless the same bytes are there.
    package func copy(_ source: String, to target: String, digest: Data) throws {
        if FileNameBytes.exists(target), let have = try? FileHash.sha256(path: target).digest, have == digest { return }
        if !config.overwrite && FileNameBytes.exists(target) {
            throw UploadError.failed("\(AudioError.quoted(target)) exists and overwrite is false", .spec)
        }
        do {
            let out = try OutputFile(finalPath: target)
            do {
                try out.copy(from: source)
                guard try FileHash.sha256(path: out.tempPath).digest == digest else {
                    out.discard()
                    throw UploadError.failed("\(AudioError.quoted(target)): copy does not match its source", .transient)
                }
                try out.commit()
            } catch let e as AudioError { out.discard(); throw e }
        } catch let e as AudioError {
            throw UploadError.failed("\(e)", e.failureClass)
        }
    }

    /// Deletes a recorded upload step's files or objects (prune), but `keeping`, when it proves
    /// it sent them: a file inside the target's fixed folder (`PruneProof`: no link on the way,
    /// segno's mark, the recorded hash); an object in the target's bucket under its fixed prefix
    /// whose `segno-recipe` is the step's fingerprint (and, for a one-file step, whose SHA-256 is
    /// the recorded one). Missing is fine.
    public func delete(_ step: StepState, keeping: Set<String>) throws -> [String] {
        switch config.target {
        case .folder(let template):
            var paths: [String] = []
            for uri in step.outputs {
                guard case .file(let path) = StoredOutput(uri) else { throw PruneRefusal(path: uri, reason: "is not a file \(config.to) writes") }
                paths.append(path)
            }
            guard let root = template.fixedFolder else {
                throw PruneRefusal(path: paths.first ?? config.to, reason: "\(config.to) has no fixed folder to prove it inside")
            }
            let kept = Set(keeping.compactMap { if case .file(let p) = StoredOutput($0) { return p } else { return nil } })
            return try PruneProof.delete(paths, keeping: kept, root: root, recordedSize: nil, recordedHash: step.outputHash).map { "file://" + $0 }
        case .s3(let bucket, let prefix):
            // The keys' fixed start: the prefix's folders before its first variable (a partial
            // last name, "rec-{dir}", as a plain prefix).
            let text = prefix?.text ?? ""
            let literal = String(text.prefix { $0 != "{" })
            let comps = literal.split(separator: "/").filter { $0 != "." }
            let partial = text.contains("{") && !literal.hasSuffix("/")
            let fixed = comps.joined(separator: "/") + (comps.isEmpty || partial ? "" : "/")
            var deleted: [String] = []
            for uri in step.outputs where !keeping.contains(uri) {
                guard case .object(let b, let key) = StoredOutput(uri), b == bucket, key.hasPrefix(fixed),
                      !key.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
                    throw PruneRefusal(path: uri, reason: "lies outside \(config.to)")
                }
                guard let client else { throw PruneRefusal(path: uri, reason: "no S3 client") }
                guard let info = try client.headObject(bucket: bucket, key: key) else { deleted.append(uri); continue }
                guard info.metadata[Self.recipeKey] == step.fingerprint else {
                    throw PruneRefusal(path: uri, reason: "carries another \(Self.recipeKey) than the state recorded: segno did not send it for this recording")
                }
                if step.outputs.count == 1, info.sha256?.lowercased() != FileHash.hex(step.outputHash) {
                    throw PruneRefusal(path: uri, reason: "does not hold what the state recorded (another SHA-256)")
                }
                try client.deleteObject(bucket: bucket, key: key)
                deleted.append(uri)
            }
            return deleted
        }
    }

    /// Aborts multipart uploads this store started more than a day ago. Called once per run.
    public func abortStale(store: any StateBackend) {
        guard let client, let stale = try? store.multipartStarted(before: Date().addingTimeInterval(-86400)) else { return }
        for (key, progress) in stale {
            try? client.abortMultipartUpload(bucket: key.bucket, key: key.key, uploadId: progress.uploadId)
            try? store.clear(key)
        }
    }
}

/// Why an upload failed.
public enum UploadError: Error, Sendable, CustomStringConvertible {
    /// The spec or environment does not allow uploading (no credentials, bad target).
    case configuration(String)
    /// Sending a file failed; the class says whether this run or the next tries again.
    case failed(String, FailureClass)

    public var description: String {
        switch self {
        case .configuration(let m): return "upload: \(m)"
        case .failed(let m, _): return "upload: \(m)"
        }
    }
}

extension UploadError: ClassifiedError {
    /// A target that cannot be set up or written (a folder that cannot be created, credentials)
    /// is the environment's; refused keys and collisions are the spec's.
    public var failureClass: FailureClass {
        switch self {
        case .configuration: return .spec
        case .failed(_, let cls): return cls
        }
    }
}

