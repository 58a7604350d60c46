import Foundation
import SegnoAudio
import SegnoCore

/// What a station's URL returned when it is not audio: a list of stream URLs (`.pls`, `.m3u`, a
/// plain `.m3u8`), an HLS master playlist (renditions) or an HLS media playlist (segments).
/// Parsing is pure: relative URLs are resolved against `base` (the URL after redirects).
public enum Playlist: Sendable, Equatable {
    /// Stream URLs in the playlist's order: the first that answers is recorded, the others are fallbacks.
    case entries([URL])
    /// HLS renditions, best first (highest bandwidth; audio-only renditions before video ones).
    case hlsMaster([HLSVariant])
    case hlsMedia(HLSMediaPlaylist)

    /// An HLS rendition: its media playlist and what the master says of it.
    public struct HLSVariant: Sendable, Equatable {
        public var url: URL
        public var bandwidth: Int
        public var codecs: String?
    }

    /// Content types that announce a playlist rather than audio.
    static package let playlistTypes: Set<String> = [
        "audio/x-scpls", "application/pls+xml", "audio/scpls", "audio/x-mpegurl", "audio/mpegurl", "application/x-mpegurl",
        "application/vnd.apple.mpegurl", "application/vnd.apple.mpegurl.audio",
    ]
    /// URL extensions that name a playlist.
    static package let playlistExtensions: Set<String> = ["pls", "m3u", "m3u8"]

    /// True when a response of `contentType` from `url` is a playlist (read whole and parsed)
    /// rather than the audio stream itself.
    static package func isPlaylist(contentType: String?, url: URL) -> Bool {
        let type = (contentType ?? "").split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        if playlistTypes.contains(type) { return true }
        if type.hasPrefix("audio/") && type != "audio/x-mpegurl" { return false }
        return playlistExtensions.contains(url.pathExtension.lowercased())
    }

    /// Parses playlist text of any kind; throws a one-line message when it holds no stream.
    public static func parse(_ text: String, base: URL) throws(StreamError) -> Playlist {
        let lines = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let body = lines.first.map { $0.hasPrefix("\u{FEFF}") ? [String($0.dropFirst())] + lines.dropFirst() : lines } ?? []
        let result: Playlist
        if body.first?.lowercased() == "[playlist]" {
            result = .entries(parsePLS(body, base: base))
        } else if body.contains(where: { $0.hasPrefix("#EXT-X-STREAM-INF") }) {
            result = .hlsMaster(parseMaster(body, base: base))
        } else if body.contains(where: { $0.hasPrefix("#EXT-X-TARGETDURATION") || $0.hasPrefix("#EXT-X-MEDIA-SEQUENCE") }) {
            result = .hlsMedia(try HLSMediaPlaylist.parse(body, base: base))
        } else {
            result = .entries(body.filter { !$0.hasPrefix("#") }.compactMap { resolve($0, base) })
        }
        switch result {
        case .entries(let e) where e.isEmpty: throw .playlist(base, "holds no stream URL")
        case .hlsMaster(let v) where v.isEmpty: throw .playlist(base, "HLS master playlist lists no rendition")
        default: return result
        }
    }

    /// `FileN=` entries in N order (a PLS may list them out of order); `Title`/`Length` ignored.
    static package func parsePLS(_ lines: [String], base: URL) -> [URL] {
        var files: [(Int, URL)] = []
        for line in lines {
            guard let eq = line.firstIndex(of: "=") else { continue }
            let key = line[..<eq].lowercased()
            guard key.hasPrefix("file"), let n = Int(key.dropFirst(4)) else { continue }
            if let u = resolve(String(line[line.index(after: eq)...]).trimmingCharacters(in: .whitespaces), base) { files.append((n, u)) }
        }
        return files.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Renditions of a master playlist, best first. Audio renditions named by `#EXT-X-MEDIA:TYPE=AUDIO`
    /// with a URI come first (by the bandwidth of the variants that use their group), then the
    /// variants themselves by bandwidth; audio-only variants (CODECS without a video codec) win ties.
    static package func parseMaster(_ lines: [String], base: URL) -> [HLSVariant] {
        var variants: [(HLSVariant, group: String?)] = []
        var audioMedia: [(group: String, url: URL, isDefault: Bool)] = []
        var pending: [String: String]?
        for line in lines {
            if line.hasPrefix("#EXT-X-STREAM-INF:") {
                pending = attributes(String(line.dropFirst("#EXT-X-STREAM-INF:".count)))
            } else if line.hasPrefix("#EXT-X-MEDIA:") {
                let a = attributes(String(line.dropFirst("#EXT-X-MEDIA:".count)))
                if a["TYPE"] == "AUDIO", let uri = a["URI"], let group = a["GROUP-ID"], let u = resolve(uri, base) {
                    audioMedia.append((group, u, a["DEFAULT"] == "YES"))
                }
            } else if !line.hasPrefix("#"), let a = pending {
                pending = nil
                guard let u = resolve(line, base) else { continue }
                let bw = Int(a["BANDWIDTH"] ?? "") ?? Int(a["AVERAGE-BANDWIDTH"] ?? "") ?? 0
                variants.append((HLSVariant(url: u, bandwidth: bw, codecs: a["CODECS"]), a["AUDIO"]))
            }
        }
        func isAudioOnly(_ v: HLSVariant) -> Bool {
            guard let c = v.codecs?.lowercased() else { return false }
            return !["avc", "hvc", "hev", "vp0", "vp9", "av01", "mp4v"].contains(where: { c.contains($0) })
        }
        var out: [HLSVariant] = []
        // Audio renditions: each takes the highest bandwidth of the variants in its group.
        var renditions: [(HLSVariant, Bool)] = []
        for m in audioMedia where !renditions.contains(where: { $0.0.url == m.url }) {
            let bw = variants.filter { $0.group == m.group }.map(\.0.bandwidth).max() ?? 0
            renditions.append((HLSVariant(url: m.url, bandwidth: bw, codecs: nil), m.isDefault))
        }
        out += renditions.sorted { ($0.0.bandwidth, $0.1 ? 1 : 0) > ($1.0.bandwidth, $1.1 ? 1 : 0) }.map(\.0)
        let sorted = variants.map(\.0).sorted { a, b in
            a.bandwidth != b.bandwidth ? a.bandwidth > b.bandwidth : (isAudioOnly(a) && !isAudioOnly(b))
        }
        for v in sorted where !out.contains(where: { $0.url == v.url }) { out.append(v) }
        return out
    }

    /// `KEY=value,KEY="quoted, value"` → dictionary.
    static package func attributes(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        var key = "", value = "", inKey = true, quoted = false
        func flush() {
            let k = key.trimmingCharacters(in: .whitespaces)
            if !k.isEmpty { out[k] = value }
            key = ""; value = ""; inKey = true
        }
        for c in text {
            if inKey {
                if c == "=" { inKey = false } else if c == "," { flush() } else { key.append(c) }
            } else if c == "\"" {
                quoted.toggle()
            } else if c == "," && !quoted {
                flush()
            } else {
                value.append(c)
            }
        }
        flush()
        return out
    }

    /// A playlist line as an absolute http(s) URL, or nil.
    static package func resolve(_ text: String, _ base: URL) -> URL? {
        guard !text.isEmpty, let u = URL(string: text, relativeTo: base)?.absoluteURL,
              let s = u.scheme?.lowercased(), s == "http" || s == "https" else { return nil }
        return u
    }
}

/// An HLS media playlist: its segments with sequence numbers, durations and `#EXTINF` titles.
public struct HLSMediaPlaylist: Sendable, Equatable {
    public struct Segment: Sendable, Equatable {
        public var sequence: Int
        public var url: URL
        /// Seconds (`#EXTINF`).
        public var duration: Double
        /// The `#EXTINF` title, nil when empty.
        public var title: String?
    }
    public var targetDuration: Double
    public var segments: [Segment]
    /// `#EXT-X-ENDLIST`: no segment will be added.
    public var ended: Bool

    static package func parse(_ lines: [String], base: URL) throws(StreamError) -> HLSMediaPlaylist {
        var target = 6.0, sequence = 0, ended = false
        var segments: [Segment] = []
        var pending: (Double, String?)?
        for line in lines {
            if line.hasPrefix("#EXT-X-TARGETDURATION:") {
                target = Double(line.dropFirst("#EXT-X-TARGETDURATION:".count)) ?? target
            } else if line.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") {
                sequence = Int(line.dropFirst("#EXT-X-MEDIA-SEQUENCE:".count)) ?? 0
            } else if line.hasPrefix("#EXT-X-MAP") {
                throw .playlist(base, "HLS with fragmented MP4 segments (#EXT-X-MAP) is not supported; segno records MPEG-TS and ADTS segments")
            } else if line.hasPrefix("#EXT-X-KEY"), !line.contains("METHOD=NONE") {
                throw .playlist(base, "encrypted HLS (#EXT-X-KEY) is not supported")
            } else if line.hasPrefix("#EXT-X-ENDLIST") {
                ended = true
            } else if line.hasPrefix("#EXTINF:") {
                let rest = line.dropFirst("#EXTINF:".count)
                let comma = rest.firstIndex(of: ",")
                let d = Double(comma.map { rest[..<$0] } ?? rest) ?? target
                let t = comma.map { rest[rest.index(after: $0)...].trimmingCharacters(in: .whitespaces) }
                pending = (d, t?.isEmpty == false ? t : nil)
            } else if !line.hasPrefix("#"), let p = pending {
                pending = nil
                guard let u = Playlist.resolve(line, base) else { continue }
                segments.append(Segment(sequence: sequence + segments.count, url: u, duration: p.0, title: p.1))
            }
        }
        return HLSMediaPlaylist(targetDuration: max(0.5, target), segments: segments, ended: ended)
    }
}
