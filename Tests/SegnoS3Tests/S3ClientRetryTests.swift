import Foundation
@testable import SegnoS3
import Testing

/// `S3Client`'s retries against Tests/support/flaky_s3.py, a local server playing scripted answers.
@Suite struct S3ClientRetryTests {
    static func client(_ server: FlakyServer, attempts: Int = 4, timeout: TimeInterval = 30) -> S3Client {
        S3Client(endpoint: server.endpoint, credentials: S3Credentials(accessKeyId: "a", secretAccessKey: "b"),
                 configuration: S3ClientConfiguration(timeout: timeout,
                                                      retry: RetryPolicy(maxAttempts: attempts, baseDelay: 0.01, maxDelay: 0.02)))
    }

    @Test func slowDownAndServerErrorsAreRetried() throws {
        let server = try FlakyServer(plan: "503:SlowDown,500:InternalError,200")
        defer { server.stop() }
        let client = Self.client(server)
        let result = try client.putObject(bucket: "bucket", key: "k", data: Data("hello".utf8))
        #expect(result.etag == "5d41402abc4b2a76b9719d911017c592")
        #expect(client.statistics.requests == 3)
        #expect(client.statistics.retries == 2)
    }

    @Test func clientErrorsAreNotRetried() throws {
        let server = try FlakyServer(plan: "403:AccessDenied,200")
        defer { server.stop() }
        let client = Self.client(server)
        let error = #expect(throws: S3Error.self) { try client.putObject(bucket: "bucket", key: "k", data: Data()) }
        #expect(error == .server(operation: "PutObject", resource: "s3://bucket/k", status: 403, code: "AccessDenied",
                                 message: "scripted AccessDenied", requestId: "req-1"))
        #expect(client.statistics.requests == 1)
    }

    @Test func retriesStopAfterMaxAttemptsWithTheLastCode() throws {
        let server = try FlakyServer(plan: "503:SlowDown")
        defer { server.stop() }
        let client = Self.client(server, attempts: 3)
        let error = #expect(throws: S3Error.self) { try client.putObject(bucket: "bucket", key: "k", data: Data()) }
        #expect(error?.code == "SlowDown")
        #expect(client.statistics.requests == 3)
    }

    @Test func connectionResetsAndTimeoutsAreRetried() throws {
        let server = try FlakyServer(plan: "reset,sleep:3,200")
        defer { server.stop() }
        let client = Self.client(server, timeout: 1)
        _ = try client.putObject(bucket: "bucket", key: "k", data: Data("x".utf8))
        #expect(client.statistics.requests == 3)
    }

    @Test func refusedConnectionsEndInATransportError() throws {
        let client = S3Client(endpoint: try S3Endpoint(url: URL(string: "http://127.0.0.1:9")!),
                              credentials: S3Credentials(accessKeyId: "a", secretAccessKey: "b"),
                              configuration: S3ClientConfiguration(retry: RetryPolicy(maxAttempts: 2, baseDelay: 0.01)))
        let error = #expect(throws: S3Error.self) { try client.headObject(bucket: "bucket", key: "k") }
        guard case .transport = error else { Issue.record("expected a transport error, got \(String(describing: error))"); return }
        #expect(client.statistics.requests == 2)
    }
}
