import Foundation

/// A path template such as `{dir}/{stem}.flac` or `{date:%Y/%m}/{name}`, checked when the spec is
/// loaded and resolved once per recording.
///
/// Variables: `{stem}` `{name}` `{ext}` `{dir}` `{relpath}` `{date:FORMAT}` (strftime, the
/// source's modification time, UTC) `{duration}` (seconds, 3 decimals) `{rate}` `{channels}`
/// `{title}` (the source's title tag, else the stem; made a name Linux, SMB shares and FAT cards
/// all take: `pathComponent`) `{recorded}` (ISO 8601 date-time from the source's date tags, else its modification
/// time: `2024-05-01T09:30:12Z`; see `RecordingContext.recorded`), `{tag:NAME}` (any tag of the
/// source by normalised name — `artist`, `album` — or the container's key — `TIT2`; empty when
/// absent; made safe as a file name in paths), plus any names a stage adds
/// (`{zoom}`). Resolved paths are relative to the output root and may never leave it.
public struct PathTemplate: Sendable, Equatable, CustomStringConvertible {
    package enum Part: Sendable, Equatable {
        case literal(String)
        case variable(String, argument: String?)
    }

    /// The template as written.
    public let text: String
    package let parts: [Part]

    /// No file: the template of a tap that writes only to the state database (`fingerprint`
    /// without `path`). Its text is empty and it resolves to no path.
    public static let none = PathTemplate(text: "", parts: [])

    private init(text: String, parts: [Part]) {
        self.text = text
        self.parts = parts
    }

    /// Variables every recording provides.
    public static let standardVariables: Set<String> = ["stem", "name", "ext", "dir", "relpath", "date", "duration", "rate", "channels",
                                                        "title", "recorded", "tag"]

    /// Parses and checks a template. `extraVariables` are names the owning stage provides.
    /// Throws a message (the caller adds the spec location) for unknown variables, unbalanced
    /// braces, absolute paths and `..` components.
    /// `isPath: false` parses a text template (a tag value: `processed {date}`), which may be empty
    /// and may hold `/` and `..`.
    public init(_ text: String, extraVariables: Set<String> = [], isPath: Bool = true) throws(TemplateError) {
        self.text = text
        var parts: [Part] = []
        var literal = ""
        var i = text.startIndex
        while i < text.endIndex {
            let c = text[i]
            if c == "{" {
                guard let close = text[i...].firstIndex(of: "}") else { throw TemplateError("unclosed '{' in \"\(text)\"") }
                let body = String(text[text.index(after: i)..<close])
                if !literal.isEmpty { parts.append(.literal(literal)); literal = "" }
                let name: String, arg: String?
                if let colon = body.firstIndex(of: ":") {
                    name = String(body[..<colon]); arg = String(body[body.index(after: colon)...])
                } else { name = body; arg = nil }
                guard Self.standardVariables.contains(name) || extraVariables.contains(name) else {
                    let known = (Self.standardVariables.union(extraVariables)).sorted().map { "{\($0)}" }.joined(separator: " ")
                    throw TemplateError("unknown variable {\(name)} in \"\(text)\" (known: \(known))")
                }
                if arg != nil && name != "date" && name != "tag" { throw TemplateError("{\(name)} takes no format in \"\(text)\"") }
                if name == "tag" && (arg ?? "").isEmpty { throw TemplateError("{tag} needs a tag name in \"\(text)\": {tag:artist}") }
                if name == "date", let arg, let problem = Self.strftimeProblem(arg) {
                    throw TemplateError("{date:\(arg)} in \"\(text)\": \(problem)")
                }
                parts.append(.variable(name, argument: arg))
                i = text.index(after: close)
            } else if c == "}" {
                throw TemplateError("unmatched '}' in \"\(text)\"")
            } else {
                literal.append(c)
                i = text.index(after: i)
            }
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self.parts = parts
        guard isPath else { return }
        if text.hasPrefix("/") || text.hasPrefix("~") {
            throw TemplateError("\"\(text)\" is absolute; output paths are relative to output.root")
        }
        for case .literal(let l) in parts {
            for comp in l.split(separator: "/", omittingEmptySubsequences: false) where comp == ".." {
                throw TemplateError("\"\(text)\" climbs out of output.root with '..'")
            }
        }
        if text.isEmpty { throw TemplateError("empty path") }
    }

    /// The POSIX strftime conversions (C, `man 3 strftime`); glibc's flags (`_ - 0 ^ #`), a
    /// width and the `E`/`O` modifiers may come before them.
    static package let strftimeConversions = Set("aAbBcCdDeFgGhHIjmMnprRsStTuUVwWxXyYzZ%")

    /// Why `format` is not a strftime format segno can use (`%Q`, a `%` at the end), or nil.
    static package func strftimeProblem(_ format: String) -> String? {
        var i = format.startIndex
        while i < format.endIndex {
            guard format[i] == "%" else { i = format.index(after: i); continue }
            var j = format.index(after: i)
            while j < format.endIndex, "_-0^#".contains(format[j]) || format[j].isNumber || "EO".contains(format[j]) { j = format.index(after: j) }
            guard j < format.endIndex else { return "ends with an unfinished % directive" }
            if !strftimeConversions.contains(format[j]) {
                return "%\(format[j]) is not a strftime directive (e.g. %Y %m %d %H %M %S %j %F; %% for a percent sign)"
            }
            i = format.index(after: j)
        }
        return nil
    }

    /// True when the template uses `name` (e.g. `zoom`).
    public func uses(_ name: String) -> Bool {
        parts.contains { if case .variable(name, _) = $0 { return true } else { return false } }
    }

    /// Resolves against one recording and returns an absolute path inside `context.outputRoot`.
    /// Throws when the result would leave the output root (a file named `..`, say) or has an
    /// empty name.
    public func resolve(_ context: RecordingContext) throws(TemplateError) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .literal(let l): out += l
            case .variable(let name, let arg): out += try value(name, arg, context, forPath: true)
            }
        }
        var comps: [Substring] = []
        for comp in out.split(separator: "/", omittingEmptySubsequences: true) {
            if comp == "." { continue }
            if comp == ".." { throw TemplateError("\"\(text)\" resolves to \"\(out)\", which leaves output.root") }
            comps.append(comp)
        }
        guard let last = comps.last, !last.isEmpty, !out.hasSuffix("/") else {
            throw TemplateError("\"\(text)\" resolves to \"\(out)\", which names no file")
        }
        let root = context.outputRoot.hasSuffix("/") ? String(context.outputRoot.dropLast()) : context.outputRoot
        return root + "/" + comps.joined(separator: "/")
    }

    /// The folder before the first variable, for an absolute (`file://`) target: "/srv/a/{dir}/" →
    /// "/srv/a". Nil when that is the file system's root.
    public var fixedFolder: String? {
        let fixed = "/" + String(text.prefix { $0 != "{" }).drop { $0 == "/" }
        let dir = fixed.hasSuffix("/") ? String(fixed.dropLast()) : (fixed as NSString).deletingLastPathComponent
        return dir.isEmpty || dir == "/" ? nil : dir
    }

    /// Resolves to a folder (upload prefixes, `--out-dir`): like `resolve` but may end in `/` or be empty.
    public func resolveRelative(_ context: RecordingContext) throws(TemplateError) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .literal(let l): out += l
            case .variable(let name, let arg): out += try value(name, arg, context, forPath: false)
            }
        }
        return out
    }

    private func value(_ name: String, _ arg: String?, _ c: RecordingContext, forPath: Bool) throws(TemplateError) -> String {
        switch name {
        case "stem": return c.stem
        case "name": return c.name
        case "ext": return c.ext
        case "dir": return c.dir
        case "relpath": return c.relativePath
        case "date": return Self.strftime(arg ?? "%Y-%m-%d", c.modified)
        case "duration": return c.source.map { String(format: "%.3f", $0.duration) } ?? ""
        case "rate": return c.source.map { String($0.sampleRate) } ?? ""
        case "channels": return c.source.map { String($0.channels) } ?? ""
        case "title": return Self.pathComponent(c.title, fallback: c.stem)
        case "recorded": return c.recorded
        case "tag":
            // Any tag the source carries, by normalised name or the container's own key; empty when absent.
            let v = c.metadata.value(arg ?? "") ?? c.source?.tags?[(arg ?? "").lowercased()] ?? ""
            return forPath ? Self.pathComponent(v, fallback: "") : v
        default:
            guard let v = c.extra[name] else { throw TemplateError("{\(name)} has no value for \(c.relativePath)") }
            return v
        }
    }

    /// A tag value made safe as (part of) one file name on Linux and on the SMB shares and FAT
    /// cards recordings travel to: `/` `\` `:` `|` become `-`, `"` becomes `'`, `?` `*` `<` `>`
    /// are dropped, control characters become spaces; trailing dots and spaces are dropped (Windows
    /// drops them), a device name (`CON`, `NUL`, `COM1`, …) gets a `_`; at most 200 bytes;
    /// `fallback` when nothing usable is left ("", ".", "..").
    static package func pathComponent(_ value: String, fallback: String) -> String {
        var out = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "/", "\\", ":", "|": out += "-"
            case "\"": out += "'"
            case "?", "*", "<", ">": continue
            default:
                if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) { out += " " } else { out.unicodeScalars.append(scalar) }
            }
        }
        out = out.trimmingCharacters(in: .whitespaces)
        while out.utf8.count > 200 { out.removeLast() }
        while let last = out.last, last == "." || last == " " { out.removeLast() }
        let device = out.split(separator: ".", maxSplits: 1).first.map { $0.uppercased().trimmingCharacters(in: .whitespaces) } ?? ""
        if Self.deviceNames.contains(device) { out = String(out.prefix(device.count)) + "_" + String(out.dropFirst(device.count)) }
        return out.isEmpty || out == "." || out == ".." ? fallback : out
    }

    /// Names Windows (and so an SMB share or a FAT card read there) keeps for devices, with or
    /// without an extension.
    static package let deviceNames: Set<String> = Set(["CON", "PRN", "AUX", "NUL"] + (1...9).flatMap { ["COM\($0)", "LPT\($0)"] })

    static package func strftime(_ format: String, _ date: Date) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        var buf = [CChar](repeating: 0, count: 256)
        let n = Foundation.strftime(&buf, buf.count, format, &tmv)
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { text }
}

/// A problem with a path template; the spec loader adds the file, line and key.
public struct TemplateError: Error, Sendable, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
