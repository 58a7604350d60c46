import Dispatch
import Foundation
import Logging
import SegnoAudio
import SegnoCore
import Synchronization

/// Records every station of `input.streams` at once, one thread each, for the window. The runner
/// starts it under the run lock and polls it: `finishedSegments` grows as segments are renamed
/// into the capture folder, `isRunning` turns false when every station is done. A stop (signal,
/// `--max-time`) closes each station's current segment cleanly; it is processed by the next run.
public final class StreamCapture: Sendable {
    public let input: JobSpec.StreamInput
    private let state = Mutex(State())
    private let group = DispatchGroup()

    package struct State {
        package var finished: [String] = []
        package var failures: [String] = []
        package var running = 0
    }

    /// Starts recording. `shouldStop` is asked between reads (signal or deadline); `deadline` is
    /// the wall-clock end when `--max-time` ends earlier than the window.
    public init(input: JobSpec.StreamInput, ffmpeg: String, logger: Logger, deadline: Date?, shouldStop: @escaping @Sendable () -> Bool) {
        self.input = input
        var hardEnd = Date().addingTimeInterval(input.duration + StationRecorder.latencyAllowance)
        if let deadline, deadline < hardEnd { hardEnd = deadline }
        let end = hardEnd
        for station in input.stations {
            group.enter()
            state.withLock { $0.running += 1 }
            Thread.detachNewThread { [self, group] in
                defer {
                    state.withLock { $0.running -= 1 }
                    group.leave()
                }
                let recorder = StationRecorder(station: station, input: input, ffmpeg: ffmpeg, hardEnd: end, logger: logger,
                                               shouldStop: shouldStop) { [self] path in
                    state.withLock { $0.finished.append(path) }
                }
                do { try recorder.run() } catch {
                    state.withLock { $0.failures.append("stream \(station.name): \(error)") }
                }
            }
        }
    }

    /// Paths of the segments renamed into place so far, in order.
    public var finishedSegments: [String] { state.withLock { $0.finished } }
    /// One line per station that failed.
    public var failures: [String] { state.withLock { $0.failures } }
    /// True while any station records.
    public var isRunning: Bool { state.withLock { $0.running > 0 } }

    /// Waits until every station is done.
    public func wait() { group.wait() }
}
