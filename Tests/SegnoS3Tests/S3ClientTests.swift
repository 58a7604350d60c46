import Foundation
import Logging
@testable import SegnoS3
import Testing

/// S3Client against the real Ceph RADOS Gateway of Tests/support/rgw.sh (enabled when
/// S3_TEST_ENDPOINT is set; CI always sets it).
@Suite(.enabled(if: RGW.isConfigured, "needs S3_TEST_ENDPOINT (Tests/support/rgw.sh start)"))
struct S3ClientTests {
    @Test func putWithMetadataAndContentTypeReadsBackByHead() throws {
        let client = RGW.client()
        let key = RGW.uniqueKey("memo.caf")
        let file = try TempFile(size: 300_000, seed: 7)
        defer { file.remove() }
        let metadata = ["title": "Voice memo 7", "duration": "12.5", "waveform": "[0,12,-3,127]",
                        "korean": "회의 메모", "spaced": "  edge spaces  "]
        let put = try client.putObject(bucket: RGW.bucket, key: key, file: file.url,
                                       options: PutObjectOptions(metadata: metadata, contentType: "audio/x-caf"))
        let info = try #require(try client.headObject(bucket: RGW.bucket, key: key))
        #expect(info.size == 300_000)
        #expect(info.contentType == "audio/x-caf")
        #expect(info.etag == put.etag)
        #expect(info.etag == FileDigest.of(data: TempFile.bytes(size: 300_000, seed: 7)).md5Hex)
        for (name, value) in metadata { #expect(info.metadata[name] == value, "metadata \(name)") }
        let bytes = try client.getObject(bucket: RGW.bucket, key: key)
        #expect(bytes == TempFile.bytes(size: 300_000, seed: 7))
    }

    @Test(arguments: ["with space/and  two spaces.flac", "녹음/회의 메모 2.caf", "+=&;()!*'$@,.flac",
                      "a//b/./c", "dots/../x", "tilde~_-.ok", "percent%41%2F.txt"])
    func trickyKeysRoundTrip(name: String) throws {
        let client = RGW.client()
        let key = RGW.uniqueKey(name)
        let body = Data("content of \(name)".utf8)
        _ = try client.putObject(bucket: RGW.bucket, key: key, data: body, options: PutObjectOptions(contentType: "text/plain"))
        #expect(try client.getObject(bucket: RGW.bucket, key: key) == body)
        #expect(try client.headObject(bucket: RGW.bucket, key: key)?.size == Int64(body.count))
        let listed = try client.listObjects(bucket: RGW.bucket, prefix: String(key.prefix(9)))
        #expect(listed.map(\.key) == [key])
        try client.deleteObject(bucket: RGW.bucket, key: key)
        #expect(try client.headObject(bucket: RGW.bucket, key: key) == nil)
    }

    /// Virtual-hosted addressing: the bucket in the host name (`bucket.localhost`, which libcurl
    /// resolves to the loopback address; rgw.sh sets `rgw dns name = localhost`).
    @Test func virtualHostedAddressing() throws {
        let port = try #require(URL(string: RGW.environment["S3_TEST_ENDPOINT"]!)?.port)
        let endpoint = try S3Endpoint(url: URL(string: "http://localhost:\(port)")!, addressing: .virtual)
        let client = S3Client(endpoint: endpoint, credentials: RGW.credentials)
        let key = RGW.uniqueKey("virtual host/녹음.txt")
        _ = try client.putObject(bucket: RGW.bucket, key: key, data: Data("v".utf8),
                                 options: PutObjectOptions(metadata: ["mode": "virtual"]))
        #expect(try client.headObject(bucket: RGW.bucket, key: key)?.metadata["mode"] == "virtual")
        #expect(try RGW.client().getObject(bucket: RGW.bucket, key: key) == Data("v".utf8))
    }

    @Test func headOfMissingObjectIsNilAndDeleteOfMissingSucceeds() throws {
        let client = RGW.client()
        let key = RGW.uniqueKey("missing")
        #expect(try client.headObject(bucket: RGW.bucket, key: key) == nil)
        try client.deleteObject(bucket: RGW.bucket, key: key)
    }

    @Test func wrongSecretFailsWithTheServersCodeAndNoRetry() throws {
        let capture = CapturingLogHandler()
        let wrong = S3Credentials(accessKeyId: RGW.credentials.accessKeyId, secretAccessKey: "tampered-secret-0123456789")
        let client = RGW.client(credentials: wrong, retry: RetryPolicy(maxAttempts: 5, baseDelay: 0.01),
                                logger: Logger(label: "test", factory: { _ in capture }))
        let error = #expect(throws: S3Error.self) {
            try client.putObject(bucket: RGW.bucket, key: RGW.uniqueKey("x"), data: Data("x".utf8))
        }
        #expect(error?.code == "SignatureDoesNotMatch")
        #expect(error?.status == 403)
        #expect(error?.isAuthenticationError == true)
        #expect(client.statistics.requests == 1)
        #expect(client.statistics.retries == 0)
        let headError = #expect(throws: S3Error.self) { try client.headObject(bucket: RGW.bucket, key: "any") }
        #expect(headError?.code == "SignatureDoesNotMatch")
        for text in ["\(error!)", "\(headError!)", String(reflecting: error!), capture.text, "\(wrong)", String(reflecting: wrong)] {
            #expect(!text.contains("tampered-secret"))
        }
    }

    @Test func unknownAccessKeyIsReported() throws {
        let client = RGW.client(credentials: S3Credentials(accessKeyId: "NOSUCHKEY0000000000", secretAccessKey: "x"))
        let error = #expect(throws: S3Error.self) {
            try client.putObject(bucket: RGW.bucket, key: RGW.uniqueKey("x"), data: Data())
        }
        #expect(error?.code == "InvalidAccessKeyId")
        #expect(client.statistics.requests == 1)
    }

    @Test func ifNoneMatchRefusesToOverwrite() throws {
        let client = RGW.client()
        let key = RGW.uniqueKey("once.txt")
        _ = try client.putObject(bucket: RGW.bucket, key: key, data: Data("first".utf8),
                                 options: PutObjectOptions(ifNoneMatch: true))
        let error = #expect(throws: S3Error.self) {
            try client.putObject(bucket: RGW.bucket, key: key, data: Data("second".utf8),
                                 options: PutObjectOptions(ifNoneMatch: true))
        }
        #expect(error?.status == 412)
        #expect(try client.getObject(bucket: RGW.bucket, key: key) == Data("first".utf8))
    }

    @Test func emptyObject() throws {
        let client = RGW.client()
        let key = RGW.uniqueKey("empty")
        let file = try TempFile(size: 0)
        defer { file.remove() }
        let put = try client.putObject(bucket: RGW.bucket, key: key, file: file.url)
        #expect(put.etag == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(try client.headObject(bucket: RGW.bucket, key: key)?.size == 0)
    }

    @Test func manyRequestsFromManyThreadsShareOneClient() throws {
        let client = RGW.client()
        let prefix = RGW.uniqueKey("")
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 24) { i in
            do {
                _ = try client.putObject(bucket: RGW.bucket, key: "\(prefix)\(i)", data: Data(repeating: UInt8(i), count: 1000 + i))
            } catch { failures.withLock { $0 += 1 } }
        }
        #expect(failures.value == 0)
        let listed = try client.listObjects(bucket: RGW.bucket, prefix: prefix)
        #expect(listed.count == 24)
        #expect(Set(listed.map(\.size)) == Set((0..<24).map { Int64(1000 + $0) }))
    }
}
