import Foundation
@testable import SegnoS3
import Testing

@Suite struct S3EndpointTests {
    @Test func pathAndVirtualHostedAddressing() throws {
        let path = try S3Endpoint(url: URL(string: "http://127.0.0.1:17480")!)
        #expect(path.hostHeader(bucket: "rec") == "127.0.0.1:17480")
        #expect(path.rawPath(bucket: "rec", key: "a/b.flac") == "/rec/a/b.flac")
        let virtual = try S3Endpoint(url: URL(string: "https://s3.eu-west-1.amazonaws.com:443/")!, region: "eu-west-1",
                                     addressing: .virtual)
        #expect(virtual.hostHeader(bucket: "rec") == "rec.s3.eu-west-1.amazonaws.com")
        #expect(virtual.rawPath(bucket: "rec", key: "a/b.flac") == "/a/b.flac")
        #expect(virtual.rawPath(bucket: "rec", key: nil) == "/")
        #expect(try S3Endpoint.aws(region: "us-east-2").addressing == .virtual)
        #expect(try S3Endpoint(url: URL(string: "https://x.r2.cloudflarestorage.com")!, region: "auto").region == "auto")
    }

    @Test func urlsWithPathsOrOtherSchemesAreRejected() {
        #expect(throws: S3Error.self) { try S3Endpoint(url: URL(string: "http://h/prefix")!) }
        #expect(throws: S3Error.self) { try S3Endpoint(url: URL(string: "ftp://h")!) }
        #expect(throws: S3Error.self) { try S3Endpoint(url: URL(string: "http://h")!, region: "") }
        #expect(throws: S3Error.self) { try S3Endpoint.validate(bucket: "a") }
        #expect(throws: S3Error.self) { try S3Endpoint.validate(bucket: "with/slash") }
    }

    @Test func requestURLKeepsDotSegmentsAndSignsTheCanonicalPath() throws {
        let client = S3Client(endpoint: try S3Endpoint(url: URL(string: "http://127.0.0.1:1")!),
                              credentials: S3Credentials(accessKeyId: "a", secretAccessKey: "b"))
        let request = client.makeRequest(.init(operation: "GetObject", method: "GET", bucket: "b", key: "a//./c d",
                                               query: [("uploads", nil), ("x", "1 2")]))
        #expect(request.url?.absoluteString == "http://127.0.0.1:1/b/a//%2E/c%20d?uploads&x=1%202")
        #expect(request.value(forHTTPHeaderField: "x-amz-content-sha256") == PayloadHash.empty)
        #expect(request.value(forHTTPHeaderField: "Authorization")?.hasPrefix("AWS4-HMAC-SHA256 Credential=a/") == true)
    }
}
