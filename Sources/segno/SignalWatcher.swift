import Dispatch
import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

/// Turns SIGINT and SIGTERM into a `StopFlag` instead of killing the process, so in-flight
/// work can be abandoned cleanly and state written. A second signal exits at once.
/// Keep the watcher alive for as long as signals should be caught.
public final class SignalWatcher {
    /// The flag the handlers set.
    public let flag: StopFlag
    private var sources: [DispatchSourceSignal] = []

    /// Installs the handlers. Called once by the CLI command that runs work.
    public init() {
        let flag = StopFlag()
        self.flag = flag
        let queue = DispatchQueue(label: "segno.signals")
        for sig in [SIGINT, SIGTERM] {
            Foundation.signal(sig, SIG_IGN)
            let src = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            src.setEventHandler {
                if flag.isStopped { exit(128 + sig) }
                flag.stop(sig)
            }
            src.resume()
            sources.append(src)
        }
    }

    deinit { sources.forEach { $0.cancel() } }
}
