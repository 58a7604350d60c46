import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP

/// `transcribe: { path: "{dir}/{stem}", formats: [vtt, srt, json], model: tiny.en, language: auto, from: source }`
/// writes what was said in the stream at its place in the chain — or, with `from: source`, in
/// the recording as decoded, whatever transforms come before it (the loader moves such a tap to
/// the head of the chain). One file per format: `path` + `.vtt` (WebVTT), `.srt` (SubRip),
/// `.json` (segments and words with times in seconds and confidence, language). Whisper through
/// faster-whisper in a helper process (`TranscribeHelper`). In `segno run`, recordings of at most
/// `batchSeconds` are transcribed in batches, packed into shared 30 s windows (`batch: auto`,
/// decision 0088); `batch: off` gives each its own. A recording longer than a chunk
/// (`TranscriptChunking`, 2 min) goes to the helper in chunks cut at quiet points (`chunks: auto`,
/// decision 0098); `chunks: off` sends it whole.
public struct TranscribeConfig: TapConfig, SourceObservingStage {
    public enum Format: String, Sendable, CaseIterable { case vtt, srt, json }
    public let pathTemplate: PathTemplate
    public let formats: [Format]
    public let model: String
    /// What the helper is given: a known model's name, or the folder `model` names, made absolute
    /// against the spec's folder (decision 0066).
    package let modelFolder: String
    public let language: String
    public let observesSource: Bool
    package let locator: SpeechLocator
    /// The helpers of this stage, with the model loaded, kept between recordings.
    package let helpers = TranscribeHelperPool()
    /// `batch: auto` (true) or `off`. Not part of the fingerprint: it changes how the model is
    /// run, not what is asked of it (decision 0088).
    public let batch: Bool
    /// The short recordings of this stage waiting for a shared transcription (decision 0088).
    package let batcher = TranscribeBatcher()
    /// Recordings up to this many seconds join a batch; longer ones are transcribed alone.
    static package let batchSeconds = 15.0
    /// Whether short recordings are batched: `batch: auto`, and one language for the whole batch
    /// (a given language or an English-only model; with `language: auto` on a multilingual
    /// model each recording's own language is detected, so each is transcribed alone).
    package var batches: Bool { batch && (language != "auto" || model.hasSuffix(".en")) }
    /// How a long recording is cut into chunks (`chunks: auto`), nil for `chunks: off`. Not part
    /// of the fingerprint, as `batch` (decision 0098). Tests shorten it.
    package var chunking: TranscriptChunking?
    /// Whether long recordings go in chunks: `chunks: auto`, and one language for the whole
    /// recording (a given language or an English-only model; with `language: auto` on a
    /// multilingual model each chunk would detect its own).
    package var chunks: TranscriptChunking? { language != "auto" || model.hasSuffix(".en") ? chunking : nil }
    public var name: String { "transcribe" }
    public var version: Int { 1 }
    /// WebVTT and SubRip are on the stream the tap hears (decision 0072).
    public var writesStreamTimes: Bool { !observesSource }
    public var options: [(String, String)] {
        [("path", pathTemplate.text), ("formats", formats.map(\.rawValue).joined(separator: ",")), ("model", model),
         ("language", language), ("from", observesSource ? "source" : "here")]
    }

    public init(path: PathTemplate, formats: [Format] = Format.allCases, model: String = TranscribeModels.standard,
                language: String = "auto", observesSource: Bool = false, batch: Bool = true, chunks: Bool = true,
                locator: SpeechLocator = .standard, baseDirectory: String? = nil) {
        self.batch = batch
        self.chunking = chunks ? .standard : nil
        self.pathTemplate = path
        self.formats = formats
        self.model = model
        self.modelFolder = TranscribeModels.folder(of: model, base: baseDirectory)
        self.language = language
        self.observesSource = observesSource
        self.locator = locator
    }

    public func resolvePaths(_ context: RecordingContext) throws(TemplateError) -> [String] {
        var base = try pathTemplate.resolve(context)
        // A path that already ends in a format's extension ("{stem}.json") names that file: the
        // others go beside it under the same stem, not "memo.json.srt".
        if let named = Self.namedFormat(pathTemplate), base.lowercased().hasSuffix("." + named.rawValue) {
            base.removeLast(named.rawValue.count + 1)
        }
        return formats.map { base + "." + $0.rawValue }
    }

    /// The format whose extension `path` ends in (`{stem}.json` → json), nil for a bare stem.
    static package func namedFormat(_ path: PathTemplate) -> Format? {
        Format.allCases.first { path.text.lowercased().hasSuffix("." + $0.rawValue) }
    }

    public var providesSpokenText: Bool { true }

    /// The `text` of the transcript JSON among `paths`, or the cues of the WebVTT/SRT file.
    public func spokenText(fromOutputs paths: [String]) -> String? {
        for p in paths where p.hasSuffix(".json") {
            if let data = FileManager.default.contents(atPath: p),
               let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let text = o["text"] as? String { return text }
        }
        return nil
    }

    /// Its taps find the segments (`Findings.segments`, for chapters) and use the speakers' turns
    /// (`Findings.turns`): each segment and word then says who spoke it (decision 0077).
    public var findsKinds: Set<Findings.Kind> { [.segments] }
    public var usesKinds: Set<Findings.Kind> { [.turns] }

    public func makeTap(paths: [String], context: RecordingContext) throws -> any Tap {
        TranscribeTap(config: self, paths: paths, file: context.relativePath, parking: batches ? context.parking : nil)
    }

    /// Transcribes a packed batch on a helper of the pool (decision 0088): the packed stream goes
    /// to the helper as one recording, and the answer is its transcript (times in the stream).
    /// Throws when the helper failed or refused it (the helper is then ended or given back); the
    /// batch's members then go alone. Called by the member that runs the batch.
    package func transcribeBatch(_ audio: [Float], _ packing: TranscriptPacking) throws(SpeechError) -> Transcript {
        let helper = try helpers.take(model: modelFolder, language: language, locator: locator)
        let answer: Result<Transcript, SpeechError>
        do {
            try audio.withUnsafeBufferPointer { try helper.send($0) }
            answer = try helper.finish()
        } catch {
            helper.terminate()
            throw (error as? SpeechError) ?? .failed(engine: "transcribe", message: "\(error)")
        }
        helpers.checkIn(helper)
        return try answer.get()
    }
}


/// One recording's transcription: mono, 16 kHz (libsoxr HQ), streamed to the helper.
final package class TranscribeTap: Tap, TimelineUsing, FindingTap, FindingsUsingTap, OverlappingStage {
    package let config: TranscribeConfig
    package let paths: [String]
    /// The helpers, one per lane (`TranscriptChunking.lanes`): chunk k goes to lane k mod lanes.
    /// Lane 0's is taken when the recording streams to a helper of its own, the others' when
    /// their first chunk begins; nil once given back or ended.
    private var lanes: [TranscribeHelper?] = Array(repeating: nil, count: TranscriptChunking.lanes)
    /// Whether a lane's helper was taken (a recording of one chunk uses lane 0 only).
    private var taken = false
    private let input = SpeechInput()
    /// The run's worker pool when this recording may join a batch (decision 0088); nil: alone.
    private let parking: WorkerParking?
    /// The 16 kHz samples kept while the recording may still join a batch (at most
    /// `TranscribeConfig.batchSeconds`); nil once it streams to a helper of its own.
    private var kept: [Float]?

    /// Cuts the recording into chunks once it streams to a helper of its own (decision 0098);
    /// nil: it goes whole.
    private var chunker: TranscriptChunker?
    /// The transcripts of the chunks answered so far, in order.
    private var pieces: [Transcript] = []
    /// Chunks ended (sent to their lane's helper whole); the next chunk's number.
    private var ended = 0
    /// Chunks answered, in order (a failed answer counts).
    private var answered = 0
    /// Chunks ended and not yet answered.
    private var unanswered: Int { ended - answered }
    /// Whether samples were sent since the last chunk ended.
    private var open = false
    /// Set in a split recording (`overlap`): the lanes' helpers transcribe chunks while the next
    /// arrives, instead of the tap waiting at each cut.
    private var overlapping = false

    /// The recording, for messages.
    package let file: String
    /// The maps of the stages before this tap that move time (decision 0072).
    private var timeline: () -> [TimeMap] = { [] }

    package func useTimeline(_ maps: @escaping () -> [TimeMap]) { timeline = maps }

    package var finds: Set<Findings.Kind> { config.findsKinds }
    package var uses: Set<Findings.Kind> { config.usesKinds }
    /// The turns of the same chain's speakers tap (source seconds); nil without one (or when it
    /// failed: the runner then does not keep this tap's result, decision 0077).
    private var turns: [TranscriptTurn]?
    /// The segments and words in seconds of the source, as written (split by speaker); set by `finish`.
    package private(set) var findings = Findings()

    /// Called once, just before `finish`, with what the taps that finished before it found.
    package func use(_ findings: Findings) {
        turns = findings.turns.map { $0.map { TranscriptTurn(start: $0.start, end: $0.end, speaker: TranscriptSpeaker(label: $0.speaker, name: $0.name)) } }
    }

    package init(config: TranscribeConfig, paths: [String], file: String, parking: WorkerParking? = nil) {
        self.config = config
        self.paths = paths
        self.file = file
        self.parking = parking
    }

    /// Runs `body`, naming the recording in a `SpeechError` it throws.
    private func naming<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as SpeechError { throw e.naming(file) }
    }

    package func start(_ format: AudioFormat) throws {
        try input.start(sampleRate: format.sampleRate)
        if parking != nil {
            kept = []
        } else {
            try takeHelper()
        }
    }

    /// Takes lane 0's helper and starts cutting chunks. Called once, when the recording streams
    /// to helpers of its own.
    private func takeHelper() throws {
        lanes[0] = try naming { try config.helpers.take(model: config.modelFolder, language: config.language, locator: config.locator) }
        taken = true
        chunker = config.chunks.map { TranscriptChunker($0) }
    }

    /// The helper of the lane chunk `k` goes to, taken from the pool when its lane has none yet;
    /// nil when the lane's helper was ended (the recording is failing).
    private func helper(forChunk k: Int) throws -> TranscribeHelper? {
        let lane = k % lanes.count
        if lanes[lane] == nil && k == lane && taken {
            lanes[lane] = try naming { try config.helpers.take(model: config.modelFolder, language: config.language, locator: config.locator) }
        }
        return lanes[lane]
    }

    package func overlap() { overlapping = true }
    /// Whether `overlap` was called (tests).
    package var overlaps: Bool { overlapping }
    /// Where each chunk began, in 16 kHz samples ([0] for a recording sent whole; tests).
    package var chunkStarts: [Int] { chunker?.starts ?? [0] }

    /// Leaves the batch: takes a helper of its own and sends it what was kept. Called when the
    /// recording grows past `batchSeconds`, holds a sample that is not a finite number (it could
    /// spoil its neighbours' window), or its batch failed.
    private func goAlone() throws {
        guard let samples = kept else { return }
        kept = nil
        try takeHelper()
        try samples.withUnsafeBufferPointer { try send($0) }
    }

    package func observe(_ block: AudioBlock) throws {
        try input.feed(block) { try send($0) }
    }

    private func send(_ s: UnsafeBufferPointer<Float>) throws {
        if kept != nil {
            kept!.append(contentsOf: s)
            if kept!.count > Int(TranscribeConfig.batchSeconds * 16000) || s.contains(where: { !$0.isFinite }) { try goAlone() }
            return
        }
        guard taken else { return }
        guard let chunker else { return try toHelper(s) }
        try chunker.feed(s, send: { s in try toHelper(s) }, cut: { try endChunk() })
    }

    /// Sends samples of the chunk being sent to its lane's helper.
    private func toHelper(_ s: UnsafeBufferPointer<Float>) throws {
        guard !s.isEmpty, let helper = try helper(forChunk: ended) else { return }
        open = true
        try naming { try helper.send(s) }
    }

    /// Ends the chunk sent so far. Overlapping, it first waits for the oldest chunk when
    /// `TranscriptChunking.queued` per lane are unanswered (so each helper holds at most that many
    /// and the one it receives); otherwise it waits for this chunk's answer before more is sent,
    /// so the lanes take turns.
    private func endChunk() throws {
        guard let helper = try helper(forChunk: ended) else { return }
        if overlapping && unanswered >= TranscriptChunking.queued * lanes.count { try collect() }
        do { try helper.end() } catch {
            drop(lane: ended % lanes.count)
            throw error.naming(file)
        }
        open = false
        ended += 1
        if !overlapping { try collect() }
    }

    /// Reads the oldest unanswered chunk's transcript from its lane. A helper that died is ended;
    /// one that refused the chunk goes back to the pool when nothing else is queued in it,
    /// neither a chunk ended nor one being sent (the recording fails).
    private func collect() throws {
        let lane = answered % lanes.count
        guard let helper = lanes[lane] else {
            throw SpeechError.failed(engine: "transcribe", message: "the helper of chunk \(answered + 1) is gone").naming(file)
        }
        let answer: Result<Transcript, SpeechError>
        do { answer = try helper.answer() } catch {
            drop(lane: lane)
            throw error.naming(file)
        }
        answered += 1
        switch answer {
        case .success(let t): pieces.append(t)
        case .failure(let e):
            release(lane: lane)
            throw e.naming(file)
        }
    }

    /// Whether a lane's helper has nothing of this recording left: no chunk ended and unanswered,
    /// none being sent.
    private func isIdle(lane: Int) -> Bool {
        !(answered..<ended).contains { $0 % lanes.count == lane } && !(open && ended % lanes.count == lane)
    }

    /// Gives a lane's helper back to the pool when it is idle, else ends it.
    private func release(lane: Int) {
        guard let helper = lanes[lane] else { return }
        lanes[lane] = nil
        if isIdle(lane: lane) { config.helpers.checkIn(helper) } else { helper.terminate() }
    }

    private func drop(lane: Int) {
        lanes[lane]?.terminate()
        lanes[lane] = nil
    }

    package func finish() throws -> [ProducedFile] {
        try input.finish { try send($0) }
        var batched: Transcript?
        if let samples = kept, let parking {
            kept = nil
            let config = config
            switch config.batcher.transcribe(samples, parking: parking, run: { (audio, packing) throws(SpeechError) -> Transcript in
                try config.transcribeBatch(audio, packing)
            }) {
            case .transcript(let t): batched = t
            case .alone:
                kept = samples
                try goAlone()
            }
        }
        let heard: Transcript
        if let batched {
            heard = batched
        } else {
            guard lanes[0] != nil else { return [] }
            try chunker?.finish(send: { s in try toHelper(s) })
            try endChunk()
            while unanswered > 0 { try collect() }
            // The helpers go back to the pool once they answered everything; one that died is gone.
            for case let helper? in lanes { config.helpers.checkIn(helper) }
            lanes = lanes.map { _ in nil }
            let rate = Double(VoiceActivityEngine.rate)
            heard = pieces.count == 1 ? pieces[0] : Transcript.joined(pieces, starts: (chunker?.starts ?? [0]).map { Double($0) / rate })
        }
        let maps = timeline()
        let toSource: ((Double) -> Double)? = maps.keepsTime ? nil : { maps.toSource($0) }
        let t = turns.map { heard.attributed(to: $0, toSource: toSource) } ?? heard
        let src = toSource ?? { $0 }
        findings = Findings(segments: t.segments.map { s in
            Findings.Segment(start: src(s.start), end: src(s.end), text: s.text, words: s.words.map { Findings.Word(start: src($0.start), end: src($0.end), text: $0.text) })
        }, language: t.language)
        var produced: [ProducedFile] = []
        for (format, path) in zip(config.formats, paths) {
            let text: String
            switch format {
            case .vtt: text = t.webVTT
            case .srt: text = t.srt
            case .json: text = t.json(model: config.model, toSource: toSource)
            }
            try OutputFile.write(Array(text.utf8), to: path)
            var file = ProducedFile(stage: "transcribe", path: path, values: ["language": t.language, "segments": String(t.segments.count),
                                                                              "from": config.observesSource ? "source" : "here"])
            if produced.isEmpty { file.spoken = t.segments.map(\.text).joined(separator: " ") }
            produced.append(file)
        }
        return produced
    }

    /// The recording failed or was interrupted: an idle helper goes back to the pool, one that
    /// still holds some of it is ended.
    package func abandon() {
        kept = nil
        for lane in lanes.indices { release(lane: lane) }
    }
}

extension TranscribeConfig: HelperHoldingStage {
    public func stopIdleHelpers() { helpers.shutdown() }
}

extension TranscribeConfig {
    /// The spec's options for this stage: every check, before any audio flows (SoX's getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(declaredBy: declaration)
        let path = try StageRegistry.parseTemplate(o["path"]!)
        // A path naming one file ("{stem}.json") writes that format only, unless formats says more.
        var formats = namedFormat(path).map { [$0] } ?? Format.allCases
        if let f = o["formats"] {
            formats = try f.list(allowSingle: true).map { x throws(SpecError) in try x.choice(Format.self) }
            if formats.isEmpty { throw f.error("give at least one of vtt, srt, json") }
            if Set(formats).count != formats.count { throw f.error("a format is listed twice") }
        }
        let model = try o["model"]?.string() ?? TranscribeModels.standard
        if model.isEmpty { throw o["model"]!.error("model is a known name (\(TranscribeModels.known.map(\.name).joined(separator: ", "))) or a model folder") }
        let language = try o["language"]?.string() ?? "auto"
        guard language == "auto" || (2...3).contains(language.count) && language.allSatisfy({ $0.isLowercase && $0.isASCII }) else {
            throw o["language"]!.error("language is auto or a language code such as en, ko, de")
        }
        if model.hasSuffix(".en") && language != "auto" && language != "en" {
            throw o["language"]!.error("the model \(model) knows English only; give a multilingual model for \(language)")
        }
        let batch = try o["batch"]?.either("batch", ("auto", "short recordings share the model's window"), or: ("off", "each its own")) ?? true
        let chunks = try o["chunks"]?.either("chunks", ("auto", "a long recording goes to Whisper in chunks cut at quiet points"), or: ("off", "whole")) ?? true
        return TranscribeConfig(path: path, formats: formats, model: model, language: language, observesSource: try o.observesSource(),
                                batch: batch, chunks: chunks, baseDirectory: c.baseDirectory)
    }
}

extension TranscribeConfig {
    public static let declaration = StageDeclaration(
        key: "transcribe", kind: .tap,
        summary: "Writes what was said (Whisper), with times, as WebVTT, SubRip and JSON; the text goes into the catalogue.",
        options: [
            .init("path", .pathTemplate, default: nil, help: "Where the files go: without extension for every format (\"{dir}/{stem}\"), or ending in .vtt, .srt or .json for that one."),
            .init("formats", .list, default: Format.allCases.map(\.rawValue).joined(separator: ", "), .oneOf(Format.self), help: "One file per format."),
            .init("model", .text, default: TranscribeModels.standard, help: "A known model name (tiny.en, base) or a model folder."),
            .init("language", .text, default: "auto", help: "auto, or a language code such as en, ko, de."),
            .fromSource,
            .init("batch", .choice, default: "auto", .choices(["auto", "off"]),
                  help: "auto: in `segno run`, recordings of at most \(canonicalNumber(batchSeconds)) s share Whisper's 30 s windows, several transcribed in one call (each keeps its own words and times; needs a given language or an English-only model); off: each recording alone."),
            .init("chunks", .choice, default: "auto", .choices(["auto", "off"]),
                  help: "auto: a recording longer than \(canonicalNumber(TranscriptChunking.standard.seconds / 60)) min goes to Whisper in chunks of about that length, cut at the quietest point of the \(canonicalNumber(TranscriptChunking.standard.lookBackSeconds)) s before each end (a split recording transcribes one while the next arrives; needs a given language or an English-only model); off: whole."),
        ],
        example: "transcribe: { path: \"{dir}/{stem}\", formats: [vtt, json], model: tiny.en }",
        capabilities: [.writesSidecars, .providesSpokenText, .observesSource, .usesHelper])
}
