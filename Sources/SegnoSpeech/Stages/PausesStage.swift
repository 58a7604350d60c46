import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP

/// `pauses: { trim: true, shorten: { longer_than: 2s, to: 0.7s }, vad: silero, cuts: "{dir}/{stem}.cuts.json" }`
/// (shorthand `pauses: true`): cuts the silence before and after the speech (`trim`) and
/// shortens long pauses inside it (`shorten`, or `shorten: false`), with 10 ms fades at every cut
/// inside the recording. Speech is found by Silero VAD (`vad: silero`, the default) or WebRTC's
/// (`vad: webrtc`); `PauseRules.padBefore` (0.4 s) and `padAfter` (0.25 s) are kept around it. The cut list (source → output
/// times) is written by a tap the spec loader places just before this stage (`companionsBefore`).
public struct PausesConfig: TransformConfig, CompanionStages {
    public let rules: PauseRules
    public let engine: VoiceActivityEngine
    /// The cut list's path template.
    public let cuts: PathTemplate
    package let locator: SpeechLocator
    /// Loaded detectors the recordings of a run hand on (the cut-list tap shares them).
    package let detectors = VoiceDetectorPool()
    public var name: String { "pauses" }
    public var version: Int { 1 }
    public var movesTime: Bool { true }
    public var options: [(String, String)] {
        [("trim", String(rules.trim)), ("longer_than", rules.longerThan.map(canonicalNumber) ?? "none"),
         ("to", canonicalNumber(rules.to)), ("vad", engine.rawValue)]
    }
    public static let defaultCuts = "{dir}/{stem}.cuts.json"
    static package var standardCuts: PathTemplate { try! PathTemplate(defaultCuts) }

    public init(rules: PauseRules, engine: VoiceActivityEngine = .standard, cuts: PathTemplate, locator: SpeechLocator = .standard) {
        self.rules = rules
        self.engine = engine
        self.cuts = cuts
        self.locator = locator
    }

    public func makeTransform() throws -> any Transform {
        PausesTransform(editor: PauseEditor(rules: rules, detector: try detectors.take(engine, locator: locator), keepsAudio: true))
    }

    /// The cut-list tap, observing the same stream just before this stage.
    public var companionsBefore: [any StageConfig] { [CutListConfig(pauses: self)] }
}


/// One recording's pause editing: the editor holds what is not yet decided and gives the rest.
final package class PausesTransform: Transform, TimelineChanging {
    package let editor: PauseEditor
    /// The edited frames, swapped with the block (no allocation per block once grown).
    private var out = AudioBlock(channels: 1)

    package init(editor: PauseEditor) { self.editor = editor }

    package func start(_ input: AudioFormat) throws -> AudioFormat {
        try editor.start(input)
        out = AudioBlock(channels: input.channels, capacity: 8192)
        return input
    }

    package func process(_ block: inout AudioBlock) throws {
        out.frames = 0
        try editor.feed(block, into: &out)
        swap(&block, &out)
    }

    package func finish(_ block: inout AudioBlock) throws {
        block.frames = 0
        try editor.finish(into: &block)
    }

    /// The stretches kept between the cuts (decision 0072). Read after `finish`.
    package var timeMap: TimeMap { editor.timeMap }
}

extension PauseEditor {
    /// The stretches of the input kept between the cuts, with their place in the output, in
    /// seconds; complete after `finish`. What the cut list's `kept` array says.
    package var timeMap: TimeMap {
        let r = Double(max(rate, 1))
        var pieces: [TimeMap.Piece] = []
        var from = 0
        for c in cuts + [PauseCut(source: inputFrames..<inputFrames, at: outputFrames)] {
            if c.source.lowerBound > from {
                pieces.append(TimeMap.Piece(inputStart: Double(from) / r, inputEnd: Double(c.source.lowerBound) / r,
                                            outputStart: Double(c.at - (c.source.lowerBound - from)) / r))
            }
            from = c.source.upperBound
        }
        return TimeMap(pieces: pieces)
    }
}

/// The `pauses` stage's cut list: `{"version":1,"sample_rate":…,"source_duration":…,
/// "output_duration":…,"cuts":[{"source_start","source_end","output_at"}],"kept":[{"source_start",
/// "source_end","output_start"}]}` in seconds (6 decimals). Output time t inside a kept stretch maps
/// back to source time `source_start + (t − output_start)`.
public struct CutListConfig: TapConfig {
    public let pauses: PausesConfig
    public var pathTemplate: PathTemplate { pauses.cuts }
    public var name: String { "cuts" }
    public var version: Int { 1 }
    /// Its tap finds the pauses chapters are made at (decision 0082).
    public var findsKinds: Set<Findings.Kind> { [.pauses] }
    public var options: [(String, String)] { [("path", pauses.cuts.text)] + pauses.options }

    public func makeTap(paths: [String], context: RecordingContext) throws -> any Tap {
        do {
            let detector = try pauses.detectors.take(pauses.engine, locator: pauses.locator)
            return CutListTap(path: paths[0], editor: PauseEditor(rules: pauses.rules, detector: detector, keepsAudio: false))
        } catch { throw error.naming(context.relativePath) }
    }
}

/// It also finds `.pauses` (decision 0082): every pause its detector heard between two stretches
/// of speech, in source seconds, for the `chapters` tap.
final package class CutListTap: FindingTap, TimelineUsing {
    package let path: String
    package let editor: PauseEditor
    private var none = AudioBlock(channels: 1)
    /// The maps of the time-moving transforms before this tap (decision 0072).
    private var timeline: () -> [TimeMap] = { [] }

    package init(path: String, editor: PauseEditor) {
        self.path = path
        self.editor = editor
    }

    package func useTimeline(_ maps: @escaping () -> [TimeMap]) { timeline = maps }
    package var finds: Set<Findings.Kind> { [.pauses] }
    /// The pauses, mapped from this tap's stream to the source. Read after `finish`.
    package var findings: Findings {
        let r = Double(max(editor.rate, 1)), maps = timeline()
        return Findings(pauses: editor.pauses.map {
            Findings.Pause(start: maps.toSource(Double($0.lowerBound) / r), end: maps.toSource(Double($0.upperBound) / r))
        }.filter { $0.end > $0.start })
    }

    package func start(_ format: AudioFormat) throws { try editor.start(format) }
    package func observe(_ block: AudioBlock) throws { try editor.feed(block, into: &none) }

    package func finish() throws -> [ProducedFile] {
        try editor.finish(into: &none)
        let r = Double(editor.rate)
        func t(_ frames: Int) -> JSONValue { JSONValue.rounded(Double(frames) / r, places: 6) }
        func s(_ seconds: Double) -> JSONValue { JSONValue.rounded(seconds, places: 6) }
        let kept: [JSONValue] = editor.timeMap.pieces.map {
            .object([("source_start", s($0.inputStart)), ("source_end", s($0.inputEnd)), ("output_start", s($0.outputStart))])
        }
        let json = JSONValue.object([
            ("version", .int(1)), ("sample_rate", .int(editor.rate)),
            ("source_duration", t(editor.inputFrames)), ("output_duration", t(editor.outputFrames)),
            ("cuts", .array(editor.cuts.map { .object([("source_start", t($0.source.lowerBound)), ("source_end", t($0.source.upperBound)), ("output_at", t($0.at))]) })),
            ("kept", .array(kept)),
        ])
        try OutputFile.write(Array((json.serialized() + "\n").utf8), to: path)
        return [ProducedFile(stage: "cuts", path: path, values: ["cuts": String(editor.cuts.count)])]
    }

    package func abandon() {}
}

extension PausesConfig {
    /// The spec's options for this stage: every check, before any audio flows (SoX's getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let standardShorten = (PausesConfig.standardLongerThan, PausesConfig.standardTo)
        if v.isScalar {
            guard try v.bool() else { throw v.error("pauses: false does nothing; remove the stage instead") }
            return PausesConfig(rules: PauseRules(trim: true, longerThan: standardShorten.0, to: standardShorten.1),
                                cuts: standardCuts)
        }
        let o = try v.options(declaredBy: declaration)
        let trim = try o["trim"]?.bool() ?? true
        var longer: Double? = standardShorten.0, to = standardShorten.1
        if let s = o["shorten"] {
            if s.isScalar {
                if !(try s.bool()) { longer = nil }
            } else {
                let so = try s.options(declaredBy: shortenFields)
                longer = try so["longer_than"]?.duration() ?? standardShorten.0
                to = try so["to"]?.duration() ?? standardShorten.1
                guard to >= PausesConfig.shortestPause else { throw (so["to"] ?? s).error("to must be at least 0.1s (a pause needs room for its fades)") }
                guard longer! > to else { throw (so["longer_than"] ?? s).error("longer_than (\(canonicalNumber(longer!))s) must be more than to (\(canonicalNumber(to))s)") }
                guard longer! <= PausesConfig.longestPause else { throw so["longer_than"]!.error("longer_than is at most 10m (the stage holds a pause that long in memory)") }
            }
        }
        if !trim && longer == nil { throw v.error("trim: false and shorten: false leave nothing to do; remove the stage instead") }
        var cuts = standardCuts
        if let x = o["cuts"] { cuts = try StageRegistry.parseTemplate(x) }
        return PausesConfig(rules: PauseRules(trim: trim, longerThan: longer, to: to),
                            engine: try o["vad"]?.choice(VoiceActivityEngine.self) ?? .standard, cuts: cuts)
    }
}

extension PausesConfig {
    /// `shorten` when not given: pauses longer than 2 s become 0.7 s.
    public static let standardLongerThan = 2.0
    public static let standardTo = 0.7
    /// The shortest pause `to` may leave (room for the fades), in seconds.
    public static let shortestPause = 0.1
    /// The longest `longer_than` (the stage holds a pause that long in memory), in seconds.
    public static let longestPause = 600.0

    /// The keys of `shorten`.
    public static let shortenFields: [StageDeclaration.Option] = [
        .init("longer_than", .duration, unit: "s", default: canonicalNumber(standardLongerThan), .range(shortestPause, longestPause),
              help: "Pauses longer than this are shortened (more than to)."),
        .init("to", .duration, unit: "s", default: canonicalNumber(standardTo), .range(shortestPause, longestPause), help: "What they are shortened to."),
    ]

    public static let declaration = StageDeclaration(
        key: "pauses", kind: .transform,
        summary: "Trims the silence around speech and shortens long pauses in it, with 10 ms fades at every cut.",
        options: [
            .init("trim", .boolean, default: "true", help: "Cut the silence before and after the speech."),
            .init("shorten", .mapping, default: "longer_than 2s to 0.7s", help: "Shorten long pauses; false keeps them.", fields: shortenFields),
            .init("vad", .choice, default: VoiceActivityEngine.standard.rawValue, .oneOf(VoiceActivityEngine.self),
                  help: "The voice activity detector that finds the speech."),
            .init("cuts", .pathTemplate, default: defaultCuts, help: "Where its companion tap writes the cut list (source → output times)."),
        ],
        shorthand: "`pauses: true` takes the defaults", example: "pauses: { trim: true, shorten: { longer_than: 2s, to: 0.7s }, vad: webrtc }",
        capabilities: [.bringsCompanions, .writesSidecars, .usesHelper], companionTaps: ["cuts"])
}

/// Its map is the cut list its companion tap writes (the report places speaker turns on a
/// waveform drawn after it, decision 0084).
extension PausesConfig: TimeMapRecording {
    public var timeMapTap: String { "\(CutListConfig(pauses: self).name):\(cuts.text)" }
}
