import Foundation
import Logging
import SegnoAudio
import SegnoCore
import SegnoDSP
import SegnoS3

/// Recordings as objects under an `s3://bucket/prefix/` (`input.root`): listed with ListObjectsV2
/// (every page), named by their key below the prefix, identified by ETag, size and LastModified.
/// A pass reads the object into a scratch file in ranged GETs of 8 MiB (memory stays flat in the
/// object's size; libsndfile and the `ffmpeg` program both read files), and the scratch file is
/// deleted when the decoder closes. No shared file system is needed.
public final class ObjectStoreSource: RecordingSource, @unchecked Sendable {
    public let input: JobSpec.Input
    package let client: S3Client
    package let bucket: String
    package let prefix: String
    /// This process's scratch folder.
    package let scratch: String
    static package let chunk: Int64 = 8 << 20

    /// The helper pool and `PATH` the downloaded copies are decoded with.
    package let tools: AudioTools

    public init(input: JobSpec.Input, environment: [String: String], tools: AudioTools, logger: Logger) throws {
        self.input = input
        self.tools = tools
        let rest = input.root.dropFirst("s3://".count)
        bucket = String(rest.prefix { $0 != "/" })
        prefix = String(rest.dropFirst(bucket.count + 1))
        client = try Uploader.client(for: input.root, endpoint: input.endpoint, region: input.region, addressing: nil,
                                     environment: environment, logger: logger)
        scratch = NSTemporaryDirectory() + "/segno-scratch-\(OutputFile.owner)"
    }

    public func scan() throws(RunError) -> ScanResult {
        let objects: [S3Client.ListedObject]
        do { objects = try client.listObjectsDetailed(bucket: bucket, prefix: prefix) } catch {
            throw .input("input.root \(input.root): cannot list it: \(error)")
        }
        var result = ScanResult()
        let cutoff = Date().addingTimeInterval(-input.settle)
        for o in objects where !o.key.hasSuffix("/") {
            let rel = String(o.key.dropFirst(prefix.count))
            guard input.include.contains(where: { $0.matches(rel) }), !input.exclude.contains(where: { $0.matches(rel) }) else { continue }
            if let t = o.lastModified, t > cutoff { result.settlingPaths.insert(rel); continue }
            let ns = Int64(((o.lastModified?.timeIntervalSince1970 ?? 0) * 1e9).rounded())
            result.files.append(ScannedFile(relativePath: rel, absolutePath: "s3://\(bucket)/\(o.key)",
                                            identity: FileIdentity(size: o.size, mtimeNs: ns, inode: Self.etagNumber(o.etag))))
        }
        result.files.sort { $0.relativePath < $1.relativePath }
        return result
    }

    /// Removes the scratch folders of processes that are gone (a worker killed mid-download
    /// leaves its copy behind): on this host those whose pid no longer runs, others' after an
    /// hour untouched, as `Temporaries` does. Called once before a run's work starts.
    public func removeLeftovers() {
        let base = (scratch as NSString).deletingLastPathComponent
        let host = String(OutputFile.owner.prefix { $0 != "-" })
        for name in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] where name.hasPrefix("segno-scratch-") {
            let path = base + "/" + name
            guard path != scratch, !Temporaries.isLive(name.dropFirst("segno-scratch-".count), host: host, path: path) else { continue }
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    /// The ETag folded into the identity's third number (its first 63 bits).
    static package func etagNumber(_ etag: String) -> Int64 {
        var hash: UInt64 = 0xcbf29ce484222325
        for b in etag.utf8 { hash = (hash ^ UInt64(b)) &* 0x100000001b3 }
        return Int64(bitPattern: hash & 0x7FFF_FFFF_FFFF_FFFF)
    }

    /// Downloads into a scratch file (8 MiB ranges) and opens it; the file goes with the decoder.
    public func open(_ file: ScannedFile) throws -> any AudioDecoder {
        let key = String(file.absolutePath.dropFirst("s3://\(bucket)/".count))
        try OutputFile.makeFolders(scratch, for: scratch + "/x")
        let path = scratch + "/" + String(UInt64.random(in: 0...UInt64.max), radix: 36) + "." + (file.relativePath as NSString).pathExtension
        let fd = Foundation.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 { throw AudioError.system(path, "cannot create scratch file", errno: errno) }
        do {
            defer { close(fd) }
            var offset: Int64 = 0
            while offset < file.identity.size {
                let end = min(file.identity.size, offset + Self.chunk) - 1
                let data: Data
                do { data = try client.getObject(bucket: bucket, key: key, range: offset...end) } catch {
                    throw UploadError.failed("\(AudioError.quoted(file.absolutePath)): cannot read it: \(error)",
                                             (error as? S3Error).map(FailureClass.failureClass(of:)) ?? .environment)
                }
                let failure = data.withUnsafeBytes { OutputFile.writeAll(fd, $0.bindMemory(to: UInt8.self)) }
                if failure != 0 { throw AudioError.system(path, "write failed", errno: failure) }
                offset += Int64(data.count)
                if data.isEmpty { break }
            }
            return ScratchDecoder(try DecoderFactory.open(path: path, tools: tools, damaged: input.damaged, reference: input.reference), path: path)
        } catch {
            unlink(path)
            throw error
        }
    }

    public func contentHash(_ file: ScannedFile) throws -> Data {
        let decoder = try open(file) as! ScratchDecoder
        defer { decoder.close() }
        return try FileHash.sha256(path: decoder.path).digest
    }

    public func currentIdentity(_ file: ScannedFile) -> FileIdentity? {
        let key = String(file.absolutePath.dropFirst("s3://\(bucket)/".count))
        guard let info = try? client.headObject(bucket: bucket, key: key) else { return nil }
        let ns = Int64(((info.lastModified?.timeIntervalSince1970 ?? 0) * 1e9).rounded())
        return FileIdentity(size: info.size, mtimeNs: ns, inode: Self.etagNumber(info.etag))
    }
}

/// A decoder over a scratch copy that deletes the copy when closed.
final package class ScratchDecoder: AudioDecoder {
    package let inner: any AudioDecoder
    package let path: String
    package init(_ inner: any AudioDecoder, path: String) {
        self.inner = inner
        self.path = path
    }
    package var info: SourceInfo { inner.info }
    package var notes: [String] { inner.notes }
    package var salvage: SalvageReport? { inner.salvage }
    package func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int { try inner.read(into: &block, maxFrames: maxFrames) }
    package func close() {
        inner.close()
        unlink(path)
    }
    deinit { unlink(path) }
}
