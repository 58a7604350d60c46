import Foundation

/// A transform that moves time (`movesTime`) and whose map a tap of the same spec writes to a
/// file, as a cut list (`pauses` and its `cuts` tap): what the report reads to place times kept
/// on the source's timeline (speaker turns) on a waveform drawn after it (decision 0084).
public protocol TimeMapRecording: TransformConfig {
    /// The identity (`name:path template`, as `Job` names taps) of the tap whose file holds this
    /// transform's map: a JSON object whose `kept` array lists `source_start`, `source_end`,
    /// `output_start` (and `scale`, 1 when absent), seconds of the transform's input and output.
    var timeMapTap: String { get }
}

extension TimeMap {
    /// The map of a cut list's `kept` array (`TimeMapRecording`); nil when `object` has none or
    /// a piece lacks a number.
    public init?(cutList object: [String: Any]) {
        guard let kept = object["kept"] as? [[String: Any]] else { return nil }
        var pieces: [Piece] = []
        for k in kept {
            guard let a = (k["source_start"] as? NSNumber)?.doubleValue, let b = (k["source_end"] as? NSNumber)?.doubleValue,
                  let o = (k["output_start"] as? NSNumber)?.doubleValue, b >= a else { return nil }
            let scale = (k["scale"] as? NSNumber)?.doubleValue ?? 1
            guard scale > 0, scale.isFinite else { return nil }
            pieces.append(Piece(inputStart: a, inputEnd: b, outputStart: o, scale: scale))
        }
        self.init(pieces: pieces)
    }
}

extension Array where Element == TimeMap {
    /// The time on the last map's output of time `t` on the first map's input (source → stream).
    public func toOutput(_ t: Double) -> Double { reduce(t) { $1.toOutput($0) } }
}
