import ArgumentParser
import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

struct OutputsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outputs",
        abstract: "List each recording's outputs: files, uploaded objects, fingerprints and state.",
        discussion: """
        Reads the state database read-only. RECORDING is a path relative to input.root, or a path \
        (from the current folder, or absolute) to a file inside it; without any, every recording in \
        the state is listed. Exit code 1 when a RECORDING is not in the state.
        """)

    @Argument(help: "The job spec (YAML).") var spec: String
    @Argument(help: "Recordings: paths relative to input.root, or paths (from here, or absolute) to files inside it. Default: all.") var recordings: [String] = []
    @Flag(help: "Print one JSON object.") var json = false

    func run() throws {
        // Read-only: never migrates, creates or changes a file in the state folder.
        let (s, opened) = try openStateForReading(spec: spec)
        if opened == nil && recordings.isEmpty && !json {
            printOut(nothingHasRun(s, spec: spec))
            return
        }
        let states = try opened?.loadAll() ?? [:]
        let root = s.input.root.hasSuffix("/") ? String(s.input.root.dropLast()) : s.input.root
        var wanted: [String] = []
        var missing: [String] = []
        if recordings.isEmpty {
            wanted = states.keys.sorted()
        } else {
            for r in recordings {
                // Relative to input.root, or a path from here (as tab completion gives it) or an
                // absolute one that leads inside input.root.
                let here = URL(fileURLWithPath: r).standardizedFileURL.path
                let rel = states.contains(r) ? r
                    : here.hasPrefix(root + "/") ? String(here.dropFirst(root.count + 1))
                    : r.hasPrefix(root + "/") ? String(r.dropFirst(root.count + 1)) : r
                if states.contains(rel) { wanted.append(rel) } else { missing.append(r) }
            }
        }
        // Fingerprints a fingerprint tap stored, by recording.
        var fingerprints: [String: String] = [:]
        if let store = opened {
            for tap in Job(spec: s).taps where tap.config.storesFingerprints {
                for f in try store.fingerprints(stage: tap.identity) where fingerprints[f.path] == nil {
                    fingerprints[f.path] = f.fingerprint.compressed
                }
            }
        }
        // What salvage recovered, by recording (processed from a damaged file).
        let salvaged = Dictionary((try opened?.salvagedRecordings() ?? []).map { ($0.path, $0) }) { a, _ in a }
        func resolve(_ text: String) -> (kind: String, location: String) {
            switch StoredOutput(text) {
            case .relative(let r): return ("file", s.outputRoot + "/" + r)
            case .file(let p): return ("file", p)
            case .object(let bucket, let key): return ("object", "s3://\(bucket)/\(key)")
            }
        }
        var objects: [JSONValue] = []
        var lines: [String] = []
        let present = sourcePresence(s)
        for path in wanted {
            guard let rec = states[path] else { continue }
            var outs: [JSONValue] = []
            // As status counts it: a recording whose source is gone is "gone" (its outputs stay
            // until a run with prune: true removes them), whatever its last run left.
            let gone = !present(path)
            let state = gone ? "gone" : rec.status.rawValue
            lines.append("\(AudioError.quoted(path)): \(state)" + (gone ? " (source deleted; it was \(rec.status.rawValue); prune: true removes its outputs)" : "")
                         + (rec.error.map { " — \(AudioError.quoted($0))" } ?? ""))
            for step in rec.steps.values.sorted(by: { $0.stage < $1.stage }) {
                let stage = String(step.stage.prefix { $0 != ":" })
                for o in step.outputs {
                    let (kind, location) = resolve(o)
                    outs.append(.object([("stage", .string(step.stage)), ("kind", .string(kind)), (kind == "object" ? "url" : "path", .string(location))]))
                    lines.append("  \(stage) \(AudioError.quoted(location))")
                }
            }
            var fields: [(String, JSONValue)] = [("path", .string(path)), ("state", .string(state))]
            if gone { fields.append(("last_state", .string(rec.status.rawValue))) }
            fields.append(("outputs", .array(outs)))
            if let e = rec.error { fields.append(("error", .string(e))) }
            if let s = salvaged[path] {
                fields.append(("salvaged", s.reportJSON))
                lines.append("  salvaged: \(s.reportProse)")
            }
            if let fp = fingerprints[path], !fp.isEmpty {
                fields.append(("fingerprint", .string(fp)))
                lines.append("  fingerprint \(fp.prefix(32))… (\(fp.count) characters; --json prints it whole)")
            } else if fingerprints[path] != nil {
                // Chromaprint gives no items for audio too short (under about 3 s) or silent.
                fields.append(("fingerprint", .null))
                lines.append("  fingerprint none (too short or silent to fingerprint)")
            }
            objects.append(.object(fields))
        }
        if json {
            printJSON(JSONValue.object([("state", .string(s.statePath)), ("recordings", .array(objects)),
                                       ("not_in_state", .array(missing.map { .string($0) }))]))
        } else {
            for l in lines { printOut(l) }
        }
        for m in missing { printError("segno: \(AudioError.quoted(m)): not in the state (not processed yet, or not under input.root)") }
        if !missing.isEmpty { throw Exit.failures }
    }
}
