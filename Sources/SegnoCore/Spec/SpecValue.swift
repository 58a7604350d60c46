import Foundation
import Yams

/// A node of a composed YAML spec with its key path and source position, and typed accessors
/// whose errors name both. Stage parsers read their options through it, so every check happens
/// when the spec is loaded (SoX's getopts).
public struct SpecValue {
    package let node: Node
    /// Key path from the document root: `stages[2].eq.bands[0].gain`.
    public let path: String
    package let context: SpecContext

    package init(node: Node, path: String, context: SpecContext) {
        self.node = node
        self.path = path
        self.context = context
    }

    /// An error located at this node.
    public func error(_ message: String) -> SpecError {
        let m = node.mark
        return SpecError(file: context.file, line: m?.line ?? 0, column: m?.column ?? 0, keyPath: path, message: message)
    }

    /// The node as a scalar string, with `${VAR}` / `${VAR:-default}` replaced from the environment.
    public func string() throws(SpecError) -> String {
        try context.count()
        guard case .scalar(let s) = node else { throw error("expected a text value, found \(kindName)") }
        return try context.expand(s.string, at: self)
    }

    /// A number (integers accepted), optionally range-checked with the unit named in errors.
    public func double(in range: ClosedRange<Double>? = nil, unit: String = "") throws(SpecError) -> Double {
        let text = try string()
        guard let v = Double(text.trimmingCharacters(in: .whitespaces)), v.isFinite else {
            throw error("expected a number, found \"\(text)\"")
        }
        if let range, !range.contains(v) {
            throw error("\(canonicalNumber(v))\(unit.isEmpty ? "" : " " + unit) is out of range \(canonicalNumber(range.lowerBound))…\(canonicalNumber(range.upperBound))\(unit.isEmpty ? "" : " " + unit)")
        }
        return v
    }

    /// A whole number, optionally range-checked.
    public func int(in range: ClosedRange<Int>? = nil, unit: String = "") throws(SpecError) -> Int {
        let text = try string()
        guard let v = Int(text.trimmingCharacters(in: .whitespaces)) else { throw error("expected a whole number, found \"\(text)\"") }
        if let range, !range.contains(v) {
            throw error("\(v)\(unit.isEmpty ? "" : " " + unit) is out of range \(range.lowerBound)…\(range.upperBound)\(unit.isEmpty ? "" : " " + unit)")
        }
        return v
    }

    /// true/false (also yes/no, on/off).
    public func bool() throws(SpecError) -> Bool {
        switch try string().lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        case let s: throw error("expected true or false, found \"\(s)\"")
        }
    }

    /// One of two words (case-sensitive), each given with what it means: true for the first.
    /// The error names the option and both meanings: `batch is auto (…) or off (…), not "x"`.
    public func either(_ option: String, _ first: (word: String, means: String),
                       or second: (word: String, means: String)) throws(SpecError) -> Bool {
        switch try string() {
        case first.word: return true
        case second.word: return false
        case let s: throw error("\(option) is \(first.word) (\(first.means)) or \(second.word) (\(second.means)), not \"\(s)\"")
        }
    }

    /// One of `choices` (case-sensitive), with the choices in the error.
    public func choice<T: RawRepresentable>(_ type: T.Type) throws(SpecError) -> T where T.RawValue == String, T: CaseIterable {
        let s = try string()
        guard let v = T(rawValue: s) else {
            throw error("\"\(s)\" is not one of \(T.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return v
    }

    /// A duration: `30s`, `5m`, `1h30m`, `250ms` or a bare number of seconds.
    public func duration() throws(SpecError) -> Double {
        let s = try string()
        guard let v = parseDuration(s) else { throw error("expected a duration such as 30s, 5m or 1h30m, found \"\(s)\"") }
        return v
    }

    /// The items of a sequence (a single scalar counts as a one-item list when `allowSingle`).
    public func list(allowSingle: Bool = false) throws(SpecError) -> [SpecValue] {
        try context.count()
        switch node {
        case .sequence(let seq):
            return seq.enumerated().map { SpecValue(node: $1, path: "\(path)[\($0)]", context: context) }
        case .scalar where allowSingle:
            return [self]
        default:
            throw error("expected a list, found \(kindName)")
        }
    }

    /// The entries of a mapping in document order; rejects keys not in `allowed` (naming the
    /// allowed ones) and duplicate keys.
    public func mapping(allowed: [String]? = nil) throws(SpecError) -> [(key: String, value: SpecValue)] {
        try context.count()
        guard case .mapping(let map) = node else { throw error("expected a mapping of options, found \(kindName)") }
        var out: [(String, SpecValue)] = []
        var seen = Set<String>()
        for (k, v) in map {
            let keyValue = SpecValue(node: k, path: path, context: context)
            guard case .scalar(let ks) = k else { throw keyValue.error("keys must be plain text") }
            let key = ks.string
            let child = SpecValue(node: v, path: path.isEmpty ? key : "\(path).\(key)", context: context)
            if let allowed, !allowed.contains(key) {
                let located = SpecValue(node: k, path: child.path, context: context)
                let hint = SpecError.suggestion(for: key, among: allowed).map { "did you mean \($0)? " } ?? ""
                throw located.error("unknown key \"\(key)\" (\(hint)allowed: \(allowed.joined(separator: ", ")))")
            }
            if !seen.insert(key).inserted { throw child.error("duplicate key") }
            out.append((key, child))
        }
        return out
    }

    /// Options as a dictionary after `mapping(allowed:)`; `required` keys must be present.
    public func options(allowed: [String], required: [String] = []) throws(SpecError) -> SpecOptions {
        let entries = try mapping(allowed: allowed)
        var dict: [String: SpecValue] = [:]
        for e in entries { dict[e.key] = e.value }
        for r in required where dict[r] == nil { throw error("missing required key \"\(r)\"") }
        return SpecOptions(values: dict, owner: self)
    }

    package var kindName: String {
        switch node {
        case .scalar(let s): return "\"\(s.string)\""
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        }
    }

    /// True when the node is a mapping.
    public var isMapping: Bool { if case .mapping = node { return true } else { return false } }
    /// True when the node is a scalar.
    public var isScalar: Bool { if case .scalar = node { return true } else { return false } }
}

/// A stage's options after key checking: `opts["frequency"]?.double(...)`.
public struct SpecOptions {
    package let values: [String: SpecValue]
    /// The mapping node itself, for errors about the whole stage.
    public let owner: SpecValue
    public subscript(_ key: String) -> SpecValue? { values[key] }

    /// Every stored property: the initializer the other modules of segno use (a stage's scalar
    /// shorthand, `encode: "{stem}.flac"`, as its one option).
    package init(values: [String: SpecValue], owner: SpecValue) {
        self.values = values
        self.owner = owner
    }

    /// Keys present.
    public var keys: Set<String> { Set(values.keys) }

    /// `from` as `StageDeclaration.Option.fromSource` declares it: true for `source`, false for
    /// `here` or when absent.
    package func observesSource() throws(SpecError) -> Bool {
        try self["from"]?.either("from", ("source", "the recording as decoded"), or: ("here", "the stream at this place")) ?? false
    }
}

/// Shared state of one spec load: the file name, the environment, and the node budget that
/// stops alias bombs (billion laughs) from expanding.
final package class SpecContext {
    package let file: String
    package let environment: [String: String]
    private var visited = 0
    static package let nodeBudget = 100_000

    package init(file: String, environment: [String: String]) {
        self.file = file
        self.environment = environment
    }

    package func count() throws(SpecError) {
        visited += 1
        if visited > Self.nodeBudget {
            throw SpecError(file: file, message: "the spec expands to more than \(Self.nodeBudget) values (an alias bomb?)")
        }
    }

    /// True for an environment variable's name that holds a secret (issue 33): one with SECRET,
    /// PASSWORD, PASSWD, TOKEN, CREDENTIAL or PRIVATE in it, or ending in _KEY (but not an
    /// access key's id).
    static package func namesSecret(_ name: String) -> Bool {
        let n = name.uppercased()
        return ["SECRET", "PASSWORD", "PASSWD", "TOKEN", "CREDENTIAL", "PRIVATE"].contains { n.contains($0) } || n.hasSuffix("_KEY")
    }

    /// Replaces `${VAR}` and `${VAR:-default}`; a missing variable without default is an error,
    /// and so is a variable that holds a secret (`namesSecret`).
    package func expand(_ text: String, at value: SpecValue) throws(SpecError) -> String {
        guard text.contains("${") else { return text }
        var out = ""
        var rest = Substring(text)
        while let start = rest.range(of: "${") {
            out += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                throw value.error("unclosed ${ in \"\(text)\"")
            }
            let body = rest[start.upperBound..<end]
            let name: Substring, fallback: Substring?
            if let sep = body.range(of: ":-") { name = body[..<sep.lowerBound]; fallback = body[sep.upperBound...] }
            else { name = body; fallback = nil }
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
                throw value.error("\"${\(body)}\" is not a variable name")
            }
            if Self.namesSecret(String(name)) {
                throw value.error("${\(name)} looks like a secret: a spec's values reach the state, the report and uploaded metadata, so secrets are never expanded into them; segno reads credentials from the environment itself (AWS_SECRET_ACCESS_KEY, PGPASSWORD)")
            }
            if let v = environment[String(name)], !v.isEmpty { out += v }
            else if let fallback { out += fallback }
            else { throw value.error("environment variable \(name) is not set (use ${\(name):-default} for a default)") }
            rest = rest[rest.index(after: end)...]
        }
        return out + rest
    }
}

/// Parses `30s`, `5m`, `1h30m`, `250ms`, `2d` or a bare number of seconds; nil if malformed.
public func parseDuration(_ text: String) -> Double? {
    let s = text.trimmingCharacters(in: .whitespaces).lowercased()
    if s.isEmpty { return nil }
    if let v = Double(s), v >= 0 { return v }
    var total = 0.0
    var number = ""
    var i = s.startIndex
    var any = false
    while i < s.endIndex {
        let c = s[i]
        if c.isNumber || c == "." { number.append(c); i = s.index(after: i); continue }
        var unit = String(c)
        let next = s.index(after: i)
        if c == "m", next < s.endIndex, s[next] == "s" { unit = "ms"; i = s.index(after: next) } else { i = next }
        guard let v = Double(number) else { return nil }
        switch unit {
        case "ms": total += v / 1000
        case "s": total += v
        case "m": total += v * 60
        case "h": total += v * 3600
        case "d": total += v * 86400
        default: return nil
        }
        number = ""
        any = true
    }
    return any && number.isEmpty ? total : nil
}
