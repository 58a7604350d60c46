import Foundation

/// How the bucket appears in a request: in the path (`http://host/bucket/key`; MinIO, RGW and most
/// custom endpoints) or in the host name (`https://bucket.host/key`; AWS's default).
public enum S3Addressing: String, Sendable, Codable, CaseIterable {
    case path
    case virtual
}

/// Where requests go: the service URL (scheme, host and port only), the signing region, and the
/// addressing style.
public struct S3Endpoint: Sendable, Equatable, CustomStringConvertible {
    public let scheme: String
    /// Host name or IP address (no brackets, no port).
    public let host: String
    /// Explicit port, nil for the scheme's default.
    public let port: Int?
    /// Region of the credential scope: `us-east-1` by default, `auto` for Cloudflare R2.
    public let region: String
    public let addressing: S3Addressing

    /// - Throws: `S3Error.invalidConfiguration` when the URL is not `http(s)://host[:port][/]`.
    public init(url: URL, region: String = "us-east-1", addressing: S3Addressing = .path) throws {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            throw S3Error.invalidConfiguration("endpoint '\(url.absoluteString)' must be http(s)://host[:port]")
        }
        if !(url.path.isEmpty || url.path == "/") || url.query != nil {
            throw S3Error.invalidConfiguration("endpoint '\(url.absoluteString)' must not have a path or query")
        }
        if region.isEmpty || region.contains("/") || region.contains(" ") {
            throw S3Error.invalidConfiguration("region '\(region)' is not a region name")
        }
        self.scheme = scheme
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let defaultPort = scheme == "https" ? 443 : 80
        self.port = url.port == defaultPort ? nil : url.port
        self.region = region
        self.addressing = addressing
    }

    /// AWS S3 in `region`, virtual-hosted addressing.
    public static func aws(region: String) throws -> S3Endpoint {
        try S3Endpoint(url: URL(string: "https://s3.\(region).amazonaws.com")!, region: region, addressing: .virtual)
    }

    public var description: String { "\(scheme)://\(hostHeader(bucket: nil)) (region \(region), \(addressing.rawValue) style)" }

    /// The `Host` header value: the bucket in front for virtual-hosted addressing, the port when
    /// it is not the default.
    func hostHeader(bucket: String?) -> String {
        var name = host.contains(":") ? "[\(host)]" : host
        if addressing == .virtual, let bucket { name = bucket + "." + name }
        if let port { name += ":\(port)" }
        return name
    }

    /// The raw (unencoded) path of a bucket or object.
    func rawPath(bucket: String?, key: String?) -> String {
        var path = ""
        if addressing == .path, let bucket { path = "/" + bucket }
        if let key { path += "/" + key }
        return path.isEmpty ? "/" : path
    }

    /// Rejects bucket names that cannot be addressed (S3's rules, relaxed for legacy names).
    static func validate(bucket: String) throws {
        let ok = (3...255).contains(bucket.utf8.count) && bucket.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                return true
            default:
                return false
            }
        }
        if !ok { throw S3Error.invalidConfiguration("bucket name '\(bucket)' is not valid") }
    }
}
