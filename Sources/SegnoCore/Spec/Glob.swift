import Foundation

/// A path pattern relative to the input root: `*` and `?` within a name, `[abc]` classes,
/// `**` for any number of folders, `{a,b}` alternatives (nested allowed). Matching ignores
/// case, so `*.wav` also takes `MEMO.WAV` from a phone. `*` does not match a leading dot
/// unless the pattern names it (`**/.*` matches hidden files).
public struct Glob: Sendable, Equatable, CustomStringConvertible {
    /// The pattern as written.
    public let text: String
    /// Each brace alternative, split into path components.
    package let alternatives: [[String]]

    public init(_ text: String) throws(TemplateError) {
        self.text = text
        if text.hasPrefix("/") { throw TemplateError("pattern \"\(text)\" must be relative to input.root") }
        let expanded = try Self.expandBraces(text)
        if expanded.count > 1024 { throw TemplateError("pattern \"\(text)\" has too many {…} alternatives") }
        alternatives = expanded.map { $0.split(separator: "/", omittingEmptySubsequences: true).map(String.init) }
    }

    public var description: String { text }

    /// True when `relativePath` ("2024/memo.wav") matches.
    public func matches(_ relativePath: String) -> Bool {
        let comps = relativePath.split(separator: "/").map(String.init)
        return alternatives.contains { Self.match($0[...], comps[...]) }
    }

    /// True when a folder at `relativePath` could contain matches (so the scanner may prune).
    public func mayMatchBelow(_ relativeDir: String) -> Bool {
        let comps = relativeDir.split(separator: "/").map(String.init)
        return alternatives.contains { Self.prefixMatch($0[...], comps[...]) }
    }

    static package func match(_ p: ArraySlice<String>, _ s: ArraySlice<String>) -> Bool {
        guard let first = p.first else { return s.isEmpty }
        if first == "**" {
            let rest = p.dropFirst()
            var tail = s
            while true {
                if match(rest, tail) { return true }
                if tail.isEmpty { return false }
                tail = tail.dropFirst()
            }
        }
        guard let name = s.first, component(first, name) else { return false }
        return match(p.dropFirst(), s.dropFirst())
    }

    static package func prefixMatch(_ p: ArraySlice<String>, _ s: ArraySlice<String>) -> Bool {
        guard let name = s.first else { return true }
        guard let first = p.first else { return false }
        if first == "**" { return true }
        guard component(first, name) else { return false }
        return prefixMatch(p.dropFirst(), s.dropFirst())
    }

    /// One path component against one pattern component (fnmatch, case-insensitive, leading dot explicit).
    static package func component(_ pattern: String, _ name: String) -> Bool {
        fnmatch(pattern, name, FNM_PERIOD | fnmCaseFold) == 0
    }

    /// glibc's FNM_CASEFOLD (a GNU extension the Swift overlay does not export).
    static package let fnmCaseFold: Int32 = 1 << 4

    /// `a{b,c{d,e}}f` → [abf, acdf, acef].
    static package func expandBraces(_ s: String) throws(TemplateError) -> [String] {
        let chars = Array(s)
        guard let open = chars.firstIndex(of: "{") else {
            if chars.contains("}") { throw TemplateError("unmatched '}' in pattern \"\(s)\"") }
            return [s]
        }
        var depth = 0
        var close: Int?
        var commas: [Int] = []
        for i in open..<chars.count {
            switch chars[i] {
            case "{": depth += 1
            case "}":
                depth -= 1
                if depth == 0 { close = i }
            case "," where depth == 1: commas.append(i)
            default: break
            }
            if close != nil { break }
        }
        guard let close else { throw TemplateError("unclosed '{' in pattern \"\(s)\"") }
        let prefix = String(chars[..<open]), suffix = String(chars[(close + 1)...])
        let bounds = [open] + commas + [close]
        var out: [String] = []
        for k in 0..<(bounds.count - 1) {
            let part = String(chars[(bounds[k] + 1)..<bounds[k + 1]])
            for tail in try expandBraces(part + suffix) { out.append(prefix + tail) }
        }
        return out
    }
}
