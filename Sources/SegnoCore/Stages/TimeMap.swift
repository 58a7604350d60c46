/// How a transform moves time: the stretches of its input it keeps, where each starts in its
/// output and how fast it plays (decision 0072). `pauses` keeps stretches between its cuts,
/// `pitch: { tempo }` keeps one stretch at `1 / tempo`; a transform without a map keeps time.
/// Seconds throughout.
public struct TimeMap: Sendable, Equatable {
    /// One kept stretch: input `inputStart..<inputEnd` plays from `outputStart` at `scale`
    /// output seconds per input second.
    public struct Piece: Sendable, Equatable {
        public var inputStart: Double
        public var inputEnd: Double
        public var outputStart: Double
        public var scale: Double
        public init(inputStart: Double, inputEnd: Double, outputStart: Double, scale: Double = 1) {
            self.inputStart = inputStart
            self.inputEnd = inputEnd
            self.outputStart = outputStart
            self.scale = scale
        }
        /// Where the piece ends in the output.
        public var outputEnd: Double { outputStart + (inputEnd - inputStart) * scale }
    }

    /// The kept stretches in order; none for a map that keeps time as it is.
    public var pieces: [Piece]

    public init(pieces: [Piece]) { self.pieces = pieces }

    /// The map of a transform that keeps time.
    public static let identity = TimeMap(pieces: [])

    /// True when times are the same on both sides.
    public var isIdentity: Bool { pieces.allSatisfy { $0.inputStart == $0.outputStart && $0.scale == 1 } }

    /// The input time heard at output time `t`: inside a piece, by its scale; before the first
    /// piece, its start; between pieces or after the last, the end of the piece before.
    public func toInput(_ t: Double) -> Double {
        guard !pieces.isEmpty else { return t }
        var i = 0, hi = pieces.count  // the last piece starting at or before t
        while i + 1 < hi {
            let mid = (i + hi) / 2
            if pieces[mid].outputStart <= t { i = mid } else { hi = mid }
        }
        let p = pieces[i]
        if t <= p.outputStart { return p.inputStart }
        return min(p.inputEnd, p.inputStart + (t - p.outputStart) / p.scale)
    }

    /// The output time of input time `t`; a time inside a removed stretch maps to the cut (where
    /// the next kept stretch begins in the output).
    public func toOutput(_ t: Double) -> Double {
        guard !pieces.isEmpty else { return t }
        for p in pieces {
            if t < p.inputStart { return p.outputStart }
            if t <= p.inputEnd { return p.outputStart + (t - p.inputStart) * p.scale }
        }
        return pieces[pieces.count - 1].outputEnd
    }
}

/// A transform that moves time (decision 0072). Its map is complete once `finish` returned.
public protocol TimelineChanging: AnyObject {
    /// From this transform's input timeline to its output's. Read after `finish`.
    var timeMap: TimeMap { get }
}

/// A tap that stores times and says on which timeline (decision 0072). `StageChain` calls
/// `useTimeline` once, before `start`, with the maps of the time-moving transforms before the tap
/// (first to last); they are complete when the tap's `finish` is called.
public protocol TimelineUsing: AnyObject {
    func useTimeline(_ maps: @escaping () -> [TimeMap])
}

extension Array where Element == TimeMap {
    /// The source time of time `t` on the stream after these maps (applied first to last).
    public func toSource(_ t: Double) -> Double { reversed().reduce(t) { $1.toInput($0) } }
    /// True when no map moves time.
    public var keepsTime: Bool { allSatisfy(\.isIdentity) }
}
