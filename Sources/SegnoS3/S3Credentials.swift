import Foundation

/// An access key pair (and optional session token). The secret and the token never appear in
/// `description`, `debugDescription`, `dump` or string interpolation: they print as `<redacted>`.
public struct S3Credentials: Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    public let accessKeyId: String
    /// Only the signer reads it.
    let secretAccessKey: String
    let sessionToken: String?

    public init(accessKeyId: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
        self.sessionToken = (sessionToken?.isEmpty ?? true) ? nil : sessionToken
    }

    /// True when temporary credentials (with `x-amz-security-token`) are used.
    public var hasSessionToken: Bool { sessionToken != nil }

    /// Every string that must never be printed, for callers that scrub their own output.
    public var secrets: [String] { [secretAccessKey] + (sessionToken.map { [$0] } ?? []) }

    public var description: String {
        "S3Credentials(accessKeyId: \(accessKeyId), secretAccessKey: <redacted>"
            + (sessionToken == nil ? ")" : ", sessionToken: <redacted>)")
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: [
            "accessKeyId": accessKeyId,
            "secretAccessKey": "<redacted>",
            "sessionToken": sessionToken == nil ? "nil" : "<redacted>",
        ])
    }
}
