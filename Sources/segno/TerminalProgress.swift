import Dispatch
import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

/// Draws a run on standard error: a live bar on a terminal (recordings, audio hours, × realtime,
/// ETA), a plain line every 10 s otherwise, nothing with `--quiet` (failures are still printed,
/// warnings are not). `@unchecked`: `timer` is touched only by `workStarted` and `workEnded`, both
/// called from the run's own thread.
final class TerminalProgress: RunObserver, @unchecked Sendable {
    enum Mode: Sendable { case bar, lines, quiet }
    let mode: Mode
    private var timer: DispatchSourceTimer?

    init(mode: Mode) { self.mode = mode }

    /// Picks the mode from the terminal and `--quiet`.
    static func mode(quiet: Bool) -> Mode {
        quiet ? .quiet : (isatty(2) != 0 ? .bar : .lines)
    }

    func workStarted(_ progress: RunProgress) {
        guard mode != .quiet, progress.counters.planned > 0 else { return }
        let t = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "segno.progress"))
        let interval: Double = mode == .bar ? 0.25 : 10
        t.schedule(deadline: .now() + interval, repeating: interval)
        t.setEventHandler { [self] in self.draw(progress.counters) }
        t.resume()
        timer = t
    }

    /// Stops drawing and clears the bar.
    func workEnded(_ progress: RunProgress) {
        timer?.cancel()
        timer = nil
        if mode == .bar { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }

    /// A line above the bar (or alone).
    func failure(_ line: String) {
        let prefix = mode == .bar ? "\r\u{1B}[K" : ""
        // One failure or warning is one line, whatever text it carries.
        FileHandle.standardError.write(Data((prefix + AudioError.quoted(line) + "\n").utf8))
    }

    func warning(_ line: String) {
        if mode != .quiet { failure(line) }
    }

    /// The terminal's width in columns, asked at each draw (a resized window): standard error's
    /// window size, else COLUMNS from the environment, else 80.
    static func columns() -> Int {
        var size = winsize()
        if ioctl(2, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let c = ProcessContext.environment["COLUMNS"].flatMap({ Int($0) }), c > 0 { return c }
        return 80
    }

    func draw(_ c: RunCounters) {
        let finished = c.done + c.failed
        let text = c.text()
        if mode == .bar {
            let width = 24
            let filled = c.planned > 0 ? width * finished / c.planned : width
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            let line = RunCounters.fit("[\(bar)] \(text)", columns: Self.columns())
            FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
        } else {
            FileHandle.standardError.write(Data("segno: \(text)\n".utf8))
        }
    }
}
