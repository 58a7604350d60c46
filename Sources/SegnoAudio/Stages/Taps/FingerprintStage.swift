import Foundation
import SegnoCore
import SegnoDSP

/// `fingerprint: { algorithm: 2, length: 120, path: "{dir}/{stem}.fp.json" }` computes the
/// Chromaprint fingerprint of the stream at its place in the chain (libchromaprint in the
/// `segno-decode` helper, as `fpcalc -raw`) and keeps the raw items in the state database (`fingerprint` table) for
/// `segno duplicates`. `algorithm` is fpcalc's number (1…5, default 2); `length` the seconds
/// fingerprinted from the start (default: the whole stream; fpcalc's default is 120); `path`
/// an optional JSON sidecar. Without `path` the tap writes no file: the database row is its output.
public struct FingerprintConfig: TapConfig {
    public var storesFingerprints: Bool { true }
    public let algorithm: Int
    public let length: Double?
    /// `PathTemplate.none` when the tap writes no file.
    public let pathTemplate: PathTemplate
    public var name: String { "fingerprint" }
    public var version: Int { 1 }
    public var options: [(String, String)] {
        var o = [("algorithm", String(algorithm))]
        if let length { o.append(("length", canonicalNumber(length))) }
        if pathTemplate != .none { o.append(("path", pathTemplate.text)) }
        return o
    }

    /// The helper pool the taps of this stage fingerprint with (`AudioTools.fingerprintHelpers`,
    /// given when the spec is loaded); not an option, so not in the recipe.
    public let helpers: DecodeHelperPool

    public init(algorithm: Int = FingerprintConfig.standardAlgorithm, length: Double? = nil, path: PathTemplate = .none, helpers: DecodeHelperPool) {
        self.algorithm = algorithm
        self.length = length
        self.pathTemplate = path
        self.helpers = helpers
    }

    /// `fingerprint: {}` (or an empty value) takes the defaults; keys `algorithm`, `length`, `path`.
    /// Called by the stage registry, which gives the helper pool.
    static package func parse(_ v: SpecValue, _ c: StageParseContext, helpers: DecodeHelperPool) throws(SpecError) -> any StageConfig {
        if v.isScalar {
            let text = try v.string()
            guard ["", "~", "null"].contains(text) else { throw v.error("give options as a mapping: { algorithm: 2, length: 120, path: ... }") }
            return FingerprintConfig(helpers: helpers)
        }
        let o = try v.options(declaredBy: declaration)
        let algorithm = try o["algorithm"]?.int(in: Chromaprinter.algorithms) ?? standardAlgorithm
        let length = try o["length"]?.double(in: lengthRange, unit: "seconds")
        let path = try o["path"].map { p throws(SpecError) in try StageRegistry.parseTemplate(p) } ?? .none
        return FingerprintConfig(algorithm: algorithm, length: length, path: path, helpers: helpers)
    }

    public func resolvePaths(_ context: RecordingContext) throws(TemplateError) -> [String] {
        pathTemplate == .none ? [] : [try pathTemplate.resolve(context)]
    }

    public func makeTap(paths: [String], context: RecordingContext) throws -> any Tap {
        FingerprintTap(algorithm: algorithm, length: length, path: paths.first, helpers: helpers)
    }
}

final package class FingerprintTap: Tap {
    package let algorithm: Int
    package let length: Double?
    package let path: String?
    package let helpers: DecodeHelperPool
    package var printer: Chromaprinter?

    package init(algorithm: Int, length: Double?, path: String?, helpers: DecodeHelperPool) {
        self.algorithm = algorithm
        self.length = length
        self.path = path
        self.helpers = helpers
    }

    package func start(_ format: AudioFormat) throws {
        // A format chromaprint refuses is the spec's; a missing or failing helper is the
        // environment's (FingerprintError's own class), retried by the next plain run.
        do { printer = try Chromaprinter(algorithm: algorithm, format: format, length: length, helpers: helpers) } catch let e as FingerprintError where e.failureClass == .spec {
            throw StageStartError(stage: "fingerprint", "\(e)")
        }
    }

    package func observe(_ block: AudioBlock) throws { try printer?.feed(block) }

    package func finish() throws -> [ProducedFile] {
        guard let p = printer else { throw FingerprintError.feed }
        printer = nil
        let fp = try p.finish()
        if let path {
            let json = JSONValue.object([
                ("algorithm", .int(fp.algorithm)), ("duration", JSONValue.rounded(fp.duration, places: 3)),
                ("fingerprint", .string(fp.compressed)), ("items", .array(fp.items.map { .int(Int($0)) })),
            ])
            try OutputFile.write(Array((json.serialized() + "\n").utf8), to: path)
        }
        return [ProducedFile(stage: "fingerprint", path: path ?? "", values: ["fingerprint_items": String(fp.items.count)],
                             fingerprint: fp)]
    }

    package func abandon() { printer = nil }
}

extension FingerprintConfig {
    /// fpcalc's algorithm number when none is given.
    public static let standardAlgorithm = 2
    /// Seconds fingerprinted from the start.
    public static let lengthRange: ClosedRange<Double> = 3...86_400

    public static let declaration = StageDeclaration(
        key: "fingerprint", kind: .tap,
        summary: "Computes the Chromaprint fingerprint of the stream here and keeps it in the state, for segno duplicates.",
        options: [
            .init("algorithm", .wholeNumber, default: String(standardAlgorithm), .within(Chromaprinter.algorithms), help: "fpcalc's algorithm number."),
            .init("length", .number, unit: "seconds", default: "the whole stream", .within(lengthRange),
                  help: "How much is fingerprinted from the start (fpcalc's default is 120)."),
            .init("path", .pathTemplate, default: "none", help: "A JSON sidecar; without it the fingerprint goes into the state only."),
        ],
        shorthand: "`fingerprint: {}` takes the defaults", example: "fingerprint: { algorithm: 2, length: 120 }",
        capabilities: [.storesFingerprints, .usesHelper])
}
