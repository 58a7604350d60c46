import Foundation

/// What `segno find` knows of a recording: the words it is found by (title, tag values, file
/// name), when it was recorded and where. Made by the runner from the recording's context each
/// time the source is decoded, and kept in the `catalog` table (with its FTS5 index).
public struct CatalogEntry: Sendable, Equatable {
    /// `RecordingContext.title`: the title tag, else the file's stem.
    public var title: String
    /// The values of the descriptive tags (artist, album, comment, genre, …), one per line.
    public var tags: String
    /// The path relative to the input root ("2024/memo 1.m4a").
    public var name: String
    /// ISO 8601 (`RecordingContext.recorded`): "2024-05-01T09:30:12Z" or "2024-05-01".
    public var recorded: String
    /// Degrees, from the ISO 6709 `location` tag (an iPhone's `©xyz`); nil when none.
    public var latitude: Double?
    public var longitude: Double?
    /// Seconds, when known.
    public var duration: Double?
    /// What was said, from the recording's transcript (`transcribe`); empty when none.
    public var spoken: String = ""
    /// The recording's chapters and markers (source seconds), kept so `find` prints their times
    /// without opening the file (decision 0096); nil when not known (stored as NULL).
    public var chapters: ChapterList?

    public init(title: String, tags: String, name: String, recorded: String, latitude: Double? = nil, longitude: Double? = nil,
                duration: Double? = nil) {
        self.title = title
        self.tags = tags
        self.name = name
        self.recorded = recorded
        self.latitude = latitude
        self.longitude = longitude
        self.duration = duration
    }

    /// Tags that describe the file, not the recording: not searched.
    static package let technicalTags: Set<String> = TagNames.technical.union(["title", "date", "location", "location-eng", "language",
                                                                      "origination", "time_reference"])

    public init(context: RecordingContext, duration: Double?) {
        let tags = context.source?.tags ?? [:]
        let words = tags.filter { !Self.technicalTags.contains($0.key) && !$0.key.hasPrefix("com.apple.quicktime.location") }
            .sorted { $0.key < $1.key }.map(\.value).filter { !$0.isEmpty }
            // Chapter and marker titles, each after its source time, so `find` matches and shows them (issue 32).
            + (context.metadata.chapterList.chapters + context.metadata.chapterList.markers).filter { !$0.title.isEmpty }
                .map { "\(ChapterTime.text($0.start)) \($0.title)" }
        let place = (tags["location"] ?? tags["com.apple.quicktime.location.iso6709"]).flatMap(Self.iso6709)
        // The name as searched: bytes that are not UTF-8 read as Latin-1, so "cafe" finds caf\xe9.wav.
        self.init(title: context.title, tags: words.joined(separator: "\n"), name: FileNameBytes.latin1Reading(context.relativePath), recorded: context.recorded,
                  latitude: place?.latitude, longitude: place?.longitude, duration: duration)
        chapters = context.metadata.chapterList
    }

    /// Latitude and longitude in degrees from an ISO 6709 point: "+37.5665+126.9780/",
    /// "+37.5665+126.9780+012.345/" (altitude ignored), or the degrees-minutes(-seconds) forms
    /// "+3733.99+12658.68/" and "+373359.9+1265841.2/". Nil for anything else or out of range.
    public static func iso6709(_ text: String) -> (latitude: Double, longitude: Double)? {
        var fields: [(sign: Double, digits: String)] = []
        var current: (Double, String)? = nil
        for c in text.trimmingCharacters(in: .whitespaces) {
            if c == "+" || c == "-" {
                if let cur = current { fields.append(cur) }
                current = (c == "-" ? -1 : 1, "")
            } else if c.isASCII && (c.isNumber || c == ".") {
                guard current != nil else { return nil }
                current!.1.append(c)
            } else if c == "/" {
                break
            } else if c.isLetter {
                // "CRSWGS_84" and the like follow the altitude; the point is complete by then.
                break
            } else {
                return nil
            }
        }
        if let cur = current { fields.append(cur) }
        guard fields.count >= 2 else { return nil }
        func degrees(_ f: (sign: Double, digits: String), degreeDigits: Int) -> Double? {
            let intPart = f.digits.prefix { $0 != "." }
            guard !intPart.isEmpty, let value = Double(f.digits) else { return nil }
            switch intPart.count - degreeDigits {
            case 0: return f.sign * value
            case 2:
                let d = (value / 100).rounded(.down)
                return f.sign * (d + (value - d * 100) / 60)
            case 4:
                let d = (value / 10000).rounded(.down)
                let rest = value - d * 10000
                let m = (rest / 100).rounded(.down)
                return f.sign * (d + m / 60 + (rest - m * 100) / 3600)
            default: return nil
            }
        }
        guard let lat = degrees(fields[0], degreeDigits: 2), let lon = degrees(fields[1], degreeDigits: 3),
              abs(lat) <= 90, abs(lon) <= 180 else { return nil }
        return (lat, lon)
    }

    /// Great-circle distance in kilometres (haversine, mean Earth radius 6371.0088 km).
    public static func distanceKm(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let r = Double.pi / 180
        let dLat = (lat2 - lat1) * r, dLon = (lon2 - lon1) * r
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * r) * cos(lat2 * r) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * 6371.0088 * asin(min(1, a.squareRoot()))
    }
}
