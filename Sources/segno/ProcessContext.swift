import Foundation
import SegnoAudio

/// What the command line takes from the process, once: the environment (read here and nowhere
/// else in segno) and the decode-helper pools made from it. The library gets both as values;
/// `Main` shuts the pools down before the process exits.
enum ProcessContext {
    /// The environment, as the process started with it.
    static let environment: [String: String] = ProcessInfo.processInfo.environment
    /// The `segno-decode` helper pools and `PATH` every command decodes with.
    static let tools = AudioTools(environment: environment)
}
