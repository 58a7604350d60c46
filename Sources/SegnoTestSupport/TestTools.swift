import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit

// What the tests use in place of what the command line makes from the process (its
// `ProcessContext`): one set of helper pools for the whole test process, from its environment.

extension AudioTools {
    /// The test process's tools: the `segno-decode` helper beside the test build (or as
    /// `SEGNO_DECODE_HELPER` names it) and the test process's `PATH`. Its idle helpers end with
    /// the test process (they read end-of-file on their standard input).
    package static let forTests = AudioTools(environment: ProcessInfo.processInfo.environment)
}

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
