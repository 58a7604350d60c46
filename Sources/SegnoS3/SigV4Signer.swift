import Crypto
import Foundation

/// One HTTP request as the signer sees it. `path` is the raw, unencoded absolute path
/// (`/bucket/key` for path-style, `/key` for virtual-hosted); `query` holds raw names and values
/// (`nil` value = a bare name such as `uploads`).
public struct SignableRequest: Sendable, Equatable {
    public var method: String
    /// Host as it is sent in the `Host` header: `host` or `host:port` when the port is not the
    /// scheme's default.
    public var host: String
    public var path: String
    public var query: [(name: String, value: String?)]
    /// Headers sent with the request that are to be signed (name case does not matter).
    public var headers: [String: String]

    public init(method: String, host: String, path: String,
                query: [(name: String, value: String?)] = [], headers: [String: String] = [:]) {
        self.method = method
        self.host = host
        self.path = path
        self.query = query
        self.headers = headers
    }

    public static func == (a: SignableRequest, b: SignableRequest) -> Bool {
        a.method == b.method && a.host == b.host && a.path == b.path && a.headers == b.headers
            && a.query.map { [$0.name, $0.value ?? "\u{0}"] } == b.query.map { [$0.name, $0.value ?? "\u{0}"] }
    }
}

/// The hash that goes into `x-amz-content-sha256` and the last line of the canonical request.
public enum PayloadHash {
    /// SHA-256 of the empty body.
    public static let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// Sent only when the caller asks for an unsigned payload.
    public static let unsigned = "UNSIGNED-PAYLOAD"

    /// Lower-case hex SHA-256 of `data`.
    public static func of(_ data: Data) -> String { Hex.encode(SHA256.hash(data: data)) }
}

/// AWS Signature Version 4 for S3 (header-based authentication), on swift-crypto.
///
/// S3's rules: each path segment is URI-encoded once and the path is never normalised;
/// `x-amz-content-sha256` is always sent; every header handed to `sign` is signed (the client
/// hands it `host`, every `x-amz-*`, `content-md5`, `content-type` and `range`); header values are
/// trimmed and runs of white space folded to one space. No aws-chunked encoding.
/// Stateless and `Sendable`: one signer serves all threads.
public struct SigV4Signer: Sendable {
    public let credentials: S3Credentials
    /// Region of the credential scope; `auto` is passed through (Cloudflare R2 expects it).
    public let region: String
    public let service: String

    public init(credentials: S3Credentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// Headers never signed even when present (they may change in transit or are added later).
    static let unsignedHeaders: Set<String> = [
        "authorization", "user-agent", "expect", "transfer-encoding", "content-length",
        "connection", "accept-encoding", "accept-language", "x-amzn-trace-id",
    ]

    /// Signs `request`, called once per attempt (a retry is signed again with a new date).
    /// Returns the headers to add to the request: `x-amz-date`, `x-amz-content-sha256`,
    /// `x-amz-security-token` (with a session token) and `Authorization`.
    /// - Parameters:
    ///   - payloadHash: lower-case hex SHA-256 of the body, or `PayloadHash.unsigned`.
    ///   - date: the signing time (UTC is used).
    public func sign(_ request: SignableRequest, payloadHash: String, date: Date) -> [String: String] {
        let stamp = AmzDate(date)
        var added: [String: String] = [
            "x-amz-date": stamp.full,
            "x-amz-content-sha256": payloadHash,
        ]
        if let token = credentials.sessionToken { added["x-amz-security-token"] = token }
        var all = request
        for (name, value) in added { all.headers[name] = value }
        let canonical = canonicalRequest(all, payloadHash: payloadHash)
        let scope = "\(stamp.day)/\(region)/\(service)/aws4_request"
        let toSign = stringToSign(canonicalRequest: canonical.text, amzDate: stamp.full, scope: scope)
        let signature = Hex.encode(HMAC<SHA256>.authenticationCode(
            for: Data(toSign.utf8), using: signingKey(day: stamp.day)))
        added["Authorization"] = "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyId)/\(scope),"
            + "SignedHeaders=\(canonical.signedHeaders),Signature=\(signature)"
        return added
    }

    /// The canonical request (the text that is hashed) and its signed-header list. `request.headers`
    /// must already hold `x-amz-date` and `x-amz-content-sha256`; `host` is added here.
    public func canonicalRequest(_ request: SignableRequest, payloadHash: String)
        -> (text: String, signedHeaders: String)
    {
        var headers: [String: String] = ["host": request.host]
        for (name, value) in request.headers {
            let lower = name.lowercased()
            if Self.unsignedHeaders.contains(lower) { continue }
            let folded = Self.foldValue(value)
            if let previous = headers[lower], lower != "host" {
                headers[lower] = previous + "," + folded
            } else {
                headers[lower] = folded
            }
        }
        let names = headers.keys.sorted()
        var text = request.method.uppercased() + "\n"
        text += S3URIEncoding.canonicalPath(request.path) + "\n"
        text += Self.canonicalQuery(request.query) + "\n"
        for name in names { text += name + ":" + headers[name]! + "\n" }
        text += "\n"
        let signed = names.joined(separator: ";")
        text += signed + "\n" + payloadHash
        return (text, signed)
    }

    /// `AWS4-HMAC-SHA256`, the date, the scope and the hex SHA-256 of the canonical request.
    public func stringToSign(canonicalRequest: String, amzDate: String, scope: String) -> String {
        "AWS4-HMAC-SHA256\n\(amzDate)\n\(scope)\n" + Hex.encode(SHA256.hash(data: Data(canonicalRequest.utf8)))
    }

    /// HMAC chain "AWS4"+secret → day → region → service → "aws4_request".
    func signingKey(day: String) -> SymmetricKey {
        func hmac(_ key: SymmetricKey, _ text: String) -> SymmetricKey {
            SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)))
        }
        var key = SymmetricKey(data: Data(("AWS4" + credentials.secretAccessKey).utf8))
        for part in [day, region, service, "aws4_request"] { key = hmac(key, part) }
        return key
    }

    /// Query names and values encoded (slash included), sorted by name then value, `name=value`
    /// joined with `&`; a bare name becomes `name=`.
    public static func canonicalQuery(_ query: [(name: String, value: String?)]) -> String {
        let encoded: [(name: String, value: String)] = query.map { item in
            (S3URIEncoding.encode(item.name), S3URIEncoding.encode(item.value ?? ""))
        }
        let sorted = encoded.sorted { a, b in a.name == b.name ? a.value < b.value : a.name < b.name }
        return sorted.map { item in item.name + "=" + item.value }.joined(separator: "&")
    }

    /// Trims a header value and folds every run of white space into one space.
    public static func foldValue(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" })
            .joined(separator: " ")
    }
}

/// `YYYYMMDD'T'HHMMSS'Z'` and `YYYYMMDD` of a date, in UTC.
struct AmzDate {
    let full: String
    let day: String

    init(_ date: Date) {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        day = pad(parts.tm_year + 1900, 4) + pad(parts.tm_mon + 1, 2) + pad(parts.tm_mday, 2)
        full = day + "T" + pad(parts.tm_hour, 2) + pad(parts.tm_min, 2) + pad(parts.tm_sec, 2) + "Z"
    }
}

/// Lower-case hexadecimal.
public enum Hex {
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    public static func encode<D: Sequence>(_ bytes: D) -> String where D.Element == UInt8 {
        var out = [UInt8]()
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes of a hex string, or nil when it is not hex of even length.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
