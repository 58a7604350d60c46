import Foundation

/// Why a recording could not be read or written. Every message names the file and the cause,
/// so a user reading one line of a cron mail knows what to fix.
public enum AudioError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The path does not exist.
    case missing(path: String)
    /// The path is a directory, a socket or another non-file.
    case notAFile(path: String)
    /// The file exists but could not be opened for reading (permissions).
    case unreadable(path: String, reason: String)
    /// The file is empty (0 bytes).
    case empty(path: String)
    /// The content is not audio segno can decode; `looksLike` names what it is when known.
    case unrecognised(path: String, looksLike: String?, detail: String)
    /// The header promises more audio than the file holds, or the decoder ran out early.
    case truncated(path: String, detail: String)
    /// The decoder failed in the middle of the stream.
    case decodeFailed(path: String, detail: String)
    /// The content needs a program that is not installed (AAC needs `ffmpeg` on PATH); `detail`
    /// says what the file holds and how to install the program.
    case missingDecoder(path: String, detail: String)
    /// The output format needs a program that is not installed (AAC and ALAC output need `ffmpeg`
    /// on PATH); `detail` says what and how to install it.
    case missingEncoder(path: String, detail: String)
    /// The encoder could not be set up or failed while writing.
    case encodeFailed(path: String, detail: String)
    /// The requested output format is unknown or does not fit the audio (e.g. Opus at 44.1 kHz).
    case unsupportedOutput(path: String, detail: String)
    /// Creating, syncing, writing or renaming a file failed; `code` is the `errno` when known
    /// (it decides the failure class: ENOSPC and EROFS are the environment's, EINTR transient).
    case io(path: String, detail: String, code: Int32 = 0)
    /// segno refuses to write there: outside `output.root`, through a symbolic link, over a file it
    /// did not write, a name longer than the file system takes.
    case refused(path: String, detail: String)

    public var path: String {
        switch self {
        case .missing(let p), .notAFile(let p), .unreadable(let p, _), .empty(let p),
             .unrecognised(let p, _, _), .truncated(let p, _), .decodeFailed(let p, _), .missingDecoder(let p, _),
             .missingEncoder(let p, _), .encodeFailed(let p, _), .unsupportedOutput(let p, _), .io(let p, _, _), .refused(let p, _):
            return p
        }
    }

    public var description: String {
        let p = Self.quoted(path)
        switch self {
        case .missing: return "\(p): no such file"
        case .notAFile: return "\(p): not a regular file"
        case .unreadable(_, let r): return "\(p): cannot open: \(r)"
        case .empty: return "\(p): empty file (0 bytes)"
        case .unrecognised(_, let like, let d):
            if let like { return "\(p): not audio segno can read: looks like \(like) (\(d))" }
            return "\(p): not audio segno can read (\(d))"
        case .truncated(_, let d): return "\(p): truncated: \(d)\(Self.salvageHint(for: path))"
        case .decodeFailed(_, let d): return "\(p): decode failed: \(d)\(isDamage ? Self.salvageHint(for: path) : "")"
        case .missingDecoder(_, let d): return "\(p): \(d)"
        case .missingEncoder(_, let d): return "\(p): \(d)"
        case .encodeFailed(_, let d): return "\(p): encode failed: \(d)"
        case .unsupportedOutput(_, let d): return "\(p): \(d)"
        case .io(_, let d, _): return "\(p): \(d)"
        case .refused(_, let d): return "\(p): \(d)"
        }
    }

    /// The way out for a damaged recording, appended to the messages of `.truncated` and of a
    /// `.decodeFailed` that is damage.
    public static let salvageHint = " (to keep what it holds: `segno repair`, --salvage, or input: { damaged: salvage })"
    /// The way out for the damaged recording at `path`: `segno repair` only for the MP4 family
    /// ADTS AAC and Ogg (by extension), which it repairs; salvage for every format.
    static func salvageHint(for path: String) -> String {
        let mp4 = ["m4a", "mp4", "m4b", "mov", "3gp", "3g2", "m4v", "aac", "ogg", "oga", "opus"].contains((path as NSString).pathExtension.lowercased())
        return mp4 ? salvageHint : " (to keep what it holds: --salvage, or input: { damaged: salvage })"
    }

    /// True when the error says the file is damaged (cut short, lost sync, junk, a missing index):
    /// salvaging may recover what it holds.
    public var isDamage: Bool {
        switch self {
        case .truncated: return true
        case .decodeFailed(_, let d):
            return ["damaged", "lost sync", "truncated", "corrupt", "moov", "Invalid data", "exhausted", "sync"].contains { d.contains($0) }
        default: return false
        }
    }

    /// An `.io` error for a failed system call, with `errno`'s text and code.
    public static func system(_ path: String, _ what: String, errno code: Int32) -> AudioError {
        .io(path: path, detail: "\(what): \(String(cString: strerror(code)))", code: code)
    }

    /// A path (or any text a recording carries: a title, a transcript's words) as it appears in
    /// messages: the one escaping rule for everything segno prints (issue 33). Control
    /// characters (newlines in hostile names, ESC sequences, carriage returns), Unicode line
    /// separators and bidirectional overrides are escaped, and bytes of names that are not
    /// UTF-8 written `\xe9`, so one item stays one line and no text can steer the terminal.
    public static func quoted(_ path: String) -> String {
        // Nothing to escape in most text: no control byte, and no lead byte of a C1 control
        // (C2), U+061C (D8), a separator or bidi control (E2) or a name's byte (F4).
        if !path.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 || $0 == 0xD8 || $0 == 0xE2 || $0 == 0xF4 }) {
            return path
        }
        var out = ""
        for scalar in path.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                    out += "\\x" + String(scalar.value, radix: 16)
                } else if JSONValue.steers(scalar) {
                    out += "\\u{" + String(scalar.value, radix: 16) + "}"
                } else if FileNameBytes.isByte(scalar) {
                    out += FileNameBytes.escaped(String(scalar))  // a byte of a name that is not UTF-8
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}
