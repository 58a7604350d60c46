import Foundation
import SegnoCore
import SegnoKit
import SegnoAudioTestSupport

// What the tests use in place of what the command line makes from the process (its
// `ProcessContext`): the standard registry with the test process's tools (`AudioTools.forTests`,
// SegnoAudioTestSupport).

extension StageRegistry {
    /// Every stage segno ships, with the tests' tools.
    package static var forTests: StageRegistry { .standard(tools: .forTests) }
}

extension SpecLoader {
    /// Parses spec text with every stage and an empty environment (`~` is then the user's home).
    package static func parseForTests(_ text: String, file: String = "spec.yaml", baseDirectory: String = "/base",
                                      environment: [String: String] = [:]) throws(SpecError) -> JobSpec {
        try parse(text, file: file, baseDirectory: baseDirectory, registry: .forTests, environment: environment)
    }
}
