import Foundation
// The multipart records the client resumes from (shared with the state, which the core sees
// without the client): every user of the client sees them through this module.
@_exported import SegnoMultipart
import Logging
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Settings of an `S3Client`.
public struct S3ClientConfiguration: Sendable {
    /// Seconds without any byte sent or received before a request fails (and is retried).
    public var timeout: TimeInterval
    public var retry: RetryPolicy
    /// Parallel connections to one host (the session's pool; connections are reused).
    public var maxConnectionsPerHost: Int
    /// False sends `UNSIGNED-PAYLOAD` for part bodies instead of their SHA-256 (Content-MD5 still
    /// protects them). Single PUTs always sign the payload: its hash is computed anyway.
    public var signPayload: Bool
    /// Check that each part's ETag is the MD5 of the part and the final ETag is the MD5 of the part
    /// MD5s followed by `-N`. Turn off for buckets with SSE-KMS or SSE-C, whose ETags are not MD5s.
    public var strictETags: Bool
    /// Sent as `User-Agent`.
    public var userAgent: String

    public init(timeout: TimeInterval = 60, retry: RetryPolicy = RetryPolicy(), maxConnectionsPerHost: Int = 16,
                signPayload: Bool = true, strictETags: Bool = true, userAgent: String = "segno-s3/1") {
        self.timeout = timeout
        self.retry = retry
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.signPayload = signPayload
        self.strictETags = strictETags
        self.userAgent = userAgent
    }
}

/// Counters of one client, for reports, benchmarks and tests.
public struct S3ClientStatistics: Sendable, Equatable {
    /// HTTP requests sent (every attempt counts).
    public var requests = 0
    /// Attempts that were repeated after a retryable failure.
    public var retries = 0
    /// Body bytes of requests that got an answer.
    public var bytesSent: Int64 = 0
    /// Parts uploaded successfully (`uploadPart`).
    public var partsUploaded = 0
}

/// An S3 client over FoundationNetworking's URLSession, signing with SigV4.
///
/// All operations are synchronous: they block the calling thread until the server has answered,
/// and are meant to be called from Dispatch worker threads (never from an `async` function).
/// One client (one URLSession, one connection pool) serves any number of threads at once.
/// Transient failures are retried (see `RetryPolicy`); 4xx answers are thrown at once as
/// `S3Error.server` with the server's code and message. Secrets never reach logs or errors.
public final class S3Client: Sendable {
    public let endpoint: S3Endpoint
    public let configuration: S3ClientConfiguration
    let signer: SigV4Signer
    let transport: HTTPTransport
    let logger: Logger
    private let counters = Locked(S3ClientStatistics())

    /// - Parameters:
    ///   - logger: where requests (debug) and retries (info) are logged; no headers, no secrets.
    public init(endpoint: S3Endpoint, credentials: S3Credentials,
                configuration: S3ClientConfiguration = S3ClientConfiguration(),
                logger: Logger = Logger(label: "segno.s3", factory: { _ in SwiftLogNoOpLogHandler() })) {
        self.endpoint = endpoint
        self.configuration = configuration
        self.signer = SigV4Signer(credentials: credentials, region: endpoint.region)
        self.transport = HTTPTransport(timeout: configuration.timeout,
                                       maxConnectionsPerHost: configuration.maxConnectionsPerHost)
        self.logger = logger
    }

    /// A snapshot of the counters.
    public var statistics: S3ClientStatistics { counters.value }

    func count(_ update: (inout S3ClientStatistics) -> Void) { counters.withLock(update) }

    /// One S3 call as the operations describe it.
    struct Call {
        var operation: String
        var method: String
        var bucket: String?
        var key: String?
        var query: [(name: String, value: String?)] = []
        var headers: [String: String] = [:]
        var body: RequestBody = .empty
        var payloadHash: String = PayloadHash.empty
        /// Statuses that are answers, not errors (e.g. 404 for HEAD).
        var accept: Set<Int> = []

        var resource: String {
            switch (bucket, key) {
            case let (bucket?, key?): return "s3://\(bucket)/\(key)"
            case let (bucket?, nil): return "s3://\(bucket)"
            default: return "s3://"
            }
        }
    }

    /// Sends `call`, retrying transient failures; returns 2xx answers and the statuses in
    /// `call.accept`, throws `S3Error` for the rest.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    func perform(_ call: Call) throws -> HTTPResponse {
        if let bucket = call.bucket { try S3Endpoint.validate(bucket: bucket) }
        let policy = configuration.retry
        var attempt = 0
        while true {
            attempt += 1
            let request = makeRequest(call)
            count { $0.requests += 1 }
            let outcome: Result<HTTPResponse, TransportFailure>
            do { outcome = .success(try transport.send(request, body: call.body)) }
            catch let failure as TransportFailure { outcome = .failure(failure) }
            catch { outcome = .failure(TransportFailure(code: 0, message: "\(error)")) }

            switch outcome {
            case .success(let response):
                if (200..<300).contains(response.status) || call.accept.contains(response.status) {
                    // CompleteMultipartUpload and CopyObject may answer 200 with an error document.
                    if response.status == 200, call.method == "POST", let error = errorDocument(response) {
                        if attempt < policy.maxAttempts, RetryPolicy.isRetryable(status: 500, code: error.code) {
                            backoff(call, attempt: attempt, reason: error.code)
                            continue
                        }
                        throw S3Error.server(operation: call.operation, resource: call.resource, status: 200,
                                             code: error.code, message: error.message, requestId: error.requestId)
                    }
                    count { $0.bytesSent += call.body.sentLength }
                    logger.debug("S3 request done", metadata: [
                        "s3.operation": "\(call.operation)", "s3.resource": "\(call.resource)",
                        "http.status": "\(response.status)", "s3.attempt": "\(attempt)",
                    ])
                    return response
                }
                let error = errorDocument(response) ?? ErrorDocument(
                    code: Self.reason(response.status), message: "", requestId: response.header("x-amz-request-id"))
                if attempt < policy.maxAttempts, RetryPolicy.isRetryable(status: response.status, code: error.code) {
                    backoff(call, attempt: attempt, reason: "\(response.status) \(error.code)")
                    continue
                }
                throw S3Error.server(operation: call.operation, resource: call.resource, status: response.status,
                                     code: error.code, message: error.message, requestId: error.requestId)
            case .failure(let failure):
                if attempt < policy.maxAttempts, RetryPolicy.isRetryable(urlErrorCode: failure.code) {
                    backoff(call, attempt: attempt, reason: failure.message)
                    continue
                }
                throw S3Error.transport(operation: call.operation, resource: call.resource,
                                        message: attempt > 1 ? "\(failure.message) (after \(attempt) attempts)" : failure.message)
            }
        }
    }

    private func backoff(_ call: Call, attempt: Int, reason: String) {
        let delay = configuration.retry.delay(afterAttempt: attempt)
        count { $0.retries += 1 }
        logger.info("S3 request failed, retrying", metadata: [
            "s3.operation": "\(call.operation)", "s3.resource": "\(call.resource)",
            "s3.attempt": "\(attempt)", "s3.reason": "\(reason)", "s3.delay": "\(String(format: "%.3f", delay))",
        ])
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
    }

    /// Builds and signs the URLRequest for one attempt (signed anew each time: the date changes).
    func makeRequest(_ call: Call) -> URLRequest {
        let host = endpoint.hostHeader(bucket: call.bucket)
        let rawPath = endpoint.rawPath(bucket: call.bucket, key: call.key)
        var urlText = "\(endpoint.scheme)://\(host)\(S3URIEncoding.wirePath(rawPath))"
        if !call.query.isEmpty {
            urlText += "?" + call.query.map { item in
                S3URIEncoding.encode(item.name) + (item.value.map { "=" + S3URIEncoding.encode($0) } ?? "")
            }.joined(separator: "&")
        }
        let headers = call.headers
        let signable = SignableRequest(method: call.method, host: host, path: rawPath, query: call.query,
                                       headers: headers)
        let auth = signer.sign(signable, payloadHash: call.payloadHash, date: Date())
        var request = URLRequest(url: URL(string: urlText)!)
        request.httpMethod = call.method
        for (name, value) in headers {
            request.setValue(value, forHTTPHeaderField: name)
        }
        for (name, value) in auth { request.setValue(value, forHTTPHeaderField: name) }
        request.setValue(configuration.userAgent, forHTTPHeaderField: "User-Agent")
        return request
    }

    struct ErrorDocument {
        var code: String
        var message: String
        var requestId: String?
    }

    /// The `<Error>` document of a response, if it has one. HEAD answers have none: their code is
    /// derived from the status.
    func errorDocument(_ response: HTTPResponse) -> ErrorDocument? {
        guard !response.body.isEmpty, let root = XMLElement.parse(response.body), root.name == "Error" else { return nil }
        return ErrorDocument(code: root.string("Code") ?? Self.reason(response.status),
                             message: root.string("Message") ?? "",
                             requestId: root.string("RequestId") ?? response.header("x-amz-request-id"))
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 400: return "BadRequest"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "NotFound"
        case 405: return "MethodNotAllowed"
        case 409: return "Conflict"
        case 411: return "MissingContentLength"
        case 412: return "PreconditionFailed"
        case 429: return "TooManyRequests"
        case 500: return "InternalError"
        case 501: return "NotImplemented"
        case 503: return "ServiceUnavailable"
        default: return "HTTP\(status)"
        }
    }
}

extension RequestBody {
    /// Bytes sent with the request, for the statistics.
    var sentLength: Int64 {
        switch self {
        case .empty: return 0
        case .data(let data): return Int64(data.count)
        case .file(let url):
            return ((try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? NSNumber)?.int64Value ?? 0
        }
    }
}

/// A value behind a lock (the module's only shared mutable state, always per instance).
final class Locked<Value>: @unchecked Sendable {
    private var stored: Value
    private let lock = NSLock()

    init(_ value: Value) { stored = value }

    var value: Value { lock.lock(); defer { lock.unlock() }; return stored }

    @discardableResult
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock(); defer { lock.unlock() }
        return try body(&stored)
    }
}
