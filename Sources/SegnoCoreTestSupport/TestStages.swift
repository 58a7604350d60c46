import Foundation
import SegnoCore
import SegnoDSP

// Two stages of the tests' own, so the spec loader and the chain are tested in the core without
// any stage segno ships (those need SegnoAudio and its C libraries): a tap that collects what
// reaches it (`collect`) and a transform that scales by a factor (`scale`). Their keys are no
// stage's of segno's registry.

/// `collect: { path: "{stem}.txt" }`: a tap that keeps what reaches it (`CollectTap`).
package struct CollectConfig: TapConfig {
    package let pathTemplate: PathTemplate
    package var name: String { "collect" }
    package var version: Int { 1 }
    package var options: [(String, String)] { [("path", pathTemplate.text)] }
    package init(path: PathTemplate) { pathTemplate = path }
    package func makeTap(paths: [String], context: RecordingContext) throws -> any Tap { CollectTap(name: name) }

    package static let declaration = StageDeclaration(
        key: "collect", kind: .tap, summary: "Keeps the samples that reach it (tests).",
        options: [.init("path", .pathTemplate, default: nil, help: "Its output's name.")],
        example: "collect: { path: \"{stem}.txt\" }")

    package static func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(declaredBy: declaration)
        return CollectConfig(path: try StageRegistry.parseTemplate(o["path"]!))
    }
}

/// `scale: { factor: 0.5 }`: a transform that multiplies every sample by `factor` (0…10).
package struct ScaleConfig: TransformConfig {
    package static let range = 0.0...10.0
    package let factor: Double
    package var name: String { "scale" }
    package var version: Int { 1 }
    package var changesLevel: Bool { true }
    package var options: [(String, String)] { [("factor", canonicalNumber(factor))] }
    package init(factor: Double) { self.factor = factor }
    package func makeTransform() throws -> any Transform { Scale(factor: Float(factor)) }

    package static let declaration = StageDeclaration(
        key: "scale", kind: .transform, summary: "Multiplies every sample by a factor (tests).",
        options: [.init("factor", .number, default: "1", .within(range), help: "The factor.")],
        example: "scale: { factor: 0.5 }", capabilities: [.changesLevel])

    package static func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(declaredBy: declaration)
        return ScaleConfig(factor: try o["factor"]?.double(in: range, unit: "") ?? 1)
    }

    final package class Scale: Transform {
        package let factor: Float
        package init(factor: Float) { self.factor = factor }
        package func start(_ input: AudioFormat) throws -> AudioFormat { input }
        package func process(_ block: inout AudioBlock) throws {
            for i in 0..<(block.frames * block.channels) { block.samples[i] *= factor }
        }
    }
}

extension StageRegistry {
    /// The tests' own stages (`collect`, `scale`): what the core's tests load specs with.
    package static var coreTests: StageRegistry {
        StageRegistry([Entry(CollectConfig.declaration, CollectConfig.parse), Entry(ScaleConfig.declaration, ScaleConfig.parse)])
    }
}
