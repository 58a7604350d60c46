import Foundation

/// Percent-encoding as S3's Signature Version 4 defines it: every byte of the UTF-8 form is
/// encoded as `%XX` (upper-case hex) except the unreserved characters `A-Z a-z 0-9 - . _ ~`.
/// Called for every path segment and every query name and value that goes into a request.
public enum S3URIEncoding {
    private static let hex: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// True for the bytes that are never encoded.
    @inline(__always)
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Encodes `string`; `/` is encoded too unless `keepSlash` is true.
    public static func encode(_ string: String, keepSlash: Bool = false) -> String {
        var out = [UInt8]()
        out.reserveCapacity(string.utf8.count * 3)
        for byte in string.utf8 {
            if isUnreserved(byte) || (keepSlash && byte == UInt8(ascii: "/")) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The canonical URI of a raw (unencoded) absolute path such as `/bucket/a//b/./c`: each segment
    /// encoded once, slashes kept, nothing normalised (`//`, `.` and `..` segments stay as they are).
    public static func canonicalPath(_ rawPath: String) -> String {
        if rawPath.isEmpty { return "/" }
        return encode(rawPath, keepSlash: true)
    }

    /// The path as it is written into the request URL. It equals `canonicalPath` except that `.` and
    /// `..` segments are written `%2E` / `%2E%2E`, because libcurl (under URLSession on Linux) would
    /// otherwise remove them as dot-segments; the server decodes them back to the same key, and
    /// computes the canonical URI from the decoded key.
    public static func wirePath(_ rawPath: String) -> String {
        if rawPath.isEmpty { return "/" }
        let segments = rawPath.split(separator: "/", omittingEmptySubsequences: false)
        return segments.map { segment -> String in
            if segment == "." { return "%2E" }
            if segment == ".." { return "%2E%2E" }
            return encode(String(segment))
        }.joined(separator: "/")
    }

    /// Decodes a key returned with `encoding-type=url`: `+` is a space (AWS writes spaces so, and
    /// a literal `+` as `%2B`), then `%XX` escapes; invalid escapes stay as they are.
    public static func decode(_ string: String) -> String {
        let spaced = string.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
