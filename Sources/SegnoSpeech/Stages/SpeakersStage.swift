import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP

/// `speakers: { path: "{dir}/{stem}.speakers.json", rttm: "{dir}/{stem}.rttm", speakers: auto,
/// min_turn: 1s, vad: silero, from: here }` (shorthand `speakers: true`, or `speakers: 2` for a
/// known count): who spoke when in the stream at its place (or, with `from: source`, in the
/// recording as decoded). Speech found by the voice activity detector is cut into 1.5 s windows
/// every 0.75 s, each embedded by the GE2E speaker encoder (PyPI resemblyzer's weights, run by the
/// `segno-speakers` helper), and the windows are clustered (decision 0073). Writes a JSON array of
/// turns `[{start, end, speaker, confidence}]` in seconds of the source (with `stream_start` and
/// `stream_end` when a stage before it moved time, decision 0072) and RTTM on the source timeline.
public struct SpeakersConfig: TapConfig, SourceObservingStage {
    public let pathTemplate: PathTemplate
    /// The RTTM file's template; nil writes none.
    public let rttm: PathTemplate?
    /// The number of speakers when known; nil finds it (`auto`).
    public let count: Int?
    /// Turns shorter than this, in seconds, go to a neighbouring speaker.
    public let minTurn: Double
    public let engine: VoiceActivityEngine
    public let observesSource: Bool
    package let locator: SpeechLocator
    /// The helpers of this stage, with the weights loaded, kept between recordings.
    package let helpers = SpeakerHelperPool()
    /// Loaded voice detectors, kept between recordings.
    package let detectors = VoiceDetectorPool()
    /// The enrolled prints and archive-wide labels, prepared by the runner each pass (decision 0075).
    package let book = VoiceBook()
    public var name: String { "speakers" }
    public var version: Int { 1 }
    public var options: [(String, String)] {
        [("path", pathTemplate.text), ("rttm", rttm?.text ?? "none"), ("speakers", count.map(String.init) ?? "auto"),
         ("min_turn", canonicalNumber(minTurn)), ("vad", engine.rawValue), ("from", observesSource ? "source" : "here")]
    }

    public static let defaultPath = "{dir}/{stem}.speakers.json"
    public static let defaultRTTM = "{dir}/{stem}.rttm"
    public static let standardMinTurn = 1.0
    public static let longestMinTurn = 60.0
    public static let mostSpeakers = 20

    public init(path: PathTemplate, rttm: PathTemplate?, count: Int? = nil, minTurn: Double = SpeakersConfig.standardMinTurn,
                engine: VoiceActivityEngine = .standard, observesSource: Bool = false, locator: SpeechLocator = .standard) {
        self.pathTemplate = path
        self.rttm = rttm
        self.count = count
        self.minTurn = minTurn
        self.engine = engine
        self.observesSource = observesSource
        self.locator = locator
    }

    public func resolvePaths(_ context: RecordingContext) throws(TemplateError) -> [String] {
        var paths = [try pathTemplate.resolve(context)]
        if let rttm { paths.append(try rttm.resolve(context)) }
        return paths
    }

    /// The labels and names of the recorded turn file, for the catalogue: `find Alice` and
    /// `find --speaker` find the recordings where a speaker spoke.
    public func spokenText(fromOutputs paths: [String]) -> String? {
        paths.lazy.compactMap(SpeakerTurnsFile.read).first.map(SpeakerTurnsFile.searchWords)
    }

    /// Its taps find the turns (`Findings.turns`) a transcript in the same chain uses (decision 0077).
    public var findsKinds: Set<Findings.Kind> { [.turns] }

    public func makeTap(paths: [String], context: RecordingContext) throws -> any Tap {
        SpeakersTap(config: self, paths: paths, file: context.relativePath)
    }
}

/// One recording's speaker turns: mono, 16 kHz (libsoxr HQ), fed to the voice activity detector;
/// the windows of each speech segment go to the embedding helper as the segment closes
/// (`SpeakerWindows`); the clustering and turns at `finish`.
final package class SpeakersTap: Tap, TimelineUsing, FindingTap {
    package let config: SpeakersConfig
    package let paths: [String]
    package let file: String
    private var helper: SpeakerHelper?
    private var windows: SpeakerWindows?
    private let input = SpeechInput()
    private var timeline: () -> [TimeMap] = { [] }

    package func useTimeline(_ maps: @escaping () -> [TimeMap]) { timeline = maps }

    package var finds: Set<Findings.Kind> { config.findsKinds }
    /// The turns in seconds of the source, labelled as in the turn file; set by `finish`.
    package private(set) var findings = Findings()

    package init(config: SpeakersConfig, paths: [String], file: String) {
        self.config = config
        self.paths = paths
        self.file = file
    }

    private func naming<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as SpeechError { throw e.naming(file) }
    }

    package func start(_ format: AudioFormat) throws {
        try input.start(sampleRate: format.sampleRate)
        let detector = try naming { try config.detectors.take(config.engine, locator: config.locator) }
        let helper = try naming { try config.helpers.take(locator: config.locator) }
        self.helper = helper
        windows = SpeakerWindows(detector: detector, helper: helper)
    }

    package func observe(_ block: AudioBlock) throws {
        try input.feed(block) { try send($0) }
    }

    private func send(_ s: UnsafeBufferPointer<Float>) throws {
        do { try windows?.feed(s) } catch {
            helper?.terminate()
            helper = nil
            windows = nil
            throw error.naming(file)
        }
    }

    package func finish() throws -> [ProducedFile] {
        try input.finish { try send($0) }
        guard let helper, let found = windows else { return [] }
        self.helper = nil
        let answer: Result<[[Float]], SpeechError>
        do { answer = try found.finish() } catch {
            helper.terminate()
            throw error.naming(file)
        }
        config.helpers.checkIn(helper)
        let embeddings = try naming { try answer.get() }
        let rate = VoiceActivityEngine.rate
        let labels = Diarizer.cluster(embeddings, count: config.count,
                                      clusterable: found.windows.map { Double($0.count) >= Diarizer.shortestClustered * Double(rate) })
        let turns = Diarizer.turns(speech: found.speech, windows: found.windows, labels: labels, embeddings: embeddings,
                                   rate: rate, minTurn: config.minTurn)
        let maps = timeline()
        let toSource: (Double) -> Double = maps.keepsTime ? { $0 } : { maps.toSource($0) }
        var files = SpeakerFiles(turns: turns, toSource: toSource, movedTime: !maps.keepsTime,
                                 recording: SpeakerFiles.recordingID(file))
        // Archive-wide labels and enrolled names, when the run keeps voices (decision 0075).
        let voices = Diarizer.voices(turns: turns, windows: found.windows, embeddings: embeddings, rate: rate)
        // The state gives the labels in the transaction that keeps the voices; the files are
        // written inside it, so its row is stored once they are in place (decision 0094).
        let named = try config.book.keep(path: file, voices: voices) { labels, names in
            for (i, l) in labels.enumerated() { files.labels[i] = SpeakerFiles.label(l - 1) }
            for (i, n) in names.enumerated() { if let n { files.names[i] = n } }
            try write(files)
            return files.keptText
        }
        if named == nil { try write(files) }
        // The turns as written (source seconds, labels, names) for the transcript (decision 0077).
        findings = Findings(turns: files.turns.map { Findings.Turn(start: $0.start, end: $0.end, speaker: $0.label ?? SpeakerFiles.label($0.speaker), name: $0.name) })
        let speakers = Set(turns.map(\.speaker)).count
        var values = ["speakers": String(speakers), "turns": String(turns.count)]
        let names = Set(files.names.values).sorted()
        if !names.isEmpty { values["names"] = names.joined(separator: ", ") }
        var produced = paths.map { ProducedFile(stage: "speakers", path: $0, values: values) }
        produced[0].spoken = SpeakerTurnsFile.parse(Data(files.json.utf8)).map(SpeakerTurnsFile.searchWords)
        return produced
    }

    private func write(_ files: SpeakerFiles) throws {
        try OutputFile.write(Array(files.json.utf8), to: paths[0])
        if paths.count > 1 { try OutputFile.write(Array(files.rttm.utf8), to: paths[1]) }
    }

    package func abandon() { helper?.terminate() }
}

/// The `speakers` tap's files from its turns: the JSON array and RTTM, both on the source
/// timeline (decision 0072), each turn with its speaker's label and, when it matched an enrolled
/// voice, its name (decision 0075).
package struct SpeakerFiles {
    /// One turn as written: seconds of the source, and of the stream when time moved before the tap.
    package struct Entry: Sendable, Equatable {
        package var start: Double
        package var end: Double
        package var streamStart: Double?
        package var streamEnd: Double?
        package var speaker: Int
        package var confidence: Double
    }
    package var entries: [Entry]
    /// RTTM's file id: the recording's path without extension, spaces as `_`.
    package let recording: String
    /// Labels (`speaker-7`) and names by the recording's speaker number; without a label a speaker
    /// is `speaker-N`, N its number + 1.
    package var labels: [Int: String] = [:]
    package var names: [Int: String] = [:]

    package init(turns: [SpeakerTurn], toSource: (Double) -> Double, movedTime: Bool, recording: String) {
        entries = turns.map { t in
            Entry(start: toSource(t.start), end: toSource(t.end), streamStart: movedTime ? t.start : nil,
                  streamEnd: movedTime ? t.end : nil, speaker: t.speaker, confidence: t.confidence)
        }
        self.recording = recording
        for t in turns {
            if let l = t.label { labels[t.speaker] = l }
            if let n = t.name { names[t.speaker] = n }
        }
    }

    package init(entries: [Entry], recording: String) {
        self.entries = entries
        self.recording = recording
    }

    package static func label(_ speaker: Int) -> String { "speaker-\(speaker + 1)" }

    package static func recordingID(_ relativePath: String) -> String {
        let stem = (relativePath as NSString).deletingPathExtension
        return String(stem.map { $0.isWhitespace ? "_" : $0 })
    }

    /// The label a speaker number is written with.
    package func label(of speaker: Int) -> String { labels[speaker] ?? Self.label(speaker) }

    /// The turns as written, with labels and names: what the transcripts and the report read.
    package var turns: [SpeakerTurn] {
        entries.map { SpeakerTurn(start: $0.start, end: $0.end, speaker: $0.speaker, confidence: $0.confidence,
                                  label: label(of: $0.speaker), name: names[$0.speaker]) }
    }

    package var json: String {
        let items: [JSONValue] = entries.map { t in
            var o: [(String, JSONValue)] = [("start", .rounded(t.start, places: 3)), ("end", .rounded(t.end, places: 3)),
                                            ("speaker", .string(label(of: t.speaker)))]
            if let n = names[t.speaker] { o.append(("name", .string(n))) }
            o.append(("confidence", .rounded(t.confidence, places: 3)))
            if let a = t.streamStart, let b = t.streamEnd { o += [("stream_start", .rounded(a, places: 3)), ("stream_end", .rounded(b, places: 3))] }
            return .object(o)
        }
        return JSONValue.array(items).serialized() + "\n"
    }

    /// `SPEAKER <file> 1 <onset> <duration> <NA> <NA> <speaker> <NA> <NA>`, one line per turn; the
    /// speaker is the name (spaces as `_`: RTTM's fields are words) or else the label.
    package var rttm: String {
        entries.map { t in
            let who = names[t.speaker].map { String($0.map { $0.isWhitespace ? "_" : $0 }) } ?? label(of: t.speaker)
            return "SPEAKER \(recording) 1 \(String(format: "%.3f", t.start)) \(String(format: "%.3f", max(0, t.end - t.start))) <NA> <NA> \(who) <NA> <NA>\n"
        }.joined()
    }

    /// What the state keeps to write the files again (`KeptSpeakers.turns`): `{"recording": id,
    /// "labels": [label of speaker 0, …], "turns": [[start, end, speaker, confidence, stream_start, stream_end], …]}`.
    package var keptText: String {
        let count = (entries.map(\.speaker).max() ?? -1) + 1
        return JSONValue.object([
            ("recording", .string(recording)),
            ("labels", .array((0..<count).map { .string(label(of: $0)) })),
            ("turns", .array(entries.map { t in
                .array([.rounded(t.start, places: 4), .rounded(t.end, places: 4), .int(t.speaker), .rounded(t.confidence, places: 4),
                        t.streamStart.map { JSONValue.rounded($0, places: 4) } ?? .null, t.streamEnd.map { JSONValue.rounded($0, places: 4) } ?? .null])
            })),
        ]).serialized()
    }

    /// `keptText` read back (labels included, no names); nil when it is not what `keptText` writes.
    package init?(kept text: String) {
        guard let o = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
              let recording = o["recording"] as? String, let labels = o["labels"] as? [String], let list = o["turns"] as? [[Any]] else { return nil }
        var entries: [Entry] = []
        for t in list {
            guard t.count == 6, let a = (t[0] as? NSNumber)?.doubleValue, let b = (t[1] as? NSNumber)?.doubleValue,
                  let s = (t[2] as? NSNumber)?.intValue, let c = (t[3] as? NSNumber)?.doubleValue, s >= 0 else { return nil }
            entries.append(Entry(start: a, end: b, streamStart: (t[4] as? NSNumber)?.doubleValue, streamEnd: (t[5] as? NSNumber)?.doubleValue,
                                 speaker: s, confidence: c))
        }
        self.init(entries: entries, recording: recording)
        for (i, l) in labels.enumerated() { self.labels[i] = l }
    }
}

extension SpeakersConfig {
    /// The spec's options for this stage: every check, before any audio flows.
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let standard = try! PathTemplate(defaultPath), standardRTTM = try! PathTemplate(defaultRTTM)
        if v.isScalar {
            if let n = try? v.int() {
                guard (1...mostSpeakers).contains(n) else { throw v.error("speakers is auto or a number of speakers, 1…\(mostSpeakers)") }
                return SpeakersConfig(path: standard, rttm: standardRTTM, count: n)
            }
            guard try v.bool() else { throw v.error("speakers: false does nothing; remove the stage instead") }
            return SpeakersConfig(path: standard, rttm: standardRTTM)
        }
        let o = try v.options(declaredBy: declaration)
        let path = try o["path"].map { x throws(SpecError) in try StageRegistry.parseTemplate(x) } ?? standard
        var rttm: PathTemplate? = standardRTTM
        if let r = o["rttm"] {
            if let keep = try? r.bool() {
                guard !keep else { throw r.error("rttm is a path template, or false for none") }
                rttm = nil
            } else { rttm = try StageRegistry.parseTemplate(r) }
        }
        var count: Int? = nil
        if let s = o["speakers"] {
            if (try? s.string()) != "auto" {
                let n = try s.int(in: 1...mostSpeakers)
                count = n
            }
        }
        let minTurn = try o["min_turn"]?.duration() ?? standardMinTurn
        guard minTurn >= 0 && minTurn <= longestMinTurn else { throw o["min_turn"]!.error("min_turn is 0…\(canonicalNumber(longestMinTurn))s") }
        return SpeakersConfig(path: path, rttm: rttm, count: count, minTurn: minTurn,
                              engine: try o["vad"]?.choice(VoiceActivityEngine.self) ?? .standard, observesSource: try o.observesSource())
    }

    public static let declaration = StageDeclaration(
        key: "speakers", kind: .tap,
        summary: "Finds who spoke when (GE2E voice embeddings, clustered) and writes the turns as JSON and RTTM on the source timeline.",
        options: [
            .init("path", .pathTemplate, default: defaultPath, help: "The turns as a JSON array: start, end (seconds of the source), speaker, confidence."),
            .init("rttm", .pathTemplate, default: defaultRTTM, help: "The turns as RTTM (what pyannote.metrics and dscore read); false writes none."),
            .init("speakers", .text, default: "auto", help: "auto finds how many spoke; a number (1…20) when it is known."),
            .init("min_turn", .duration, unit: "s", default: canonicalNumber(standardMinTurn), .range(0, longestMinTurn),
                  help: "A turn shorter than this between another speaker's goes to that speaker."),
            .init("vad", .choice, default: VoiceActivityEngine.standard.rawValue, .oneOf(VoiceActivityEngine.self),
                  help: "The voice activity detector that finds the speech."),
            .fromSource,
        ],
        shorthand: "`speakers: true` takes the defaults; `speakers: 2` sets the count",
        example: "speakers: { speakers: auto, min_turn: 1s, rttm: \"{dir}/{stem}.rttm\" }",
        capabilities: [.writesSidecars, .observesSource, .usesHelper, .findsSpeakers])
}

extension SpeakersConfig: NeedsInstalledParts {
    public func missingParts() -> [String] {
        var out: [String] = []
        if locator.python == nil {
            out.append("the speech environment's Python is not installed: bin/python3 was looked for in \(locator.roots.joined(separator: ", ")); \(SpeechLocator.installHint)")
        }
        if SpeakerHelper.helperPath(locator) == nil {
            out.append("the segno-speakers helper is not installed: it was looked for beside segno and in \(locator.roots.map { $0 + "/bin" }.joined(separator: ", ")); \(SpeechLocator.installHint)")
        }
        if let m = locator.missingLine(SpeakerHelper.model.relative, what: "the speaker encoder", package: SpeakerHelper.model.package) { out.append(m) }
        let known = VoiceActivityEngine.allCases.map(\.rawValue).joined(separator: ", ")
        out += engine.requiredFiles.compactMap { locator.missingLine($0.relative, what: "the vad engine \(engine.rawValue) (one of \(known))", package: $0.package) }
        return out
    }
}

extension SpeakersConfig: HelperHoldingStage {
    public func stopIdleHelpers() { helpers.shutdown() }
}
