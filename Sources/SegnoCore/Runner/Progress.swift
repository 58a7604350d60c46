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
    /// A recording being processed: seconds decoded so far, and its duration from the header.
    public struct InFlight: Sendable, Equatable {
        public var decoded: Double
        public var total: Double?
        public init(decoded: Double, total: Double?) { self.decoded = decoded; self.total = total }
    }
    /// Recordings in flight, by path relative to input.root.
    public var inFlight: [String: InFlight] = [:]
    /// Planned recordings not started yet, with their duration when known (from the last run).
    public var waiting: [String: Double?] = [:]

    public init() {}

    /// Audio decoded so far: finished recordings plus what is in flight.
    public var decodedSeconds: Double { audioSeconds + inFlight.values.reduce(0) { $0 + $1.decoded } }

    /// Audio still to decode: the rest of each recording in flight and every waiting one; a
    /// duration not known yet counts as the mean of the known ones. Nil when none is known.
    public var remainingSeconds: Double? {
        let known = inFlight.values.compactMap(\.total) + waiting.values.compactMap { $0 }
        let finished = done + failed
        let count = known.count + (audioSeconds > 0 ? finished : 0)
        guard count > 0 else { return nil }
        let mean = (known.reduce(0, +) + audioSeconds) / Double(count)
        let inFlightLeft = inFlight.values.reduce(0) { $0 + max(0, ($1.total ?? mean) - $1.decoded) }
        return inFlightLeft + waiting.values.reduce(0) { $0 + ($1 ?? mean) }
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
            eta = ", ETA " + ProgressPrinter.clock(left / speed)
        }
        let hours = String(format: "%.2f h audio", decoded / 3600)
        let pace = speed >= 10 || speed == 0 ? String(format: "%.0f", speed) : String(format: "%.1f", speed)
        var text = "\(finished)/\(planned) recordings (\(failed) failed), \(hours), \(pace)× realtime\(eta)"
        let longOnes = inFlight.filter { ($0.value.total ?? $0.value.decoded) >= long }.sorted { $0.key < $1.key }
        if !longOnes.isEmpty {
            text += "; in flight: " + longOnes.prefix(3).map { path, f in
                "\(AudioError.quoted((path as NSString).lastPathComponent)) \(ProgressPrinter.clock(f.decoded))/\(f.total.map(ProgressPrinter.clock) ?? "?")"
            }.joined(separator: ", ") + (longOnes.count > 3 ? ", …" : "")
        }
        return text
    }
}

/// Prints progress to standard error: a live bar on a terminal (recordings, audio hours,
/// × realtime, ETA), a plain line every 10 s otherwise, nothing with `--quiet`.
/// `@unchecked`: `timer` is touched only by `start` and `stop`, both called from the run's own thread.
public final class ProgressPrinter: @unchecked Sendable {
    public enum Mode: Sendable { case bar, lines, quiet }
    let mode: Mode
    let counters: Mutex<RunCounters>
    private var timer: DispatchSourceTimer?

    public init(mode: Mode) {
        self.mode = mode
        counters = Mutex(RunCounters())
    }

    /// Picks the mode from the terminal and `--quiet`.
    public static func mode(quiet: Bool) -> Mode {
        quiet ? .quiet : (isatty(2) != 0 ? .bar : .lines)
    }

    /// Starts the periodic printer. Called once the plan is known, with each planned recording's
    /// path and its duration when known.
    public func start(planned: [(path: String, duration: Double?)]) {
        counters.withLock { c in
            c.planned = planned.count
            c.startedAt = Date()
            for p in planned { c.waiting[p.path] = .some(p.duration) }
        }
        let planned = planned.count
        guard mode != .quiet, planned > 0 else { return }
        let t = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "segno.progress"))
        let interval: Double = mode == .bar ? 0.25 : 10
        t.schedule(deadline: .now() + interval, repeating: interval)
        t.setEventHandler { [self] in self.printLine(final: false) }
        t.resume()
        timer = t
    }

    /// Updates the counters.
    public func update(_ change: (inout RunCounters) -> Void) { counters.withLock { change(&$0) } }

    /// Stops the printer and clears the bar.
    public func stop() {
        timer?.cancel()
        timer = nil
        if mode == .bar { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }

    /// Prints an error line above the bar (or alone).
    public func error(_ line: String) {
        let prefix = mode == .bar ? "\r\u{1B}[K" : ""
        FileHandle.standardError.write(Data((prefix + line + "\n").utf8))
    }

    func printLine(final: Bool) {
        let c = counters.withLock { $0 }
        let finished = c.done + c.failed
        let text = c.text()
        if mode == .bar {
            let width = 24
            let filled = c.planned > 0 ? width * finished / c.planned : width
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            FileHandle.standardError.write(Data("\r\u{1B}[K[\(bar)] \(text)".utf8))
        } else {
            FileHandle.standardError.write(Data("segno: \(text)\n".utf8))
        }
    }

    /// A recording starts: it leaves the waiting list.
    public func begin(_ path: String) { counters.withLock { c in c.waiting[path] = nil; c.inFlight[path] = .init(decoded: 0, total: nil) } }
    /// Audio decoded so far in a recording in flight, and its duration from the header.
    public func decoded(_ path: String, seconds: Double, of total: Double?) {
        counters.withLock { $0.inFlight[path] = .init(decoded: seconds, total: total) }
    }
    /// A recording ended (done, failed, skipped or interrupted).
    public func end(_ path: String) { counters.withLock { c in c.waiting[path] = nil; c.inFlight[path] = nil } }

    static func clock(_ s: Double) -> String {
        let t = Int(s.rounded())
        return t >= 3600 ? String(format: "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60) : String(format: "%d:%02d", t / 60, t % 60)
    }
}
