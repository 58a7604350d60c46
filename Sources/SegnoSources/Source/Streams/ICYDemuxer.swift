import SegnoAudio
import SegnoCore
/// Separates the audio of an Icecast/Shoutcast response requested with `Icy-MetaData: 1` from the
/// metadata blocks interleaved every `icy-metaint` bytes (one length byte ×16, then
/// `StreamTitle='…';StreamUrl='…';` padded with NULs). Events come out in stream order, so a title
/// sits exactly between the audio bytes it arrived between. Pure: fed any chunk sizes, same events.
package struct ICYDemuxer {
    package enum Event: Equatable {
        case audio([UInt8])
        case title(String)
    }

    /// Audio bytes between metadata blocks; 0 = no metadata in this stream.
    package let metaint: Int
    private var untilMeta: Int
    private var metaLength: Int?
    private var meta: [UInt8] = []

    package init(metaint: Int) {
        self.metaint = metaint
        untilMeta = metaint
    }

    /// Splits `bytes` into audio and titles (a block without `StreamTitle` gives no event).
    mutating package func feed(_ bytes: [UInt8]) -> [Event] {
        guard metaint > 0 else { return bytes.isEmpty ? [] : [.audio(bytes)] }
        var events: [Event] = []
        var i = 0
        while i < bytes.count {
            if let len = metaLength {
                let take = min(len - meta.count, bytes.count - i)
                meta += bytes[i..<(i + take)]
                i += take
                if meta.count == len {
                    if let t = Self.streamTitle(meta) { events.append(.title(t)) }
                    meta = []
                    metaLength = nil
                    untilMeta = metaint
                }
            } else if untilMeta == 0 {
                let len = Int(bytes[i]) * 16
                i += 1
                if len == 0 { untilMeta = metaint } else { metaLength = len }
            } else {
                let take = min(untilMeta, bytes.count - i)
                if case .audio(let prev)? = events.last {
                    events[events.count - 1] = .audio(prev + bytes[i..<(i + take)])
                } else {
                    events.append(.audio(Array(bytes[i..<(i + take)])))
                }
                i += take
                untilMeta -= take
            }
        }
        return events
    }

    /// `StreamTitle='Artist - Song';` → "Artist - Song" (UTF-8, else Latin-1); nil when absent.
    static package func streamTitle(_ block: [UInt8]) -> String? {
        let trimmed = block.prefix { $0 != 0 }
        let text = String(validating: trimmed, as: UTF8.self)
            ?? String(trimmed.map { Character(Unicode.Scalar($0)) })
        guard let start = text.range(of: "StreamTitle='") else { return nil }
        let rest = text[start.upperBound...]
        // The value ends at "';" (a title may itself hold an apostrophe).
        let end = rest.range(of: "';")?.lowerBound ?? rest.lastIndex(of: "'") ?? rest.endIndex
        return String(rest[..<end]).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
