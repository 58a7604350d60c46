import Foundation

/// A JSON value that keeps object keys in the order given (reports, `info --json`, sidecars).
public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.serialized() == b.serialized() }

    /// The same value with every string's bytes of a name that is not UTF-8 written as `\xe9`
    /// (`FileNameBytes.escaped`): for what segno prints or writes for people and other programs
    /// (`run --report`, `outputs --json`, the report's data), never for what it reads back.
    public func escapingFileNameBytes() -> JSONValue {
        switch self {
        case .string(let s): return .string(FileNameBytes.escaped(s))
        case .array(let a): return .array(a.map { $0.escapingFileNameBytes() })
        case .object(let o): return .object(o.map { ($0.0, $0.1.escapingFileNameBytes()) })
        default: return self
        }
    }

    /// Compact, one-line JSON.
    public func serialized() -> String {
        var out = ""
        write(to: &out)
        return out
    }

    package func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            if d.isFinite {
                out += d == d.rounded() && abs(d) < 1e15 ? String(format: "%.1f", d) : String(format: "%.17g", d).trimmedNumber
            } else { out += "null" }
        case .string(let s): Self.escape(s, into: &out)
        case .array(let a):
            out += "["
            for (i, v) in a.enumerated() { if i > 0 { out += "," }; v.write(to: &out) }
            out += "]"
        case .object(let o):
            out += "{"
            for (i, (k, v)) in o.enumerated() {
                if i > 0 { out += "," }
                Self.escape(k, into: &out)
                out += ":"
                v.write(to: &out)
            }
            out += "}"
        }
    }

    /// True for the characters besides C0 that `AudioError.quoted` also escapes: DEL, C1, Unicode
    /// line and paragraph separators, and bidirectional controls.
    static package func steers(_ u: Unicode.Scalar) -> Bool {
        (0x7F...0x9F).contains(u.value) || [0x2028, 0x2029, 0x200E, 0x200F, 0x061C].contains(u.value)
            || (0x202A...0x202E).contains(u.value) || (0x2066...0x2069).contains(u.value)
    }

    static package func escape(_ s: String, into out: inout String) {
        out += "\""
        // Most strings need nothing escaped: copied whole (a tag value may be a megabyte).
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 == 0x7F
                                     || $0 == 0xC2 || $0 == 0xD8 || $0 == 0xE2 }) {
            out += s
            out += "\""
            return
        }
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                // Control characters, C1 (0x9B is a terminal's CSI), line separators and bidi
                // overrides as \u escapes: valid JSON that cannot steer a terminal it is printed to.
                if u.value < 0x20 || Self.steers(u) { out += String(format: "\\u%04x", u.value) } else { out.unicodeScalars.append(u) }
            }
        }
        out += "\""
    }

    /// A number rounded to `places` decimals (durations: 3).
    public static func rounded(_ v: Double, places: Int) -> JSONValue {
        let p = pow(10, Double(places))
        return .double((v * p).rounded() / p)
    }
}

extension String {
    /// "0.10000000000000001" → shortest form that round-trips.
    package var trimmedNumber: String {
        if let d = Double(self) { return "\(d)" }
        return self
    }
}
