import Foundation
import Synchronization

/// Counters of a run, shared by the workers and the progress printer.
public struct RunCounters: Sendable {
    public var planned = 0
    public var done = 0
    public var failed = 0
    public var interrupted = 0
    /// Seconds of source audio fully processed.
    public var audioSeconds = 0.0
    public var startedAt = Date()
    /// A recording being processed: seconds decoded so far over all its passes, its duration from
    /// the header, and how many passes over the source it needs (a loudness measuring pass before
    /// the real one makes 2), so `decoded` runs from 0 to `passes × total`.
    public struct InFlight: Sendable, Equatable {
        public var decoded: Double
        public var total: Double?
        public var passes: Int
        public init(decoded: Double, total: Double?, passes: Int = 1) {
            self.decoded = decoded; self.total = total; self.passes = max(1, passes)
        }
        /// Progress in seconds of the recording: `decoded` over the passes.
        public var progress: Double { decoded / Double(passes) }
    }
    /// Recordings in flight, by path relative to input.root.
    public var inFlight: [String: InFlight] = [:]
    /// Planned recordings not started yet, with their duration when known (from the last run).
    public var waiting: [String: Double?] = [:]

    public init() {}

    /// Audio decoded so far: finished recordings plus what is in flight.
    /// A recording in flight counts its share of all its passes (half of it after a measuring pass).
    public var decodedSeconds: Double { audioSeconds + inFlight.values.reduce(0) { $0 + $1.progress } }

    /// Audio still to decode: the rest of each recording in flight and every waiting one; a
    /// duration not known yet counts as the mean of the known ones. Nil when none is known.
    public var remainingSeconds: Double? {
        let known = inFlight.values.compactMap(\.total) + waiting.values.compactMap { $0 }
        let finished = done + failed
        let count = known.count + (audioSeconds > 0 ? finished : 0)
        guard count > 0 else { return nil }
        let mean = (known.reduce(0, +) + audioSeconds) / Double(count)
        let inFlightLeft = inFlight.values.reduce(0) { $0 + max(0, ($1.total ?? mean) - $1.progress) }
        return inFlightLeft + waiting.values.reduce(0) { $0 + ($1 ?? mean) }
    }

    /// `line` cut to fit a terminal `columns` wide, ending in "…" when cut. It keeps one column
    /// free: a line filling the last column makes some terminals wrap, and `\r` then redraws on
    /// the next row. Counts characters (one column each; progress text is narrow). Called by
    /// the CLI before drawing each live progress line.
    public static func fit(_ line: String, columns: Int) -> String {
        let room = max(1, columns - 1)
        guard line.count > room else { return line }
        return String(line.prefix(room - 1)) + "…"
    }

    /// "m:ss", or "h:mm:ss" from an hour.
    public static func clock(_ s: Double) -> String {
        let t = Int(s.rounded())
        return t >= 3600 ? String(format: "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60) : String(format: "%d:%02d", t / 60, t % 60)
    }

    /// The progress text: recordings, audio decoded, speed, ETA from the audio left, and the long
    /// recordings in flight (`long` seconds or more) with how far each has got.
    public func text(now: Date = Date(), long: Double = 600) -> String {
        let elapsed = max(0.001, now.timeIntervalSince(startedAt))
        let finished = done + failed
        let decoded = decodedSeconds
        let speed = decoded / elapsed
        var eta = ""
        if finished < planned, speed > 0, let left = remainingSeconds {
            eta = ", ETA " + RunCounters.clock(left / speed)
        }
        let hours = String(format: "%.2f h audio", decoded / 3600)
        let pace = speed >= 10 || speed == 0 ? String(format: "%.0f", speed) : String(format: "%.1f", speed)
        var text = "\(finished)/\(planned) recordings (\(failed) failed), \(hours), \(pace)× realtime\(eta)"
        let longOnes = inFlight.filter { ($0.value.total ?? $0.value.decoded) >= long }.sorted { $0.key < $1.key }
        if !longOnes.isEmpty {
            text += "; in flight: " + longOnes.prefix(3).map { path, f in
                "\(AudioError.quoted((path as NSString).lastPathComponent)) \(RunCounters.clock(f.decoded))/\(f.total.map { RunCounters.clock($0 * Double(f.passes)) } ?? "?")"
                    + (f.passes > 1 ? " (\(f.passes) passes)" : "")
            }.joined(separator: ", ") + (longOnes.count > 3 ? ", …" : "")
        }
        return text
    }
}

/// Whoever shows a run to a person (the CLI draws a bar or lines on standard error). The library
/// writes nothing itself: it tells the observer what happens and keeps the counters it reads.
public protocol RunObserver: AnyObject, Sendable {
    /// Work starts with the plan known: `progress` holds live counters (`progress.counters`, safe
    /// from any thread). Called once per pass of work, on the run's thread.
    func workStarted(_ progress: RunProgress)
    /// The pass of work ended (before the summary). Called once after `workStarted`, on the run's thread.
    func workEnded(_ progress: RunProgress)
    /// A line a person should read now ("segno: …"): a recording that failed, a state write that
    /// failed. Called from any thread.
    func failure(_ line: String)
    /// A warning about one recording ("segno: warning: …"). Called from any thread.
    func warning(_ line: String)
}

/// The counters of one pass of work, updated by the workers, read by the observer.
public final class RunProgress: Sendable {
    private let state = Mutex(RunCounters())
    /// Told about failures and warnings; nil: nobody is shown anything.
    package let observer: (any RunObserver)?

    package init(observer: (any RunObserver)?) { self.observer = observer }

    /// A copy of the counters now.
    public var counters: RunCounters { state.withLock { $0 } }

    /// Sets the plan: each planned recording's path and its duration when known. Called once
    /// before `observer.workStarted`.
    package func plan(_ planned: [(path: String, duration: Double?)]) {
        state.withLock { c in
            c.planned = planned.count
            c.startedAt = Date()
            for p in planned { c.waiting[p.path] = .some(p.duration) }
        }
    }

    /// Updates the counters.
    package func update(_ change: (inout RunCounters) -> Void) { state.withLock { change(&$0) } }
    /// A recording starts: it leaves the waiting list.
    package func begin(_ path: String) { state.withLock { c in c.waiting[path] = nil; c.inFlight[path] = .init(decoded: 0, total: nil) } }
    /// Audio decoded so far in a recording in flight, and its duration from the header.
    /// `seconds` counts every pass so far (see `RunCounters.InFlight`).
    package func decoded(_ path: String, seconds: Double, of total: Double?, passes: Int = 1) {
        state.withLock { $0.inFlight[path] = .init(decoded: seconds, total: total, passes: passes) }
    }
    /// A recording ended (done, failed, skipped or interrupted).
    package func end(_ path: String) { state.withLock { c in c.waiting[path] = nil; c.inFlight[path] = nil } }
    /// A failure line for the observer.
    package func error(_ line: String) { observer?.failure(line) }
}
