import Foundation

/// What a stage says about itself, in its own file (SoX's `sox_effect_handler_t`, ffmpeg's
/// `AVFilter` with its `AVOption` table): its spec key, kind, a one-line summary, every option,
/// an example that loads and its capabilities. One declaration feeds the spec loader's option
/// checks and did-you-mean (`SpecValue.options(declaredBy:)`), `segno help stages`,
/// `segno help stage NAME` and the generated reference pages (docs/reference/stages/).
public struct StageDeclaration: Sendable {
    /// The spec key, e.g. "lowpass".
    public let key: String
    /// Transform, tap or upload.
    public let kind: StageKind
    /// One line: what the stage does.
    public let summary: String
    /// Every option the mapping form takes, in the order the help and errors list them.
    public let options: [Option]
    /// The short form (`gain: -3`) and what it means, nil when there is none.
    public let shorthand: String?
    /// Other spellings of the key the spec loader accepts (`normalise`); listed in the help.
    public let aliases: [String]
    /// One YAML stage line that loads as it stands: `gain: { db: -3 }`.
    public let example: String
    /// The facts the rest of segno needs about the stage.
    public let capabilities: Capabilities
    /// The tap kinds of the companion taps it brings (`CompanionStages`), under which their steps
    /// are recorded: what `--force=KIND` and an upload's `files:` accept besides the taps' keys.
    public let companionTaps: [String]
    /// The values its steps keep (`ProducedFile.values`) that the report shows per recording, in
    /// order (with `Capabilities.reportsMeasures`).
    public let measures: [Measure]

    package init(key: String, kind: StageKind, summary: String, options: [Option], shorthand: String? = nil,
                 aliases: [String] = [], example: String, capabilities: Capabilities = [], companionTaps: [String] = [],
                 measures: [Measure] = []) {
        self.key = key
        self.kind = kind
        self.summary = summary
        self.options = options
        self.shorthand = shorthand
        self.aliases = aliases
        self.example = example
        self.capabilities = kind == .tap ? capabilities.union(.tap) : capabilities
        self.companionTaps = companionTaps
        self.measures = measures
    }

    /// The tap kinds this stage's steps are recorded under: its key when it is a tap, and its
    /// companions' kinds.
    public var tapKinds: [String] { (kind == .tap ? [key] : []) + companionTaps }

    /// The option named `name`, nil for none.
    public func option(_ name: String) -> Option? { options.first { $0.name == name } }
}

extension StageDeclaration {
    /// A value a tap keeps per recording that the report shows: its key in `ProducedFile.values`,
    /// its label and unit ("peak", "dBFS").
    public struct Measure: Sendable, Equatable {
        /// The key in the step's values ("peak_dbfs").
        public let key: String
        /// What the report calls it.
        public let label: String
        /// The unit printed after the value, empty for none.
        public let unit: String

        package init(_ key: String, _ label: String, unit: String = "") {
            self.key = key
            self.label = label
            self.unit = unit
        }

        /// "peak (dBFS)", or the label alone without a unit.
        public var described: String { unit.isEmpty ? label : "\(label) (\(unit))" }
    }

    /// One option of a stage: its name, type, unit, default, allowed values and help line.
    public struct Option: Sendable {
        /// The option's key in the spec.
        public let name: String
        /// What kind of value it takes.
        public let type: ValueType
        /// The unit of a number ("Hz", "dB"), empty for none.
        public let unit: String
        /// The default in words ("2", "from the extension"); nil when the option is required.
        public let defaultValue: String?
        /// The range or choices, `.any` for none.
        public let values: Values
        /// One line of help.
        public let help: String
        /// The keys of each item (a list of mappings) or of the mapping this option takes.
        public let fields: [Option]

        /// True when the spec must give the option (in its mapping form).
        public var isRequired: Bool { defaultValue == nil }

        package init(_ name: String, _ type: ValueType, unit: String = "", default defaultValue: String?,
                     _ values: Values = .any, help: String, fields: [Option] = []) {
            self.name = name
            self.type = type
            self.unit = unit
            self.defaultValue = defaultValue
            self.values = values
            self.help = help
            self.fields = fields
        }
    }

    /// What kind of value an option takes.
    public enum ValueType: String, Sendable {
        case number
        case wholeNumber = "whole number"
        case boolean = "true/false"
        case text
        case choice
        case pathTemplate = "path template"
        case textTemplate = "text template"
        case duration
        case list
        case mapping
    }

    /// The values an option accepts.
    public enum Values: Sendable, Equatable {
        /// Anything of its type.
        case any
        /// A closed numeric range.
        case range(Double, Double)
        /// One of these words.
        case choices([String])

        /// A closed range of numbers.
        package static func within(_ r: ClosedRange<Double>) -> Values { .range(r.lowerBound, r.upperBound) }
        /// A closed range of whole numbers.
        package static func within(_ r: ClosedRange<Int>) -> Values { .range(Double(r.lowerBound), Double(r.upperBound)) }
        /// The raw values of a string enum, in declaration order.
        package static func oneOf<T: RawRepresentable & CaseIterable>(_ type: T.Type) -> Values where T.RawValue == String {
            .choices(T.allCases.map(\.rawValue))
        }

        /// `-96…48`, `2 | 4 | 6 | 8`, or empty for `.any`.
        public var text: String {
            switch self {
            case .any: return ""
            case .range(let lo, let hi): return "\(canonicalNumber(lo))…\(canonicalNumber(hi))"
            case .choices(let c): return c.joined(separator: " | ")
            }
        }
    }

    /// Facts about a stage that the loader, planner, runner and report act on. Each matches a
    /// property of the stage's config (`StageConfig.changesLevel`, `TapConfig.providesSpokenText`…).
    public struct Capabilities: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Changes the level of what passes through (`StageConfig.changesLevel`).
        public static let changesLevel = Capabilities(rawValue: 1 << 0)
        /// Sets the level (`StageConfig.setsLevel`).
        public static let setsLevel = Capabilities(rawValue: 1 << 1)
        /// Fixes the sample rate downstream (`StageConfig.fixedRate`).
        public static let fixesRate = Capabilities(rawValue: 1 << 2)
        /// Writes files as the stream passes (`StageKind.tap`).
        public static let tap = Capabilities(rawValue: 1 << 3)
        /// Writes sidecar files next to the audio (JSON, cut lists, subtitles).
        public static let writesSidecars = Capabilities(rawValue: 1 << 4)
        /// Its result is what was said (`TapConfig.providesSpokenText`).
        public static let providesSpokenText = Capabilities(rawValue: 1 << 5)
        /// Keeps a fingerprint in the state (`TapConfig.storesFingerprints`).
        public static let storesFingerprints = Capabilities(rawValue: 1 << 6)
        /// Brings other stages with it (`CompanionStages`).
        public static let bringsCompanions = Capabilities(rawValue: 1 << 7)
        /// May observe the recording as decoded (`SourceObservingStage`).
        public static let observesSource = Capabilities(rawValue: 1 << 8)
        /// Copies outputs somewhere after the pass (`UploadStageConfig`).
        public static let uploads = Capabilities(rawValue: 1 << 9)
        /// Runs a helper program or model (ffmpeg, Chromaprint, a speech engine).
        public static let usesHelper = Capabilities(rawValue: 1 << 10)
        /// Its step's values describe the recording in the report: `title`, `recorded`,
        /// `duration`, `loudness_lufs`, `peak_dbfs` and `levels` (the drawn waveform when no
        /// tap is `drawnInReport`).
        public static let describesRecording = Capabilities(rawValue: 1 << 11)
        /// Its `.json` output is audiowaveform peak data the report draws.
        public static let drawnInReport = Capabilities(rawValue: 1 << 12)
        /// Its step's values named by `StageDeclaration.measures` are shown in the report, and
        /// offered to the taps after it (`ProducedFile.measures`).
        public static let reportsMeasures = Capabilities(rawValue: 1 << 13)
        /// Writes the measures of the taps before it into its own output (`GatheringTap`).
        public static let gathersMeasures = Capabilities(rawValue: 1 << 14)
        /// Its `.json` output is a speaker-turn file (`SpeakerTurnsFile`): the report colours the
        /// turns and lists who spoke how long; `find --speaker` reads it; its labels and names are
        /// search words (`TapConfig.spokenText(fromOutputs:)`).
        public static let findsSpeakers = Capabilities(rawValue: 1 << 18)
        /// Its output is a chapter sidecar (`ChapterSidecarFile`) the report lists beside the waveform.
        public static let writesChapters = Capabilities(rawValue: 1 << 19)

        /// Each capability with the line the help and reference pages print for it, in order.
        public static let described: [(Capabilities, String)] = [
            (.changesLevel, "changes the level (`validate` warns when it follows a normalize)"),
            (.setsLevel, "sets the level (a level-changing stage after it undoes it)"),
            (.fixesRate, "fixes the sample rate (options downstream are checked against it)"),
            (.tap, "is a tap: writes files where it stands (`--force=KIND`, upload `files:`)"),
            (.writesSidecars, "writes sidecar files beside the audio"),
            (.providesSpokenText, "contributes what was said, with times, to the catalogue (`find --spoken`) and the report's transcript"),
            (.storesFingerprints, "keeps a fingerprint in the state (`duplicates`)"),
            (.bringsCompanions, "brings a companion tap with it"),
            (.observesSource, "can observe the recording as decoded, whatever comes before it"),
            (.uploads, "runs after the pass, on the files the taps wrote"),
            (.usesHelper, "runs a helper program or model"),
            (.describesRecording, "describes the recording in the report (title, date, loudness, peak, levels)"),
            (.drawnInReport, "its peaks are drawn in the report"),
            (.reportsMeasures, "shows its measures in the report, and offers them to a sidecar after it"),
            (.gathersMeasures, "writes the measures of the taps before it in its sidecar (`measures`)"),
            (.findsSpeakers, "finds who spoke when: the report colours the turns, `find --speaker` and `find` by name read them"),
            (.writesChapters, "writes a chapter list the report shows beside the waveform (a click plays from there)"),
        ]

        /// The lines of `described` this set holds.
        public var lines: [String] { Self.described.filter { contains($0.0) }.map(\.1) }
    }
}

extension SpecValue {
    /// Options after checking their keys against `options` (a stage's declaration, or the
    /// fields of one of its options): unknown keys are refused with a did-you-mean, required
    /// ones must be present. What `options(allowed:required:)` does, from the declaration.
    public func options(declaredBy options: [StageDeclaration.Option]) throws(SpecError) -> SpecOptions {
        try self.options(allowed: options.map(\.name), required: options.filter(\.isRequired).map(\.name))
    }

    /// Options checked against a stage's declaration.
    public func options(declaredBy declaration: StageDeclaration) throws(SpecError) -> SpecOptions {
        try options(declaredBy: declaration.options)
    }
}

extension StageDeclaration.Option {
    /// `from: here | source` of a tap that can observe the recording as decoded
    /// (`.observesSource`); read by `SpecOptions.observesSource()`.
    package static let fromSource = StageDeclaration.Option(
        "from", .choice, default: "here", .choices(["here", "source"]),
        help: "here: the stream at this place; source: the recording as decoded (the tap moves to the head of the chain).")
}
