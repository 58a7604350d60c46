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
    /// Seconds of source audio of all planned recordings (from sizes, estimated at start).
    public var startedAt = Date()
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

    /// Starts the periodic printer. Called once the plan is known.
    public func start(planned: Int) {
        counters.withLock { $0.planned = planned; $0.startedAt = Date() }
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
        let elapsed = max(0.001, Date().timeIntervalSince(c.startedAt))
        let finished = c.done + c.failed
        let speed = c.audioSeconds / elapsed
        var eta = ""
        if finished > 0 && finished < c.planned {
            let remaining = elapsed / Double(finished) * Double(c.planned - finished)
            eta = ", ETA " + Self.clock(remaining)
        }
        let hours = String(format: "%.2f h audio", c.audioSeconds / 3600)
        let text = "\(finished)/\(c.planned) recordings (\(c.failed) failed), \(hours), \(String(format: "%.0f", speed))× realtime\(eta)"
        if mode == .bar {
            let width = 24
            let filled = c.planned > 0 ? width * finished / c.planned : width
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            FileHandle.standardError.write(Data("\r\u{1B}[K[\(bar)] \(text)".utf8))
        } else {
            FileHandle.standardError.write(Data("segno: \(text)\n".utf8))
        }
    }

    static func clock(_ s: Double) -> String {
        let t = Int(s.rounded())
        return t >= 3600 ? String(format: "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60) : String(format: "%d:%02d", t / 60, t % 60)
    }
}
