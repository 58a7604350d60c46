import Foundation
@testable import SegnoS3
import Testing

/// `S3Client.upload` / `verify` against the real gateway: single PUT vs multipart, metadata,
/// resume after an interruption, integrity, idempotence helpers.
@Suite(.enabled(if: RGW.isConfigured, "needs S3_TEST_ENDPOINT (Tests/support/rgw.sh start)"))
struct S3ClientUploadTests {
    static let mib = 1 << 20

    /// Small thresholds so that a few MiB exercise multipart (5 MiB is S3's smallest part).
    static func options(concurrency: Int = 2) -> UploadOptions {
        UploadOptions(multipartThreshold: Int64(5 * mib), partSize: Int64(5 * mib), partConcurrency: concurrency)
    }

    @Test func smallFileGoesUpInOnePutWithItsHash() throws {
        let client = RGW.client()
        let file = try TempFile(size: 123_456, seed: 3)
        defer { file.remove() }
        let key = RGW.uniqueKey("small.flac")
        let result = try client.upload(file: file.url, bucket: RGW.bucket, key: key,
                                       metadata: ["title": "small"], contentType: "audio/flac")
        #expect(!result.multipart)
        #expect(result.sha256 == (try S3Client.sha256(ofFile: file.url)))
        let info = try #require(try client.headObject(bucket: RGW.bucket, key: key))
        #expect(info.sha256 == result.sha256)
        #expect(info.metadata["title"] == "small")
        #expect(info.contentType == "audio/flac")
        guard case .verified = try client.verify(bucket: RGW.bucket, key: key, sha256: result.sha256, size: 123_456) else {
            Issue.record("verify failed"); return
        }
    }

    /// Between the part size and the threshold the single PUT streams from the file.
    @Test func singlePutAbovePartSizeStreamsFromTheFile() throws {
        let client = RGW.client()
        let size = 6 * Self.mib + 1
        let file = try TempFile(size: size, seed: 4)
        defer { file.remove() }
        let key = RGW.uniqueKey("six.wav")
        let result = try client.upload(file: file.url, bucket: RGW.bucket, key: key, contentType: "audio/wav",
                                       options: UploadOptions(multipartThreshold: Int64(16 * Self.mib), partSize: Int64(5 * Self.mib)))
        #expect(!result.multipart)
        #expect(result.etag == FileDigest.of(data: TempFile.bytes(size: size, seed: 4)).md5Hex)
        #expect(try client.getObject(bucket: RGW.bucket, key: key) == TempFile.bytes(size: size, seed: 4))
    }

    @Test func multipartWithMetadataHasTheComputedDashNETag() throws {
        let client = RGW.client()
        let size = 12 * Self.mib + 777
        let file = try TempFile(size: size, seed: 11)
        defer { file.remove() }
        let key = RGW.uniqueKey("long recording.caf")
        let store = InMemoryMultipartProgressStore()
        let result = try client.upload(file: file.url, bucket: RGW.bucket, key: key,
                                       metadata: ["title": "긴 녹음", "duration": "5400.0"], contentType: "audio/x-caf",
                                       options: Self.options(), progressStore: store)
        #expect(result.multipart)
        #expect(result.partsUploaded == 3)
        #expect(result.partsReused == 0)
        #expect(store.all.isEmpty)
        let bytes = TempFile.bytes(size: size, seed: 11)
        let partMD5s = stride(from: 0, to: size, by: 5 * Self.mib).map {
            FileDigest.of(data: bytes[$0..<min(size, $0 + 5 * Self.mib)]).md5Hex
        }
        #expect(result.etag == S3Client.multipartETag(partMD5s))
        #expect(result.etag.hasSuffix("-3"))
        let info = try #require(try client.headObject(bucket: RGW.bucket, key: key))
        #expect(info.size == Int64(size))
        #expect(info.metadata["title"] == "긴 녹음")
        #expect(info.metadata["duration"] == "5400.0")
        #expect(info.contentType == "audio/x-caf")
        #expect(info.sha256 == FileDigest.of(data: bytes).sha256)
        #expect(try client.getObject(bucket: RGW.bucket, key: key) == bytes)
    }

    @Test func interruptedMultipartResumesWithoutSendingAnyPartTwice() throws {
        let size = 17 * Self.mib  // 4 parts of 5 MiB (the last 2 MiB)
        let file = try TempFile(size: size, seed: 21)
        defer { file.remove() }
        let key = RGW.uniqueKey("resume.flac")
        let store = InMemoryMultipartProgressStore()
        let sent = Locked([Int]())

        // First run: stops after one part, as a killed or --max-time run would.
        do {
            let first = RGW.client()
            var options = Self.options(concurrency: 1)
            options.shouldContinue = { sent.value.count < 1 }
            options.partUploaded = { part in sent.withLock { $0.append(part.partNumber) } }
            let error = #expect(throws: S3Error.self) {
                try first.upload(file: file.url, bucket: RGW.bucket, key: key, metadata: ["title": "resume"],
                                 options: options, progressStore: store)
            }
            #expect(error == .cancelled(resource: "s3://\(RGW.bucket)/\(key)"))
        }
        let recorded = try #require(store.all[MultipartUploadKey(bucket: RGW.bucket, key: key)])
        #expect(recorded.parts.count == 1)
        #expect(try RGW.client().headObject(bucket: RGW.bucket, key: key) == nil)

        // Second run, a new client: resumes the recorded upload.
        let second = RGW.client()
        var options = Self.options(concurrency: 2)
        options.partUploaded = { part in sent.withLock { $0.append(part.partNumber) } }
        let result = try second.upload(file: file.url, bucket: RGW.bucket, key: key, metadata: ["title": "resume"],
                                       options: options, progressStore: store)
        #expect(result.resumed)
        #expect(result.partsReused == 1)
        #expect(result.partsUploaded == 3)
        #expect(second.statistics.partsUploaded == 3)
        #expect(sent.value.sorted() == [1, 2, 3, 4])  // every part once, none twice
        #expect(store.all.isEmpty)
        #expect(try second.getObject(bucket: RGW.bucket, key: key) == TempFile.bytes(size: size, seed: 21))
        #expect(try second.listMultipartUploads(bucket: RGW.bucket, prefix: key).isEmpty)
    }

    /// The process dies after the server took a part but before the record was written: the part
    /// is found by ListParts, matched by the MD5 of the local bytes, and not sent again.
    @Test func unrecordedPartOnTheServerIsReusedByItsMD5() throws {
        let size = 11 * Self.mib
        let file = try TempFile(size: size, seed: 5)
        defer { file.remove() }
        let key = RGW.uniqueKey("unrecorded.wav")
        let store = InMemoryMultipartProgressStore()
        let failing = FailingAfterSaves(store, allowed: 1)  // the create record is kept, part records fail
        var options = Self.options(concurrency: 1)
        #expect(throws: FailingAfterSaves.Failure.self) {
            try RGW.client().upload(file: file.url, bucket: RGW.bucket, key: key, options: options, progressStore: failing)
        }
        #expect(store.all.first?.value.parts.isEmpty == true)
        let sent = Locked([Int]())
        options.partUploaded = { part in sent.withLock { $0.append(part.partNumber) } }
        let result = try RGW.client().upload(file: file.url, bucket: RGW.bucket, key: key, options: options, progressStore: store)
        #expect(result.partsReused == 1)
        #expect(sent.value.sorted() == [2, 3])
        #expect(try RGW.client().getObject(bucket: RGW.bucket, key: key) == TempFile.bytes(size: size, seed: 5))
    }

    @Test func changedFileAbortsTheOldUploadAndStartsAgain() throws {
        let key = RGW.uniqueKey("changed.flac")
        let store = InMemoryMultipartProgressStore()
        let client = RGW.client()
        let first = try TempFile(size: 11 * Self.mib, seed: 1)
        defer { first.remove() }
        var stopping = Self.options(concurrency: 1)
        stopping.shouldContinue = { (store.all.first?.value.parts.count ?? 0) < 1 }
        _ = try? client.upload(file: first.url, bucket: RGW.bucket, key: key, options: stopping, progressStore: store)
        let oldId = try #require(store.all.first?.value.uploadId)

        let second = try TempFile(size: 11 * Self.mib, seed: 2)
        defer { second.remove() }
        let result = try client.upload(file: second.url, bucket: RGW.bucket, key: key, options: Self.options(), progressStore: store)
        #expect(!result.resumed)
        #expect(result.partsUploaded == 3)
        #expect(try client.listMultipartUploads(bucket: RGW.bucket, prefix: key).map(\.uploadId).contains(oldId) == false)
        #expect(try client.verify(bucket: RGW.bucket, key: key, sha256: S3Client.sha256(ofFile: first.url)) == .mismatch(remoteSHA256: result.sha256))
    }

    /// A process killed between CreateMultipartUpload and recording its id leaves an upload no
    /// store knows: the next upload of that key (its only writer now) aborts it.
    @Test func anUnrecordedUploadOfTheSameKeyIsAbortedBeforeANewOne() throws {
        let key = RGW.uniqueKey("orphan.flac")
        let client = RGW.client()
        let orphan = try client.createMultipartUpload(bucket: RGW.bucket, key: key)
        let neighbour = try client.createMultipartUpload(bucket: RGW.bucket, key: key + ".other")
        defer { try? client.abortMultipartUpload(bucket: RGW.bucket, key: key + ".other", uploadId: neighbour) }
        let file = try TempFile(size: 6 * Self.mib, seed: 6)
        defer { file.remove() }
        let result = try client.upload(file: file.url, bucket: RGW.bucket, key: key, options: Self.options(),
                                       progressStore: InMemoryMultipartProgressStore())
        #expect(result.multipart && !result.resumed)
        let open = try client.listMultipartUploads(bucket: RGW.bucket, prefix: key)
        #expect(!open.map(\.uploadId).contains(orphan), "the orphan was aborted")
        #expect(open.map(\.uploadId) == [neighbour], "another key's upload is left alone")
    }

    @Test func verifyReportsMissingAndMismatch() throws {
        let client = RGW.client()
        let key = RGW.uniqueKey("verify.txt")
        #expect(try client.verify(bucket: RGW.bucket, key: key, sha256: String(repeating: "0", count: 64)) == .missing)
        _ = try client.putObject(bucket: RGW.bucket, key: key, data: Data("not via upload".utf8))
        #expect(try client.verify(bucket: RGW.bucket, key: key, sha256: String(repeating: "0", count: 64)) == .mismatch(remoteSHA256: nil))
    }

    @Test func overwriteOffRefusesAnExistingObjectForBothPaths() throws {
        let client = RGW.client()
        let small = try TempFile(size: 1000)
        let large = try TempFile(size: 6 * Self.mib)
        defer { small.remove(); large.remove() }
        let key = RGW.uniqueKey("kept")
        _ = try client.upload(file: small.url, bucket: RGW.bucket, key: key)
        var options = Self.options()
        options.overwrite = false
        for file in [small, large] {
            let error = #expect(throws: S3Error.self) {
                try client.upload(file: file.url, bucket: RGW.bucket, key: key, options: options)
            }
            #expect(error?.status == 412)
        }
    }

    @Test func staleMultipartUploadsAreAborted() throws {
        let client = RGW.client()
        let prefix = RGW.uniqueKey("stale/")
        let id = try client.createMultipartUpload(bucket: RGW.bucket, key: prefix + "left-behind")
        #expect(try client.abortMultipartUploads(bucket: RGW.bucket, prefix: prefix, initiatedBefore: Date(timeIntervalSinceNow: -3600)).isEmpty)
        let aborted = try client.abortMultipartUploads(bucket: RGW.bucket, prefix: prefix, initiatedBefore: Date(timeIntervalSinceNow: 60))
        #expect(aborted.map(\.uploadId) == [id])
        #expect(try client.listMultipartUploads(bucket: RGW.bucket, prefix: prefix).isEmpty)
    }
}

/// A progress store that throws once it has saved `allowed` times (a process dying mid-upload).
final class FailingAfterSaves: MultipartProgressStore {
    struct Failure: Error {}
    let inner: InMemoryMultipartProgressStore
    let saves = Locked(0)
    let allowed: Int

    init(_ inner: InMemoryMultipartProgressStore, allowed: Int) {
        self.inner = inner
        self.allowed = allowed
    }

    func load(_ key: MultipartUploadKey) throws -> MultipartProgress? { try inner.load(key) }
    func clear(_ key: MultipartUploadKey) throws { try inner.clear(key) }
    func save(_ progress: MultipartProgress, for key: MultipartUploadKey) throws {
        let n = saves.withLock { count -> Int in count += 1; return count }
        if n > allowed { throw Failure() }
        try inner.save(progress, for: key)
    }
}
