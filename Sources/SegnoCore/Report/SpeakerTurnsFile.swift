import Foundation

/// A `speakers` tap's turn file (`{stem}.speakers.json`: a JSON array of `{start, end, speaker,
/// name?, confidence}`, seconds of the source, decision 0073) read back by the report and
/// `segno find --speaker`.
public enum SpeakerTurnsFile {
    /// One turn: source seconds, the label (`speaker-1`) and the enrolled name when there is one.
    public struct Turn: Sendable, Equatable {
        public var start: Double, end: Double
        public var label: String
        public var name: String?
        /// What a reader sees: the name, else the label.
        public var shown: String { name ?? label }

        public init(start: Double, end: Double, label: String, name: String? = nil) {
            self.start = start
            self.end = end
            self.label = label
            self.name = name
        }

        /// True when `query` is this turn's label or name, ignoring case and accents.
        public func isSpoken(by query: String) -> Bool {
            let q = SpeakerTurnsFile.fold(query)
            return SpeakerTurnsFile.fold(label) == q || name.map { SpeakerTurnsFile.fold($0) == q } == true
        }
    }

    /// The largest turn file read (a 10-hour recording with a turn every 2 s is about 1.6 MB).
    public static let largest = 16 << 20

    /// The turns of the file at `path`; nil when it is not a turn file (another JSON output, a
    /// transcript, an unreadable or oversized file).
    public static func read(_ path: String) -> [Turn]? {
        guard path.lowercased().hasSuffix(".json"),
              let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int), size <= largest,
              let data = FileManager.default.contents(atPath: path) else { return nil }
        return parse(data)
    }

    /// The turns of a turn file's bytes; nil when they are not a JSON array of turns.
    public static func parse(_ data: Data) -> [Turn]? {
        guard let items = try? JSONSerialization.jsonObject(with: data) as? [Any] else { return nil }
        var out: [Turn] = []
        for item in items {
            guard let o = item as? [String: Any], let start = (o["start"] as? NSNumber)?.doubleValue,
                  let end = (o["end"] as? NSNumber)?.doubleValue, let label = o["speaker"] as? String else { return nil }
            out.append(Turn(start: start, end: end, label: label, name: (o["name"] as? String).flatMap { $0.isEmpty ? nil : $0 }))
        }
        return out
    }

    /// Who spoke how long: per speaker (as shown), the seconds of their turns and their share of
    /// all the turns' seconds, longest first (ties by name).
    public static func totals(_ turns: [Turn]) -> [(speaker: String, seconds: Double, share: Double)] {
        var seconds: [String: Double] = [:]
        for t in turns { seconds[t.shown, default: 0] += max(0, t.end - t.start) }
        let all = seconds.values.reduce(0, +)
        return seconds.map { (speaker: $0.key, seconds: $0.value, share: all > 0 ? $0.value / all : 0) }
            .sorted { $0.seconds != $1.seconds ? $0.seconds > $1.seconds : $0.speaker < $1.speaker }
    }

    /// The words a turn file adds to the catalogue (`CatalogEntry.spoken`): every label and name,
    /// once each, in order of first turn.
    public static func searchWords(_ turns: [Turn]) -> String {
        var seen = Set<String>(), out: [String] = []
        for t in turns {
            for w in [t.label] + (t.name.map { [$0] } ?? []) where seen.insert(w).inserted { out.append(w) }
        }
        return out.joined(separator: " ")
    }

    static func fold(_ s: String) -> String { s.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }
}
