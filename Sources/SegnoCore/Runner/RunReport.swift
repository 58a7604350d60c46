import Foundation

/// `--report FILE.json`: the run summary (counts, each recording processed in this run with
/// status, durations and errors), written atomically.
public enum RunReport {
    public static func json(_ s: RunSummary, spec: JobSpec, exitCode: Int32) -> JSONValue {
        let stop: String
        switch s.stop {
        case .none: stop = "none"
        case .signal(let sig): stop = sig == SIGTERM ? "SIGTERM" : "SIGINT"
        case .timeUp: stop = "max-time"
        }
        let iso = ISO8601DateFormatter()
        return .object([
            ("spec", .string(spec.file)), ("name", .string(spec.name)), ("segno_version", .string(SegnoVersion.string)),
            ("started", .string(iso.string(from: s.startedAt))), ("finished", .string(iso.string(from: s.finishedAt))),
            ("seconds", JSONValue.rounded(s.finishedAt.timeIntervalSince(s.startedAt), places: 3)),
            ("exit_code", .int(Int(exitCode))), ("stopped_by", .string(stop)),
            ("counts", .object([
                ("scanned", .int(s.scanned)), ("planned", .int(s.planned)), ("done", .int(s.done)), ("failed", .int(s.failed)),
                ("skipped", .int(s.skipped)), ("known_failures", .int(s.knownFailures)), ("interrupted", .int(s.interrupted)),
                ("not_started", .int(s.notStarted)), ("settling", .int(s.settling)),
            ])),
            ("recordings", .array(s.results.map { r in
                var o: [(String, JSONValue)] = [("path", .string(r.path)), ("status", .string(r.status.rawValue))]
                if let d = r.duration { o.append(("duration", JSONValue.rounded(d, places: 3))) }
                o.append(("seconds", JSONValue.rounded(r.seconds, places: 3)))
                o.append(("attempts", .int(r.attempts)))
                o.append(("reasons", .array(r.reasons.map { .string($0) })))
                o.append(("outputs", .array(r.outputs.map { .string($0) })))
                if let e = r.error { o.append(("error", .string(e))) }
                if let c = r.failureClass { o.append(("class", .string(c.rawValue))) }
                if let s = r.salvaged { o.append(("salvaged", s)) }
                return .object(o)
            })),
            ("problems", .array(s.problems.map { .string($0) })),
            ("stream_failures", .array(s.captureFailures.map { .string($0) })),
            ("pruned", .array(s.pruned.map { .string($0) })),
        ] + (s.pruneHeld.map { [("prune_held", JSONValue.string($0))] } ?? [])
          + (s.pruneRefused.map { [("prune_refused", JSONValue.string($0))] } ?? []))
    }

    /// Writes the report through a temporary file and a rename.
    public static func write(_ value: JSONValue, to path: String) throws {
        try OutputFile.write(Array((value.serialized() + "\n").utf8), to: URL(fileURLWithPath: path).standardizedFileURL.path)
    }
}
