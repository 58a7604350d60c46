import Foundation

/// User metadata (`x-amz-meta-*` headers): validation, the 2 KB limit, and the encoding of values
/// that HTTP headers cannot carry as they are.
///
/// Values that are printable ASCII without leading or trailing white space are sent unchanged.
/// Any other value (non-ASCII such as Korean titles, control characters, edge white space) is
/// sent as an RFC 2047 encoded word, `=?UTF-8?B?<base64>?=`, which AWS S3 decodes on PUT and which
/// `decodeValue` turns back into the original text on HEAD.
public enum S3Metadata {
    /// S3's limit on user metadata: keys plus values, in bytes.
    public static let limitBytes = 2048
    /// The key under which `upload` stores the SHA-256 of the local file (`x-amz-meta-segno-sha256`).
    public static let sha256Key = "segno-sha256"
    /// Bytes the `segno-sha256` entry takes (key plus 64 hex digits); user metadata must fit in
    /// `limitBytes - reservedBytes` when uploaded through `upload`.
    public static let reservedBytes = sha256Key.utf8.count + 64

    /// Size as S3 counts it: the UTF-8 bytes of each key (without `x-amz-meta-`) plus each value
    /// as sent (encoded values count with their encoding).
    public static func byteCount(_ metadata: [String: String]) -> Int {
        metadata.reduce(0) { $0 + $1.key.lowercased().utf8.count + encodeValue($1.value).utf8.count }
    }

    /// Checks keys and the size. Called before any request is sent (and by spec validation, when
    /// the values are known). `reserve` adds bytes that will be added later (e.g. `reservedBytes`).
    /// - Throws: `S3Error.invalidMetadataKey`, `S3Error.metadataTooLarge`.
    public static func validate(_ metadata: [String: String], reserve: Int = 0) throws {
        for key in metadata.keys where !isValidKey(key) { throw S3Error.invalidMetadataKey(key) }
        let lowered = Set(metadata.keys.map { $0.lowercased() })
        if lowered.count != metadata.count {
            throw S3Error.invalidConfiguration("metadata keys differ only in case: \(metadata.keys.sorted())")
        }
        let size = byteCount(metadata) + reserve
        if size > limitBytes { throw S3Error.metadataTooLarge(bytes: size, limit: limitBytes) }
    }

    /// Letters, digits, `-`, `_` and `.`, not empty; compared without case (S3 lower-cases them).
    public static func isValidKey(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                return true
            default:
                return false
            }
        }
    }

    /// The header value sent for `value`.
    public static func encodeValue(_ value: String) -> String {
        let bytes = Array(value.utf8)
        let plain = bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
            && bytes.first != 0x20 && bytes.last != 0x20
            && !value.hasPrefix("=?")
        if plain { return value }
        return "=?UTF-8?B?" + Data(bytes).base64EncodedString() + "?="
    }

    /// The original text of a header value received on HEAD (RFC 2047 `B` and `Q` words in UTF-8
    /// are decoded; anything else is returned unchanged).
    public static func decodeValue(_ value: String) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("=?"), trimmed.hasSuffix("?=") else { return value }
        // One or more encoded words separated by white space.
        var out = Data()
        for word in trimmed.split(separator: " ") {
            let parts = word.split(separator: "?", omittingEmptySubsequences: false)
            // "=", charset, encoding, text, "="
            guard parts.count == 5, parts[0] == "=", parts[4] == "=",
                  ["utf-8", "us-ascii"].contains(parts[1].lowercased()) else { return value }
            switch parts[2].uppercased() {
            case "B":
                guard let data = Data(base64Encoded: String(parts[3])) else { return value }
                out.append(data)
            case "Q":
                var bytes = [UInt8]()
                let chars = Array(parts[3].utf8)
                var i = 0
                while i < chars.count {
                    if chars[i] == UInt8(ascii: "_") { bytes.append(0x20); i += 1 }
                    else if chars[i] == UInt8(ascii: "="), i + 2 < chars.count,
                            let byte = UInt8(String(decoding: chars[(i + 1)...(i + 2)], as: UTF8.self), radix: 16) {
                        bytes.append(byte); i += 3
                    } else { bytes.append(chars[i]); i += 1 }
                }
                out.append(contentsOf: bytes)
            default:
                return value
            }
        }
        return String(data: out, encoding: .utf8) ?? value
    }

    /// The `x-amz-meta-*` headers for `metadata` (keys lower-cased, values encoded).
    static func headers(_ metadata: [String: String]) -> [String: String] {
        var headers: [String: String] = [:]
        for (key, value) in metadata { headers["x-amz-meta-" + key.lowercased()] = encodeValue(value) }
        return headers
    }
}
