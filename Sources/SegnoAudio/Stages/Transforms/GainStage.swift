import Foundation
import SegnoCore
import SegnoDSP

/// `gain: { db: -3 }` multiplies every sample by 10^(db/20). Range −96…+48 dB.
public struct GainConfig: TransformConfig {
    public var savesState: Bool { true }
    public var changesLevel: Bool { true }
    /// dB, in specs and on the command line.
    public static let range: ClosedRange<Double> = -96...48
    public let db: Double
    public var name: String { "gain" }
    public var version: Int { 1 }
    public var options: [(String, String)] { [("db", canonicalNumber(db))] }
    public init(db: Double) { self.db = db }

    public static let declaration = StageDeclaration(
        key: "gain", kind: .transform, summary: "Multiplies every sample by one gain in dB.",
        options: [.init("db", .number, unit: "dB", default: nil, .within(range), help: "The gain: negative cuts, positive boosts.")],
        shorthand: "`gain: -3` is `{ db: -3 }`", example: "gain: { db: -3 }", capabilities: [.changesLevel])
    public func makeTransform() throws -> any Transform { GainTransform(gain: Gain(decibels: db)) }
}

final package class GainTransform: CheckpointingTransform {
    package let gain: Gain
    package init(gain: Gain) { self.gain = gain }
    package func start(_ input: AudioFormat) throws -> AudioFormat { input }
    package func process(_ block: inout AudioBlock) throws { gain.apply(to: &block) }
    /// A gain keeps no state between blocks.
    package func save(into w: inout StateBytes.Writer) {}
    package func restore(from r: inout StateBytes.Reader) throws {}
}


extension GainConfig {
    /// The spec\'s options for this stage: every check, before any audio flows (SoX\'s getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        if v.isScalar { return GainConfig(db: try v.double(in: GainConfig.range, unit: "dB")) }
        let o = try v.options(declaredBy: declaration)
        return GainConfig(db: try o["db"]!.double(in: GainConfig.range, unit: "dB"))
    }
}
