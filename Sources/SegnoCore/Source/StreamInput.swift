import Foundation

extension JobSpec {
    /// `input.streams` and `input.record`: stations recorded for a window, cut into segments that
    /// land in the capture folder, which the run then processes like any folder of recordings.
    public struct StreamInput: Sendable {
        /// One station: a name (its folder in the capture folder) and a URL (`.pls`, `.m3u`,
        /// `.m3u8` playlist, HLS master or media playlist, or the audio stream itself).
        public struct Station: Sendable, Equatable {
            public var name: String
            public var url: URL
        }
        public var stations: [Station]
        /// How long to record, seconds (the sleep timer).
        public var duration: Double
        /// Length of each segment file, seconds (the last one may be shorter).
        public var segment: Double
        /// Absolute capture folder (also `input.root`).
        public var capture: String
        /// Seconds to wait for a server to answer or to send more audio before the connection
        /// counts as dropped.
        public var timeout: Double
    }
}

/// Reads `input.streams` and `input.record`; every check happens here, with line and column.
package enum StreamInputParser {
    /// Longest window accepted: a day.
    static package let durationRange = 1.0...86_400.0
    /// Shortest segment: one second (shorter would be all container overhead).
    static package let minimumSegment = 1.0

    static package func parse(streams: SpecValue, record: SpecValue?, input: SpecValue, base: String, environment: [String: String]) throws(SpecError) -> JobSpec.StreamInput {
        let items = try streams.list()
        if items.isEmpty { throw streams.error("no stations: add at least one { name: …, url: … }") }
        var stations: [JobSpec.StreamInput.Station] = []
        for item in items {
            let o = try item.options(allowed: ["name", "url"], required: ["name", "url"])
            let name = try o["name"]!.string()
            if let problem = nameProblem(name) { throw o["name"]!.error(problem) }
            if stations.contains(where: { $0.name == name }) { throw o["name"]!.error("station \"\(name)\" is named twice") }
            let text = try o["url"]!.string()
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
                  url.host?.isEmpty == false else {
                throw o["url"]!.error("\"\(text)\" is not an http:// or https:// URL")
            }
            stations.append(.init(name: name, url: url))
        }
        guard let record else { throw input.error("input.streams needs record: { duration: 60m, segment: 15m, capture: ./captures }") }
        let r = try record.options(allowed: ["duration", "segment", "capture", "timeout"], required: ["duration"])
        let duration = try r["duration"]!.duration()
        if !durationRange.contains(duration) { throw r["duration"]!.error("duration must be between 1 s and 24 h") }
        let segment = try r["segment"]?.duration() ?? duration
        if segment < minimumSegment { throw r["segment"]!.error("segment must be at least 1 s") }
        if segment > duration { throw r["segment"]!.error("segment (\(canonicalNumber(segment)) s) is longer than duration (\(canonicalNumber(duration)) s)") }
        let timeout = try r["timeout"]?.duration() ?? 10
        if !(0.5...300).contains(timeout) { throw r["timeout"]!.error("timeout must be between 0.5 s and 5 m") }
        let captureText = try r["capture"]?.string() ?? "./captures"
        let capture = SpecLoader.absolute(captureText, base: base, environment: environment)
        if capture == "/" { throw (r["capture"] ?? record).error("record.capture cannot be /") }
        return JobSpec.StreamInput(stations: stations, duration: duration, segment: segment, capture: capture, timeout: timeout)
    }

    /// Why `name` cannot be a station's folder name, or nil: letters, digits, `-`, `_`, `.`, not
    /// starting with a dot, at most 64 bytes.
    static package func nameProblem(_ name: String) -> String? {
        if name.isEmpty { return "a station needs a name" }
        if name.utf8.count > 64 { return "station name \"\(name)\" is longer than 64 bytes" }
        if name.hasPrefix(".") { return "station name \"\(name)\" cannot start with a dot" }
        let ok = name.unicodeScalars.allSatisfy { c in
            (c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "-" || c == "_" || c == ".") && c.value > 32
        }
        return ok ? nil : "station name \"\(name)\" may hold only letters, digits, '-', '_' and '.' (it names a folder)"
    }
}
