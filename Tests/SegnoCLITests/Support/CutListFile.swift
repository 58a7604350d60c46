import Foundation

/// A `pauses` cut list as written (`{stem}.cuts.json`), read with `JSONSerialization`, not
/// segno's own code: what the tests that check where times land after the cuts compute from.
struct CutListFile {
    /// The kept stretches: (source_start, source_end, output_start), seconds.
    let kept: [(Double, Double, Double)]
    let json: [String: Any]
    var sourceDuration: Double { (json["source_duration"] as? NSNumber)?.doubleValue ?? 0 }
    var outputDuration: Double { (json["output_duration"] as? NSNumber)?.doubleValue ?? 0 }

    init(path: String) throws {
        json = try RunWorkspace.json(String(contentsOfFile: path, encoding: .utf8))
        kept = (json["kept"] as? [[String: Any]] ?? []).map {
            (($0["source_start"] as? NSNumber)?.doubleValue ?? 0, ($0["source_end"] as? NSNumber)?.doubleValue ?? 0, ($0["output_start"] as? NSNumber)?.doubleValue ?? 0)
        }
    }

    /// Where source time `t` lands in the output, by hand: inside a kept stretch,
    /// output_start + (t − source_start); in a removed stretch, the next stretch's output_start;
    /// after the last, that stretch's end.
    func place(_ t: Double) -> Double {
        for k in kept {
            if t < k.0 { return k.2 }
            if t <= k.1 { return k.2 + t - k.0 }
        }
        return kept.last.map { $0.2 + $0.1 - $0.0 } ?? t
    }
}
