import Foundation
import SegnoAudio

// What the tests use in place of what the command line makes from the process (its
// `ProcessContext`): one set of helper pools for the whole test process, from its environment.

extension AudioTools {
    /// The test process's tools: the `segno-decode` helper beside the test build (or as
    /// `SEGNO_DECODE_HELPER` names it) and the test process's `PATH`. Its idle helpers end with
    /// the test process (they read end-of-file on their standard input).
    package static let forTests = AudioTools(environment: ProcessInfo.processInfo.environment)
}
