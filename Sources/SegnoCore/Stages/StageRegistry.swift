import Foundation
import SegnoDSP

/// What the loader knows at a stage's place in the list, for checks that depend on upstream
/// stages (a lowpass after `resample: 16000` must stay below 8 kHz).
public struct StageParseContext: Sendable {
    /// The sample rate at this point when an upstream resample fixed it, else nil (known only per recording).
    public var knownRate: Int?
    /// Names of taps so far.
    public var taps: [String] = []
    /// The spec file's folder, which relative paths in options (a model folder) are taken from;
    /// nil when the spec has no file (tests, `convert`).
    public var baseDirectory: String?
    /// Every tap kind the registry knows (`StageRegistry.tapKinds`): what an upload's `files:`
    /// may name. Nil when the context was made without a registry (not checked then).
    public var tapKinds: Set<String>? = nil

    public init(knownRate: Int? = nil, baseDirectory: String? = nil) {
        self.knownRate = knownRate
        self.baseDirectory = baseDirectory
    }

    mutating package func note(_ config: any StageConfig, at value: SpecValue) {
        if let rate = config.fixedRate { knownRate = rate }
        if config.kind == .tap { taps.append(config.name) }
    }
}

/// Spec key → (declaration, option parser), one entry per stage. Each parser checks every
/// option and throws a located `SpecError`; this is `segno validate`'s whole job. A value the
/// caller gives the spec loader: the core knows no stage by name.
public struct StageRegistry: Sendable {
    public typealias Parser = @Sendable (SpecValue, StageParseContext) throws(SpecError) -> any StageConfig

    /// One stage: what it declares about itself and the parser of its options.
    public struct Entry: Sendable {
        public let declaration: StageDeclaration
        public let parse: Parser
        public init(_ declaration: StageDeclaration, _ parse: @escaping Parser) {
            self.declaration = declaration
            self.parse = parse
        }
    }

    /// The stages, in the order they were given (`segno help stages` lists them so).
    public let entries: [Entry]

    /// Spec key → parser of that stage's options.
    public let parsers: [String: Parser]
    /// Other spellings of a stage's key (`normalise` → `normalize`), from the declarations.
    public let aliases: [String: String]

    /// A registry of the given stages. The standard one (every stage segno ships) is
    /// `StageRegistry.standard` in SegnoKit, the module that sees every stage.
    public init(_ entries: [Entry]) {
        self.entries = entries
        self.parsers = Dictionary(entries.map { ($0.declaration.key, $0.parse) }, uniquingKeysWith: { first, _ in first })
        self.aliases = Dictionary(entries.flatMap { e in e.declaration.aliases.map { ($0, e.declaration.key) } },
                                  uniquingKeysWith: { first, _ in first })
    }

    /// The parser of the stage a spec names `key`, by its key or one of its aliases.
    public func parser(for key: String) -> Parser? { parsers[key] ?? aliases[key].flatMap { parsers[$0] } }

    /// Every stage's declaration, in registry order.
    public var declarations: [StageDeclaration] { entries.map(\.declaration) }

    /// The kinds of step that write files (taps, and the companion taps stages bring), from the
    /// declarations: what `files:` of an upload and `--force=KIND` name.
    public var tapKinds: Set<String> { Set(declarations.flatMap(\.tapKinds)) }

    /// Each tap kind's declaration (a companion's kind is its stage's): how the report and the
    /// planner learn a recorded step's capabilities without naming its stage.
    public var declarationsByTapKind: [String: StageDeclaration] {
        Dictionary(declarations.flatMap { d in d.tapKinds.map { ($0, d) } }, uniquingKeysWith: { first, _ in first })
    }

    /// The declaration of the stage `key` (or one of its aliases), nil for none.
    public func declaration(_ key: String) -> StageDeclaration? {
        let key = aliases[key] ?? key
        return entries.first { $0.declaration.key == key }?.declaration
    }

    /// Parses a path template option, locating template errors at the option.
    public static func parseTemplate(_ v: SpecValue, extraVariables: Set<String> = []) throws(SpecError) -> PathTemplate {
        let text = try v.string()
        do { return try PathTemplate(text, extraVariables: extraVariables) } catch { throw v.error(error.message) }
    }
}
