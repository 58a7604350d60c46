import ArgumentParser
import Foundation
import SegnoCore

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show what the state store knows: counts, failures with messages, last runs.")

    @Argument(help: "The job spec (YAML).") var spec: String
    @Flag(help: "List failed recordings with their messages.") var failed = false
    @Flag(help: "Print one JSON object.") var json = false

    func run() throws {
        let s: JobSpec
        do { s = try SpecLoader.load(path: spec) } catch {
            printError("segno: \(error)")
            throw Exit.usage
        }
        guard FileManager.default.fileExists(atPath: s.statePath) else {
            if json { printOut(#"{"recordings":0,"done":0,"failed":0,"runs":[]}"#) } else { printOut("no state yet at \(s.statePath): nothing has run") }
            return
        }
        let store = try StateStore(path: s.statePath)
        let counts = try store.statusCounts()
        let failures = try store.failures()
        let runs = try store.recentRuns(limit: 5)
        let iso = ISO8601DateFormatter()
        func date(_ t: Double?) -> String { t.map { iso.string(from: Date(timeIntervalSince1970: $0)) } ?? "-" }
        if json {
            var obj: [(String, JSONValue)] = [
                ("state", .string(s.statePath)),
                ("recordings", .int(counts.values.reduce(0, +))), ("done", .int(counts["done"] ?? 0)), ("failed", .int(counts["failed"] ?? 0)),
                ("runs", .array(runs.map { r in .object([
                    ("id", .int(Int(r.id))), ("started", .string(date(r.startedAt))), ("finished", .string(date(r.finishedAt))),
                    ("status", .string(r.status)), ("planned", .int(r.planned)), ("done", .int(r.done)), ("failed", .int(r.failed)), ("skipped", .int(r.skipped)),
                ]) })),
            ]
            if failed {
                obj.append(("failures", .array(failures.map { f in .object([
                    ("path", .string(f.path)), ("error", .string(f.error)), ("attempts", .int(f.attempts)), ("at", .string(date(f.at))),
                ]) })))
            }
            printOut(JSONValue.object(obj).serialized())
            return
        }
        printOut("state \(s.statePath)")
        printOut("recordings \(counts.values.reduce(0, +)): \(counts["done"] ?? 0) done, \(counts["failed"] ?? 0) failed")
        for r in runs {
            printOut("run \(r.id) \(date(r.startedAt)) \(r.status): \(r.done) done, \(r.failed) failed, \(r.skipped) up to date")
        }
        if failed {
            for f in failures { printOut("failed \(AudioError.quoted(f.path)) (\(f.attempts) attempts): \(f.error)") }
        } else if !failures.isEmpty {
            printOut("\(failures.count) failed: segno status --failed \(spec) lists them")
        }
    }
}
