import ArgumentParser
import Foundation
import Logging
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show what the state store knows: counts, failures with messages, last runs.")

    @Argument(help: "The job spec (YAML).") var spec: String
    @Flag(help: "List failed recordings with their messages.") var failed = false
    @Flag(help: "Print one JSON object.") var json = false

    /// Runs as stored, with a killed run's counts filled in: a run left `running` while no process
    /// holds the lock (`lockFree`) was killed, and a run the next one marked `killed` never wrote
    /// its counts. Each gets the recordings finished (done or failed) between its start and the
    /// next run's, from their `updatedAt`. `runs` is newest first.
    static func countingKilled(_ runs: [RunRecord], recordings: [RecordingState], lockFree: Bool) -> [RunRecord] {
        var out = runs
        for i in out.indices where out[i].status == .killed || (out[i].status == .running && lockFree) {
            let from = out[i].startedAt
            let to = i > 0 ? out[i - 1].startedAt : .infinity
            let finished = recordings.filter { $0.updatedAt >= from && $0.updatedAt < to }
            out[i].status = .killed
            out[i].done = finished.filter { $0.status == .done }.count
            out[i].failed = finished.filter { $0.status == .failed }.count
        }
        return out
    }

    func run() throws {
        // Read-only: never migrates, creates or changes a file in the state folder.
        let (s, opened) = try openStateForReading(spec: spec)
        guard let store = opened else {
            if json { printOut(#"{"recordings":0,"done":0,"failed":0,"partial":0,"runs":[]}"#) } else { printOut(nothingHasRun(s, spec: spec)) }
            return
        }
        // Only recordings whose source is still there count; the others are listed as gone
        // (their outputs stay until a run with `prune: true` removes them).
        var counts: [String: Int] = [:]
        var gone: [String] = []
        let present = sourcePresence(s)
        let all = try store.loadAll()
        for (path, rec) in all {
            if present(path) { counts[rec.status.rawValue, default: 0] += 1 } else { gone.append(path) }
        }
        gone.sort()
        let failures = try store.failures()
        let salvaged = try store.salvagedRecordings()
        // Only with a lock file (SQLite: one run at a time; PostgreSQL's runs overlap). Free before
        // and after reading the runs: a run that starts or ends meanwhile is not taken for killed.
        let freeBefore = RunLock.isFree(statePath: s.statePath)
        let stored = try store.recentRuns(limit: 5)
        let runs = freeBefore == nil ? stored
            : Self.countingKilled(stored, recordings: all.map(\.1), lockFree: freeBefore == true && RunLock.isFree(statePath: s.statePath) == true)
        let pruned = try store.recentlyPruned(limit: 20)
        let fleet = try store.fleet()
        let iso = ISO8601DateFormatter()
        func date(_ t: Double?) -> String { t.map { iso.string(from: Date(timeIntervalSince1970: $0)) } ?? "-" }
        let done = counts[RecordingStatus.done.rawValue] ?? 0
        let failedCount = counts[RecordingStatus.failed.rawValue] ?? 0
        let partial = counts[RecordingStatus.partial.rawValue] ?? 0
        if json {
            var obj: [(String, JSONValue)] = [
                ("state", .string(s.statePath)),
                ("recordings", .int(counts.values.reduce(0, +))), ("done", .int(done)), ("failed", .int(failedCount)), ("partial", .int(partial)),
                ("gone", .int(gone.count)), ("salvaged", .int(salvaged.count)),
                ("runs", .array(runs.map { r in .object([
                    ("id", .int(Int(r.id))), ("started", .string(date(r.startedAt))), ("finished", .string(date(r.finishedAt))),
                    ("status", .string(r.status.rawValue)), ("planned", .int(r.planned)), ("done", .int(r.done)), ("failed", .int(r.failed)), ("skipped", .int(r.skipped)),
                    ("repeats", .int(r.repeats)),
                ]) })),
                ("pruned", .array(pruned.map { p in .object([("path", .string(p.path)), ("run", .int(Int(p.runId))), ("at", .string(date(p.at)))]) })),
                ("workers", .array(fleet.map { w in .object([("worker", .string(w.worker)), ("host", .string(w.host)), ("pid", .int(w.pid)),
                                                             ("claimed", .int(w.claimed)), ("expired", .bool(w.expired))]) })),
            ]
            if !salvaged.isEmpty {
                // What salvage recovered of each damaged recording processed (`input.damaged: salvage`).
                obj.append(("salvaged_recordings", .array(salvaged.map { r in
                    .object([("path", .string(r.path)), ("report", r.reportJSON), ("at", .string(date(r.at)))])
                })))
            }
            if failed {
                obj.append(("failures", .array(failures.map { f in .object([
                    ("path", .string(f.path)), ("status", .string(f.status.rawValue)), ("class", .string(f.failureClass.rawValue)),
                    ("error", .string(f.error)), ("attempts", .int(f.attempts)), ("at", .string(date(f.at))), ("next", .string(f.nextRun)),
                ]) })))
            }
            printJSON(JSONValue.object(obj))
            return
        }
        printOut("state \(s.statePath)")
        printOut("recordings \(counts.values.reduce(0, +)): \(done) done, \(failedCount) failed, \(partial) partly done"
                 + (gone.isEmpty ? "" : "; \(gone.count) in the state whose source is gone (prune: true removes their outputs)"))
        for r in runs {
            if r.repeats > 1 {
                printOut("run \(r.id) \(date(r.startedAt)) … \(date(r.finishedAt)) \(r.status.rawValue): nothing to do, \(r.repeats) runs, \(r.skipped) up to date")
            } else {
                // A run's row counts partly done recordings with the failed ones (the exit code's count).
                printOut("run \(r.id) \(date(r.startedAt)) \(r.status.rawValue): \(r.done) done, \(r.failed) failed or partly done, \(r.skipped) up to date")
            }
        }
        for w in fleet {
            printOut("worker \(w.host) pid \(w.pid): \(w.claimed) claimed\(w.expired ? ", leases expired (stopped or died)" : "")")
        }
        if !pruned.isEmpty {
            printOut("pruned recently: " + pruned.prefix(5).map { AudioError.quoted($0.path) }.joined(separator: ", ") + (pruned.count > 5 ? ", …" : ""))
        }
        if !salvaged.isEmpty {
            printOut("salvaged \(salvaged.count): processed from what damaged files hold (input.damaged: salvage)")
            for r in salvaged.prefix(failed ? salvaged.count : 5) { printOut("salvaged \(AudioError.quoted(r.path)): \(r.reportProse)") }
            if !failed && salvaged.count > 5 { printOut("… segno status --failed \(spec) lists them all") }
        }
        if failed {
            for f in failures {
                let what = f.status == .partial ? "partly done" : "failed"
                printOut("\(what) \(AudioError.quoted(f.path)) [\(f.failureClass.rawValue); \(f.nextRun)] (\(f.attempts) \(f.attempts == 1 ? "attempt" : "attempts")): \(AudioError.quoted(f.error))")
            }
        } else if !failures.isEmpty {
            printOut("\(failures.count) failed or partly done: segno status --failed \(spec) lists them")
        }
    }
}
