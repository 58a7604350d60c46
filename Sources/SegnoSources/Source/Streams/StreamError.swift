import Foundation
import SegnoAudio
import SegnoCore

/// Why a station could not be recorded (or stopped being recorded). Every message is one line
/// that names the URL.
public enum StreamError: Error, Sendable, CustomStringConvertible {
    /// A playlist that holds nothing usable, or a kind segno does not record.
    case playlist(URL, String)
    /// The server answered with an HTTP status other than 200 (after redirects).
    case status(URL, Int)
    /// No connection, a timeout, a reset: the network's or the server's fault, worth a retry.
    case connection(URL, String)
    /// The server sent something segno cannot record (a content type, a malformed reply).
    case unsupported(URL, String)
    /// Writing a segment failed (ffmpeg, the capture folder).
    case capture(String)

    public var description: String {
        switch self {
        case .playlist(let u, let m): return "\(u.absoluteString): playlist \(m)"
        case .status(let u, let c): return "\(u.absoluteString): HTTP status \(c)"
        case .connection(let u, let m): return "\(u.absoluteString): \(m)"
        case .unsupported(let u, let m): return "\(u.absoluteString): \(m)"
        case .capture(let m): return m
        }
    }

    /// True for failures a later attempt may not see (connection, 5xx): reconnect with back-off.
    package var isTransient: Bool {
        switch self {
        case .connection: return true
        case .status(_, let c): return c >= 500 || c == 404 || c == 408 || c == 429
        default: return false
        }
    }
}
