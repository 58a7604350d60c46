import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState
import Synchronization

/// What `segno run --watch` prints: one line per pass that did something (standard output,
/// starting with the local time), nothing for a pass that found nothing to do, the scan's
/// complaints only when they change, and one line when the watch stops.
final class WatchLog: Sendable {
    let quiet: Bool
    let explain: Bool
    let startedAt = Date()
    /// The complaints of the last pass that printed them: each is said again only when it changes.
    private let lastSaid = Mutex<[String]>([])

    init(quiet: Bool, explain: Bool) {
        self.quiet = quiet
        self.explain = explain
    }

    /// Called after each pass with its summary (on the run's thread).
    func passed(_ s: RunSummary) {
        var complaints = s.problems.map { "segno: skipped \($0)" }
        complaints += s.ownOutputs.map { "segno: skipped \(AudioError.quoted($0)): an output of this job, never taken as input" }
        if let held = s.pruneHeld { complaints.append("segno: prune: \(held)") }
        if let refused = s.pruneRefused { complaints.append("segno: prune: \(refused)") }
        let fresh = lastSaid.withLock { last -> [String] in
            defer { last = complaints }
            return complaints.filter { !last.contains($0) }
        }
        for line in fresh where !quiet || line.hasPrefix("segno: prune:") { printError(line) }
        if explain { for line in s.plan { printOut(AudioError.quoted(line)) } }
        let worked = s.results.filter { $0.status != .unchanged && $0.status != .notReady && $0.status != .elsewhere }
        guard !quiet, !worked.isEmpty || !s.pruned.isEmpty else { return }
        var line = "\(Self.clock(Date())) \(s.done) done, \(s.failed) failed, \(s.skipped) up to date"
        if s.interrupted > 0 { line += ", \(s.interrupted) interrupted" }
        if s.settling > 0 { line += ", \(s.settling) still settling" }
        if !s.pruned.isEmpty { line += ", \(s.pruned.count) pruned" }
        let names = worked.map(\.path) + s.pruned
        line += ": " + names.prefix(5).joined(separator: ", ") + (names.count > 5 ? " and \(names.count - 5) more" : "")
        printOut(AudioError.quoted(line))
    }

    /// The last line, after the watch stopped (signal or `--max-time`).
    func stopped(_ total: RunSummary) {
        guard !quiet else { return }
        let why: String
        switch total.stop {
        case .signal(let s): why = s == SIGTERM ? "SIGTERM" : "SIGINT"
        case .timeUp: why = "--max-time"
        case .none: why = "end"
        }
        var line = "watch stopped (\(why)): \(total.done) done, \(total.failed) failed since \(Self.clock(startedAt))"
        if !total.pruned.isEmpty { line += ", \(total.pruned.count) pruned" }
        let left = total.notStarted + total.interrupted
        if left > 0 { line += "; \(left) left for the next run" }
        printOut(line)
    }

    /// Local time, `2026-11-23 22:40:01`.
    static func clock(_ d: Date) -> String {
        var t = time_t(d.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&t, &parts)
        var buf = [CChar](repeating: 0, count: 32)
        let n = strftime(&buf, buf.count, "%Y-%m-%d %H:%M:%S", &parts)
        return String(decoding: buf.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
