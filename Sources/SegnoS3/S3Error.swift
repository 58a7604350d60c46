import Foundation

/// Everything SegnoS3 throws. Messages name the operation, bucket and key, and carry the server's
/// S3 error code and message when there is one; they never contain a secret or a signature.
public enum S3Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with an error (any 4xx, or a 5xx/429 after the retries ran out).
    /// `code` is the S3 error code (`SignatureDoesNotMatch`, `InvalidAccessKeyId`, `NoSuchBucket`,
    /// `PreconditionFailed`, …), or the HTTP reason when the response had no error document.
    case server(operation: String, resource: String, status: Int, code: String, message: String, requestId: String?)
    /// The request could not be completed at the transport level (connection refused or reset,
    /// timeout, DNS) after the retries ran out.
    case transport(operation: String, resource: String, message: String)
    /// User metadata is larger than the 2 KB S3 allows (keys plus values, in bytes as sent).
    case metadataTooLarge(bytes: Int, limit: Int)
    /// A metadata key that cannot be sent as an `x-amz-meta-*` header name.
    case invalidMetadataKey(String)
    /// A part's or the object's ETag does not match what was sent (data changed on the way).
    case integrity(resource: String, message: String)
    /// An impossible setting: bad endpoint, bucket name, part size, region.
    case invalidConfiguration(String)
    /// No credentials were found (environment or shared files), or a named profile is missing.
    case credentialsNotFound(String)
    /// The local file could not be read.
    case fileUnreadable(path: String, message: String)
    /// The server's answer could not be understood.
    case unexpectedResponse(operation: String, resource: String, message: String)
    /// The caller asked to stop (`UploadOptions.shouldContinue` returned false). A multipart
    /// upload stays recorded in the progress store and resumes on the next call.
    case cancelled(resource: String)

    public var description: String {
        switch self {
        case let .server(operation, resource, status, code, message, requestId):
            var text = "S3 \(operation) \(resource) failed: HTTP \(status) \(code)"
            if !message.isEmpty { text += ": \(message)" }
            if let requestId, !requestId.isEmpty { text += " (request id \(requestId))" }
            return text
        case let .transport(operation, resource, message):
            return "S3 \(operation) \(resource) failed: \(message)"
        case let .metadataTooLarge(bytes, limit):
            return "S3 user metadata is \(bytes) bytes; the limit is \(limit) bytes (keys plus values)"
        case let .invalidMetadataKey(key):
            return "S3 metadata key '\(key)' is not allowed (use letters, digits, '-', '_' and '.')"
        case let .integrity(resource, message):
            return "S3 integrity check failed for \(resource): \(message)"
        case let .invalidConfiguration(message):
            return "S3 configuration: \(message)"
        case let .credentialsNotFound(message):
            return "S3 credentials not found: \(message)"
        case let .fileUnreadable(path, message):
            return "cannot read \(path): \(message)"
        case let .unexpectedResponse(operation, resource, message):
            return "S3 \(operation) \(resource): unexpected response: \(message)"
        case let .cancelled(resource):
            return "S3 upload of \(resource) stopped on request"
        }
    }

    /// The S3 error code of a `.server` error, else nil.
    public var code: String? {
        if case let .server(_, _, _, code, _, _) = self { return code }
        return nil
    }

    /// The HTTP status of a `.server` error, else nil.
    public var status: Int? {
        if case let .server(_, _, status, _, _, _) = self { return status }
        return nil
    }

    /// True for errors caused by the credentials (wrong key or secret, expired token, clock skew).
    public var isAuthenticationError: Bool {
        guard let code else { return false }
        return Self.authCodes.contains(code)
    }

    static let authCodes: Set<String> = [
        "SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied", "ExpiredToken",
        "InvalidToken", "TokenRefreshRequired", "RequestTimeTooSkewed", "AuthorizationHeaderMalformed",
        "InvalidSecurity", "Forbidden",
    ]
}
