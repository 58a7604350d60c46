import Foundation

extension ReportData {
    /// The table's columns, in the order of each row when `compact` (what the page embeds).
    public static let columns = ["path", "title", "date", "duration", "loudness", "peak", "status", "class", "error", "outputs", "audio", "wave", "salvaged", "transcript", "transcript_audio", "wave_rms", "measures", "turns", "who_spoke", "chapter_list", "wave_duration"]

    /// The report as JSON. `compact` writes each recording as an array in `columns` order (and each
    /// output as `[stage, text, href]`): what the HTML page embeds, a third of the size of objects.
    public func json(compact: Bool) -> JSONValue {
        let iso = ISO8601DateFormatter()
        func date(_ t: Double?) -> JSONValue { t.map { .string(iso.string(from: Date(timeIntervalSince1970: $0))) } ?? .null }
        func number(_ v: Double?, _ places: Int) -> JSONValue { v.map { JSONValue.rounded($0, places: places) } ?? .null }
        func text(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }
        let done = counts[RecordingStatus.done.rawValue] ?? 0
        let failed = counts[RecordingStatus.failed.rawValue] ?? 0
        let partial = counts[RecordingStatus.partial.rawValue] ?? 0
        var fields: [(String, JSONValue)] = [
            ("name", .string(name)), ("spec", .string(spec)), ("state", .string(statePath)), ("output_root", .string(outputRoot)),
            ("generated", date(generated.timeIntervalSince1970)), ("segno_version", .string(SegnoVersion.string)),
            ("counts", .object([("recordings", .int(counts.values.reduce(0, +))), ("done", .int(done)), ("failed", .int(failed)), ("partial", .int(partial))])),
            ("retry", .string(retryCommand)),
            ("runs", .array(runs.map { r in .object([
                ("id", .int(Int(r.id))), ("started", date(r.started)), ("finished", date(r.finished)), ("seconds", number(r.seconds, 3)),
                ("status", .string(r.status)), ("planned", .int(r.planned)), ("done", .int(r.done)), ("failed", .int(r.failed)),
                ("skipped", .int(r.skipped)), ("pruned", .int(r.pruned)), ("audio_seconds", number(r.audioSeconds, 3)), ("realtime", number(r.realtime, 1)),
            ]) })),
            ("failures", .array(failures.map { f in .object([
                ("path", .string(f.path)), ("status", .string(f.status.rawValue)), ("class", .string(f.failureClass.rawValue)),
                ("error", .string(f.error)), ("attempts", .int(f.attempts)), ("at", date(f.at)), ("next", .string(f.nextRun)),
            ]) })),
        ]
        if compact { fields.append(("columns", .array(Self.columns.map { .string($0) }))) }
        fields.append(("recordings", .array(recordings.map { r in
            let values: [JSONValue] = [
                .string(r.path), .string(r.title), .string(r.date), number(r.duration, 3), number(r.loudness, 1), number(r.peak, 1),
                .string(r.status), text(r.failureClass), text(r.error),
                .array(r.outputs.map { o in
                    compact ? .array([.string(o.stage), .string(o.text), text(o.href)])
                        : .object([("stage", .string(o.stage)), ("path", .string(o.text)), ("href", text(o.href))])
                }),
                text(r.audio), text(r.wave), r.salvaged ?? .null,
                .array(r.transcript.map { .array([JSONValue.rounded($0.start, places: 3), .string($0.text)]) }), text(r.transcriptAudio),
                text(r.waveRMS),
                r.measures.isEmpty ? .null : .array(r.measures.map { .array([.string($0.label), JSONValue.rounded($0.value, places: 3), .string($0.unit)]) }),
                r.turns.isEmpty ? .null : .array(r.turns.map { .array([JSONValue.rounded($0.start, places: 3), JSONValue.rounded($0.end, places: 3), .int($0.speaker)]) }),
                r.speakers.isEmpty ? .null : .array(r.speakers.map { .array([.string($0.speaker), JSONValue.rounded($0.seconds, places: 3), JSONValue.rounded($0.share, places: 4)]) }),
                r.chapters.isEmpty ? .null : .array(r.chapters.map { .array([JSONValue.rounded($0.start, places: 3), .string($0.title)]) }),
                number(r.waveDuration, 3),
            ]
            return compact ? .array(values) : .object(Array(zip(Self.columns, values)))
        })))
        return .object(fields)
    }
}
