import Foundation

/// `split:` in a spec: whether a long recording may use more than one core (decision 0085).
public enum SplitMode: String, Sendable, CaseIterable {
    /// The runner decides (`SplitRule`): the default.
    case auto
    /// Every recording runs on one thread, whatever its length.
    case off
}

/// When the runner gives one recording more than one core (decision 0085): its decode, its
/// transforms and its taps then run as a pipeline on three threads (`ChainPipeline`). A recording
/// is split when the spec does not pin `split: off`, its chain has a transform, it lasts at least
/// `minimumSeconds`, and the machine has more cores than recordings pending (this one included).
/// Asked once per recording when its worker starts it, and by `--explain` for the plan.
public struct SplitRule: Sendable {
    /// Recordings shorter than this (seconds of source audio, from the header) are never split:
    /// for a short recording the threads' start-up is not worth it, and a folder of them keeps
    /// every core busy one recording per worker. Quoted by `segno run --help` and the docs.
    public static let minimumSeconds: Double = 600

    /// Seconds from which a recording may be split (`minimumSeconds`; tests lower it).
    public var minimumSeconds: Double
    /// Cores of the machine (active processors).
    public var cores: Int
    /// The spec's `split:`.
    public var mode: SplitMode

    public init(mode: SplitMode, cores: Int = ProcessInfo.processInfo.activeProcessorCount, minimumSeconds: Double = SplitRule.minimumSeconds) {
        self.mode = mode
        self.cores = cores
        self.minimumSeconds = minimumSeconds
    }

    /// The rule's answer for one recording, with the reason `--explain` prints.
    public struct Decision: Sendable, Equatable {
        public var split: Bool
        /// "2 h 0 min ≥ 10 min, 2 cores for 1 pending recording"
        public var reason: String
    }

    /// Decides for one recording. `seconds`: its length (nil when not known before decoding);
    /// `pending`: recordings not yet finished in this run, this one included; `hasTransform`:
    /// whether its chain has a transform (a chain of taps alone is not split).
    public func decide(seconds: Double?, pending: Int, hasTransform: Bool) -> Decision {
        let threshold = Self.duration(minimumSeconds)
        if mode == .off { return Decision(split: false, reason: "the spec pins split: off") }
        if !hasTransform { return Decision(split: false, reason: "the chain has no transform to run beside the decoder and taps") }
        if pending >= cores {
            return Decision(split: false, reason: "\(pending) recording\(pending == 1 ? "" : "s") pending for \(cores) core\(cores == 1 ? "" : "s")")
        }
        guard let seconds else {
            return Decision(split: false, reason: "length unknown until it is opened (split when at least \(threshold))")
        }
        if seconds < minimumSeconds { return Decision(split: false, reason: "\(Self.duration(seconds)) < \(threshold)") }
        return Decision(split: true, reason: "\(Self.duration(seconds)) ≥ \(threshold), \(cores) cores for \(pending) pending recording\(pending == 1 ? "" : "s")")
    }

    /// "2 h 5 min", "10 min", "42 s": a length as `--explain` prints it.
    public static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        if s >= 3600 { return "\(s / 3600) h \(s % 3600 / 60) min" }
        if s >= 60 { return s % 60 == 0 ? "\(s / 60) min" : "\(s / 60) min \(s % 60) s" }
        return "\(s) s"
    }
}
