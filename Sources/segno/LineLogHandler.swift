import Foundation
import Logging
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

/// segno's one log backend, bootstrapped once in `Main`: each event is one plain line on standard
/// error, `segno: message (key=value, …)`, control characters escaped so one event stays one line.
/// The level is the logger's (`--quiet` sets `.error`); nothing goes to standard output.
struct LineLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        var line = "segno: \(event.message)"
        if !merged.isEmpty {
            line += " (" + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ") + ")"
        }
        printError(AudioError.quoted(line))
    }
}

extension Logger {
    /// The logger commands hand to SegnoCore: info and above, or errors only with `--quiet`.
    static func segno(quiet: Bool = false) -> Logger {
        var logger = Logger(label: "segno")
        logger.logLevel = quiet ? .error : .info
        return logger
    }
}
