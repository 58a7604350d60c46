import Foundation

/// What `segno report` shows, read from the state store alone (plus the small waveform JSON
/// files the taps wrote): run history, failures, and one row per recording. `ReportPage` renders
/// it as HTML, `json(compact:)` as JSON (`segno report --json`).
public struct ReportData: Sendable {
    /// What to include and where the page will live.
    public struct Options: Sendable {
        /// Absolute path of the HTML file: links to outputs are relative to its folder.
        public var reportPath: String
        /// Only this run: its row in the history and the recordings it touched.
        public var runId: Int64?
        /// Only recordings that failed or are partly done.
        public var failedOnly = false
        /// Runs shown in the history (newest first).
        public var runLimit = 30
        /// Columns of the embedded waveform per recording (min/max pairs).
        public var waveColumns = 120

        public init(reportPath: String, runId: Int64? = nil, failedOnly: Bool = false) {
            self.reportPath = reportPath
            self.runId = runId
            self.failedOnly = failedOnly
        }
    }

    /// One row of the run history.
    public struct Run: Sendable {
        public var id: Int64
        public var started: Double
        public var finished: Double?
        public var status: String
        public var planned, done, failed, skipped, pruned: Int
        /// Seconds of audio in the recordings whose last step finished during the run.
        public var audioSeconds: Double
        public var seconds: Double? { finished.map { $0 - started } }
        /// Audio seconds per wall second (nil when nothing ran or the run did not finish).
        public var realtime: Double? {
            guard let s = seconds, s > 0, audioSeconds > 0 else { return nil }
            return audioSeconds / s
        }
    }

    /// An output of a recording: what to show and the link relative to the report (nil: not a file).
    public struct Output: Sendable {
        public var stage: String
        public var text: String
        public var href: String?
    }

    /// One recording (a row of the table).
    public struct Recording: Sendable {
        public var path: String
        public var title: String
        /// ISO 8601: when recorded (metadata tap), else the source's modification time.
        public var date: String
        public var duration: Double?
        /// Integrated loudness in LUFS (metadata tap), when measured.
        public var loudness: Double?
        /// Sample peak in dBFS (metadata tap).
        public var peak: Double?
        public var status: String
        public var failureClass: String?
        public var error: String?
        public var outputs: [Output]
        /// Relative link of a browser-playable file (an output, else the source).
        public var audio: String?
        /// Base64 of min/max byte pairs (sample × 127 + 128) for the canvas; nil for none.
        public var wave: String?
        /// Base64 of one RMS level byte per waveform column (round(level × 255)), drawn inside
        /// `wave`; nil when the waveform came from a metadata tap's `levels` (peaks only).
        public var waveRMS: String? = nil
        /// What salvage recovered (`SalvageReport.json`) when the recording was processed from a
        /// damaged file; nil when it was read whole.
        public var salvaged: JSONValue? = nil
        /// The segments of a tap that provides spoken text (start in seconds, text); empty when none.
        public var transcript: [(start: Double, text: String)] = []
        /// Relative link of the audio the transcript's times refer to (the source for `from: source`).
        public var transcriptAudio: String?
        /// The measures of taps that report them (`Capabilities.reportsMeasures`), in the order
        /// of their steps and declarations: label, value and unit; empty when none.
        public var measures: [(label: String, value: Double, unit: String)] = []
        /// The turns of a tap that finds speakers (`Capabilities.findsSpeakers`): seconds of the
        /// waveform's timeline (the source's unless `waveDuration` says otherwise) and the index of
        /// the speaker in `speakers`; empty when none.
        public var turns: [(start: Double, end: Double, speaker: Int)] = []
        /// The length in seconds of the timeline `wave` and `turns` are on, when a stage before the
        /// waveform moved time (turns are then mapped onto it, decision 0084); nil when it is the
        /// source's (`duration`).
        public var waveDuration: Double? = nil
        /// Who spoke how long (name or label, seconds, share of all turns' seconds), longest first.
        public var speakers: [(speaker: String, seconds: Double, share: Double)] = []
        /// The chapters of a tap that writes them (`Capabilities.writesChapters`): start in
        /// seconds of the stream where it stood, and title; empty when none.
        public var chapters: [(start: Double, title: String)] = []
    }

    public var name: String
    public var spec: String
    public var statePath: String
    public var outputRoot: String
    public var generated: Date
    /// Recordings per status for the whole store: "done", "failed", "partial".
    public var counts: [String: Int]
    public var runs: [Run]
    public var failures: [FailureRecord]
    public var recordings: [Recording]

    /// The command that runs the failed recordings again.
    public var retryCommand: String { "segno retry " + Self.shellQuoted(URL(fileURLWithPath: spec).standardizedFileURL.path) }

    /// Extensions an `<audio>` element plays in current browsers.
    public static let playable: Set<String> = ["wav", "flac", "ogg", "oga", "opus", "mp3", "m4a"]

    /// Reads everything the report shows from any state backend (the running job's store, or
    /// one opened read-only): counts, the run history, and every recording with its steps.
    public static func collect(spec: JobSpec, store: any StateBackend, options: Options) throws -> ReportData {
        let reportDir = (options.reportPath as NSString).deletingLastPathComponent
        let counts = try store.statusCounts()
        let records: [RunRecord]
        if let id = options.runId {
            guard let r = try store.run(id: id) else { throw ReportError.noSuchRun(id) }
            records = [r]
        } else {
            records = try store.recentRuns(limit: options.runLimit)
        }
        var runs = records.map { r in
            Run(id: r.id, started: r.startedAt, finished: r.finishedAt, status: r.status.rawValue, planned: r.planned, done: r.done,
                failed: r.failed, skipped: r.skipped, pruned: r.pruned, audioSeconds: 0)
        }
        var recordings: [Recording] = []
        var failures: [FailureRecord] = []
        let window = options.runId.flatMap { _ in runs.first.map { ($0.started, $0.finished ?? .infinity) } }
        let index = try store.loadAll()
        let salvaged = Dictionary(try store.salvagedRecordings().map { ($0.path, $0.reportJSON) }) { a, _ in a }
        for path in index.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            guard let rec = index[path] else { continue }
            let status = rec.status.rawValue
            let own = rec.steps.values.sorted { $0.stage.utf8.lexicographicallyPrecedes($1.stage.utf8) }
                .map { (stage: $0.stage, output: $0.output, finished: $0.finishedAt, detail: $0.detail) }
            let lastStep = own.map(\.finished).max()
            let duration = rec.duration
            // Audio per run: the recording counts for the run its last step finished in.
            if let t = lastStep, let d = duration, let i = runs.firstIndex(where: { t >= $0.started && t <= ($0.finished ?? .infinity) }) {
                runs[i].audioSeconds += d
            }
            let updated = rec.updatedAt
            if let (from, to) = window {
                let touched = (lastStep.map { $0 >= from && $0 <= to } ?? false) || (status != "done" && updated >= from && updated <= to)
                if !touched { continue }
            }
            let failureClass = rec.failureClass?.rawValue
            if status != "done" {
                failures.append(FailureRecord(path: path, error: rec.error ?? "", attempts: rec.attempts, at: updated,
                                              status: rec.status, failureClass: rec.failureClass ?? .environment))
            } else if options.failedOnly {
                continue
            }
            var row = recording(path: path, mtimeNs: rec.identity.mtimeNs, duration: duration, status: status, error: rec.error,
                                failureClass: failureClass, steps: own, spec: spec, reportDir: reportDir, columns: options.waveColumns)
            row.salvaged = salvaged[path]
            recordings.append(row)
        }
        return ReportData(name: spec.name, spec: spec.file, statePath: spec.statePath, outputRoot: spec.outputRoot, generated: Date(),
                          counts: counts, runs: runs, failures: failures, recordings: recordings)
    }

    static package func recording(path: String, mtimeNs: Int64, duration: Double?, status: String, error: String?, failureClass: String?,
                          steps: [(stage: String, output: String, finished: Double, detail: String?)],
                          spec: JobSpec, reportDir: String, columns: Int) -> Recording {
        var outputs: [Output] = []
        var values: [String: String] = [:]
        var wave: String?
        var waveRMS: String?
        var waveJSON: String?
        var transcriptJSON: String?
        var transcriptFromSource = false
        var measures: [(label: String, value: Double, unit: String)] = []
        var turnsJSON: String?
        var chaptersFile: String?
        var waveStage: String?  // the step whose peaks are drawn
        var stepFiles: [String: [String]] = [:]  // step identity → its files (absolute)
        let upload = StageKind.upload.rawValue
        for s in steps {
            let identity = StepIdentity(stored: s.stage)
            let state = StepState(stage: s.stage, fingerprint: "", source: "", output: s.output, outputHash: Data(), outputSize: 0, finishedAt: s.finished, detail: s.detail)
            // What the step contributes comes from its declaration's capabilities, never its name.
            let declaration = spec.tapDeclarations[identity.kind]
            let caps = declaration?.capabilities ?? []
            if caps.contains(.describesRecording) {
                if values["levels"] == nil, state.values["levels"] != nil, waveStage == nil { waveStage = s.stage }
                values.merge(state.values) { a, _ in a }
            }
            if caps.contains(.reportsMeasures), let declaration {
                let stepValues = state.values
                for m in declaration.measures {
                    if let v = stepValues[m.key].flatMap(Double.init), v.isFinite { measures.append((m.label, v, m.unit)) }
                }
            }
            for o in state.outputs {
                let stored = identity.isUpload ? StoredOutput(o) : .relative(o)
                switch stored {
                case .object(let bucket, let key):
                    outputs.append(Output(stage: identity.kind, text: "s3://\(bucket)/\(key)", href: nil))
                case .file(let abs):
                    outputs.append(Output(stage: identity.kind, text: abs, href: relativeLink(from: reportDir, to: abs)))
                case .relative(let rel):
                    let abs = spec.outputRoot + "/" + rel
                    outputs.append(Output(stage: identity.kind, text: rel, href: relativeLink(from: reportDir, to: abs)))
                    stepFiles[s.stage, default: []].append(abs)
                    if caps.contains(.drawnInReport), waveJSON == nil, rel.lowercased().hasSuffix(".json") {
                        waveJSON = abs
                        waveStage = s.stage
                    }
                    if caps.contains(.findsSpeakers), turnsJSON == nil, rel.lowercased().hasSuffix(".json") { turnsJSON = abs }
                    if caps.contains(.writesChapters), chaptersFile == nil { chaptersFile = abs }
                    if caps.contains(.providesSpokenText), transcriptJSON == nil, rel.hasSuffix(".json") {
                        transcriptJSON = abs
                        transcriptFromSource = state.values["from"] == "source"
                    }
                }
            }
        }
        outputs = outputs.filter { $0.stage != upload } + outputs.filter { $0.stage == upload }
        if let file = waveJSON, let layers = ReportWaveform.fromPeaksFile(file, columns: columns) { (wave, waveRMS) = (layers.minMax, layers.rms) }
        if wave == nil, let levels = values["levels"], !levels.isEmpty { wave = ReportWaveform.fromLevels(levels) } else if wave == nil { waveStage = nil }
        let audio = outputs.first { $0.href != nil && $0.stage != upload && playable.contains(($0.text as NSString).pathExtension.lowercased()) }
            ?? outputs.first { $0.href != nil && playable.contains(($0.text as NSString).pathExtension.lowercased()) }
        var audioHref = audio?.href
        // A failed recording gets no player: its source is what could not be read.
        let failed = status == RecordingStatus.failed.rawValue
        if failed { audioHref = nil }
        if audioHref == nil, !failed, playable.contains((path as NSString).pathExtension.lowercased()) {
            audioHref = relativeLink(from: reportDir, to: spec.input.root + "/" + path)
        }
        let stem = RecordingContext(sourcePath: path, relativePath: path, modified: Date(), outputRoot: "").stem
        let sourceAudio = failed ? nil : playable.contains((path as NSString).pathExtension.lowercased())
            ? relativeLink(from: reportDir, to: spec.input.root + "/" + path) : nil
        var recording = Recording(path: path, title: values["title"].flatMap { $0.isEmpty ? nil : $0 } ?? stem,
                         date: values["recorded"] ?? RecordingContext.isoDateTime(Date(timeIntervalSince1970: Double(mtimeNs) / 1e9)),
                         duration: duration ?? values["duration"].flatMap(Double.init),
                         loudness: values["loudness_lufs"].flatMap(Double.init), peak: values["peak_dbfs"].flatMap(Double.init),
                         status: status, failureClass: failureClass, error: error, outputs: outputs, audio: audioHref, wave: wave)
        recording.waveRMS = waveRMS
        recording.measures = measures
        if let file = turnsJSON, let turns = SpeakerTurnsFile.read(file) {
            recording.speakers = SpeakerTurnsFile.totals(turns)
            let index = Dictionary(uniqueKeysWithValues: recording.speakers.enumerated().map { ($0.element.speaker, $0.offset) })
            // Turns are on the source's timeline; the waveform may be drawn after a stage that
            // moved time: each turn is placed through the maps before it (decision 0084), or not
            // drawn when one of those maps is not recorded.
            if let place = waveTimeline(stage: waveStage, spec: spec, files: stepFiles, duration: recording.duration) {
                recording.turns = turns.map { (start: place.maps.toOutput($0.start), end: place.maps.toOutput($0.end), speaker: index[$0.shown] ?? 0) }
                    .filter { $0.end > $0.start }
                recording.waveDuration = place.duration
            }
        }
        if let file = chaptersFile { recording.chapters = ChapterSidecarFile.read(file) ?? [] }
        if let file = transcriptJSON {
            recording.transcript = Self.transcriptSegments(file)
            recording.transcriptAudio = transcriptFromSource ? sourceAudio : audioHref
        }
        return recording
    }

    /// How source seconds are placed on the waveform drawn from the step `stage`: the maps of the
    /// spec's time-moving transforms before that tap, each read from the cut list its
    /// `TimeMapRecording` tap wrote (`files`: step identity → absolute files), and the waveform's
    /// length in seconds (`duration`, the source's, mapped) when time moved. No maps when nothing
    /// before the tap moves time, or when the tap is not in the spec (it changed); nil when a
    /// transform before it moves time with no recorded map (turns are then not drawn).
    static package func waveTimeline(stage: String?, spec: JobSpec, files: [String: [String]], duration: Double?)
        -> (maps: [TimeMap], duration: Double?)? {
        guard let stage, let at = spec.stages.firstIndex(where: { p in
            (p.config as? any TapConfig).map { "\($0.name):\($0.pathTemplate.text)" == stage } ?? false
        }) else { return ([], nil) }
        var maps: [TimeMap] = []
        for p in spec.stages[..<at] where p.config.movesTime {
            guard let recorded = p.config as? any TimeMapRecording, let file = files[recorded.timeMapTap]?.first,
                  let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int), size <= SpeakerTurnsFile.largest,
                  let data = FileManager.default.contents(atPath: file), let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                  let map = TimeMap(cutList: o) else { return nil }
            maps.append(map)
        }
        return (maps, maps.isEmpty ? nil : duration.map { maps.toOutput($0) })
    }

    /// The segments of a transcript JSON (`{"segments": [{"start", "text"}]}`), at most 1 MB of it;
    /// empty when unreadable.
    static package func transcriptSegments(_ path: String) -> [(start: Double, text: String)] {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int), size <= 1 << 20,
              let data = FileManager.default.contents(atPath: path),
              let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let segments = o["segments"] as? [[String: Any]] else { return [] }
        // On the source's timeline (the player plays the source): a moved stream's transcript says where (decision 0072).
        return segments.map { ((($0["source_start"] ?? $0["start"]) as? NSNumber)?.doubleValue ?? 0, $0["text"] as? String ?? "") }
    }

    /// `target` (absolute) as a link relative to the folder `from` (absolute), each part
    /// percent-encoded: "../memo%201.flac".
    public static func relativeLink(from dir: String, to target: String) -> String {
        let a = dir.split(separator: "/").map(String.init)
        let b = target.split(separator: "/").map(String.init)
        var common = 0
        while common < a.count && common < b.count - 1 && a[common] == b[common] { common += 1 }
        let parts = Array(repeating: "..", count: a.count - common) + b[common...].map(percentEncoded)
        return parts.joined(separator: "/")
    }

    /// One path part for a URL: everything but unreserved ASCII escaped; a name that is not
    /// UTF-8 is escaped byte for byte (its own bytes, as the file system holds them).
    static package func percentEncoded(_ part: String) -> String {
        var out = ""
        for byte in FileNameBytes.bytes(part) {
            let c = Character(Unicode.Scalar(byte))
            if byte < 0x80, c.isLetter || c.isNumber || "-._~".contains(c) { out.append(c) } else { out += String(format: "%%%02X", byte) }
        }
        return out
    }

    /// `s` quoted for a POSIX shell when it needs it.
    static package func shellQuoted(_ s: String) -> String {
        if !s.isEmpty, s.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_./=:@%+,".contains($0)) }) { return s }
        return "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// Why a report cannot be made.
public enum ReportError: Error, CustomStringConvertible {
    /// `--run N` names a run the store does not have.
    case noSuchRun(Int64)

    public var description: String {
        switch self {
        case .noSuchRun(let id): return "no run \(id) in the state (segno status lists the recent runs)"
        }
    }
}
