import Foundation

/// A minimal XML reader for S3's small response documents (errors, InitiateMultipartUploadResult,
/// ListPartsResult, ListMultipartUploadsResult, CompleteMultipartUploadResult). It builds a tree of
/// elements, decodes the five named entities and numeric character references, and skips the
/// prolog, comments, processing instructions and CDATA markers. Namespaces are ignored (a `p:Name`
/// element is `Name`). Not a general XML parser.
struct XMLElement: Sendable, Equatable {
    var name: String
    var text: String = ""
    var children: [XMLElement] = []

    /// The first child with that name.
    func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }
    /// All children with that name.
    func all(_ name: String) -> [XMLElement] { children.filter { $0.name == name } }
    /// Text of the first child with that name.
    func string(_ name: String) -> String? { child(name)?.text }

    /// Parses a document and returns its root element, or nil when it is not well formed enough.
    static func parse(_ data: Data) -> XMLElement? {
        var parser = MiniXMLParser(bytes: Array(data))
        return parser.parseDocument()
    }

    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for ch in text.unicodeScalars {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.unicodeScalars.append(ch)
            }
        }
        return out
    }
}

private struct MiniXMLParser {
    let bytes: [UInt8]
    var i = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func parseDocument() -> XMLElement? {
        var stack: [XMLElement] = []
        var root: XMLElement?
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "<") {
                if starts("<?") { skip(past: "?>"); continue }
                if starts("<!--") { skip(past: "-->"); continue }
                if starts("<![CDATA[") {
                    i += 9
                    let start = i
                    skip(past: "]]>")
                    let end = max(start, i - 3)
                    if !stack.isEmpty { stack[stack.count - 1].text += String(decoding: bytes[start..<end], as: UTF8.self) }
                    continue
                }
                if starts("<!") { skip(past: ">"); continue }
                if starts("</") {
                    i += 2
                    let start = i
                    skip(past: ">")
                    _ = start
                    guard let done = stack.popLast() else { return nil }
                    if stack.isEmpty { root = done; return root }
                    stack[stack.count - 1].children.append(done)
                    continue
                }
                // Start tag.
                i += 1
                let nameStart = i
                while i < bytes.count, !isSpace(bytes[i]), bytes[i] != UInt8(ascii: ">"), bytes[i] != UInt8(ascii: "/") { i += 1 }
                var name = String(decoding: bytes[nameStart..<i], as: UTF8.self)
                if let colon = name.lastIndex(of: ":") { name = String(name[name.index(after: colon)...]) }
                // Skip attributes (quoted values may hold '>').
                var selfClosing = false
                while i < bytes.count, bytes[i] != UInt8(ascii: ">") {
                    if bytes[i] == UInt8(ascii: "\"") || bytes[i] == UInt8(ascii: "'") {
                        let quote = bytes[i]
                        i += 1
                        while i < bytes.count, bytes[i] != quote { i += 1 }
                    } else if bytes[i] == UInt8(ascii: "/") {
                        selfClosing = true
                    } else if !isSpace(bytes[i]) {
                        selfClosing = false
                    }
                    i += 1
                }
                i += 1
                let element = XMLElement(name: name)
                if selfClosing {
                    if stack.isEmpty { return element }
                    stack[stack.count - 1].children.append(element)
                } else {
                    stack.append(element)
                }
            } else {
                let start = i
                while i < bytes.count, bytes[i] != UInt8(ascii: "<") { i += 1 }
                if !stack.isEmpty { stack[stack.count - 1].text += decodeEntities(bytes[start..<i]) }
            }
        }
        return root
    }

    func starts(_ prefix: String) -> Bool {
        let p = Array(prefix.utf8)
        guard i + p.count <= bytes.count else { return false }
        return Array(bytes[i..<(i + p.count)]) == p
    }

    mutating func skip(past terminator: String) {
        let t = Array(terminator.utf8)
        while i < bytes.count {
            if i + t.count <= bytes.count, Array(bytes[i..<(i + t.count)]) == t { i += t.count; return }
            i += 1
        }
    }

    func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    func decodeEntities(_ slice: ArraySlice<UInt8>) -> String {
        let text = String(decoding: slice, as: UTF8.self)
        guard text.contains("&") else { return text }
        var out = ""
        var rest = Substring(text)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semi = rest[amp...].firstIndex(of: ";") else { out += rest[amp...]; return out }
            let entity = rest[rest.index(after: amp)..<semi]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                var scalar: Unicode.Scalar?
                if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                    scalar = UInt32(entity.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                } else if entity.hasPrefix("#") {
                    scalar = UInt32(entity.dropFirst(1)).flatMap(Unicode.Scalar.init)
                }
                if let scalar { out.unicodeScalars.append(scalar) } else { out += rest[amp...semi] }
            }
            rest = rest[rest.index(after: semi)...]
        }
        out += rest
        return out
    }
}
