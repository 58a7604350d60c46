import Foundation
import Logging
import SegnoAudio
import SegnoCore
import Synchronization

/// `segno run --watch`: the spec's input folder as a live source. Each pass scans, plans and
/// executes exactly as a cron run does (same `FolderSource`, same state); the watch only decides
/// *when* a pass runs: once a changed recording has been quiet for `input.settle`, after a folder
/// or recording disappears (`prune`), on an inotify queue overflow, and when no pass has run for
/// `rescan` seconds.
public struct WatchSource: LiveRecordingSource {
    public let folder: FolderSource
    /// Seconds without a pass after which one runs without waiting for an event (events lost,
    /// network file systems whose remote changes inotify never sees).
    public let rescan: Double
    /// The default `rescan`: 5 minutes.
    public static let defaultRescan = 300.0
    package let shared = WatchInbox()

    public init(folder: FolderSource, rescan: Double = WatchSource.defaultRescan) {
        self.folder = folder
        self.rescan = rescan
    }

    /// Scans like a run and hands the recordings still settling to the watcher, which passes again
    /// when they have been quiet for `settle` (a recording closed before the watch began sends no
    /// event of its own).
    public func scan() throws(RunError) -> ScanResult {
        let result = try folder.scan()
        if !result.settlingPaths.isEmpty {
            let root = folder.input.root
            shared.arm(result.settlingPaths.map { root + "/" + $0 })
        }
        return result
    }

    public func open(_ file: ScannedFile) throws -> any AudioDecoder { try folder.open(file) }
    public func contentHash(_ file: ScannedFile) throws -> Data { try folder.contentHash(file) }
    public func currentIdentity(_ file: ScannedFile) -> FileIdentity? { folder.currentIdentity(file) }
    public func templateValues(_ file: ScannedFile) -> [String: String] { folder.templateValues(file) }

    /// Nothing of its own: the run's preparation already removed the output tree's temporaries.
    public func removeTemporaries() {}

    /// Watches every folder the scan would enter, then returns with one pass due (the catch-up
    /// pass over what arrived while nothing watched).
    public func startCapture(logger: Logger, deadline: Date?, shouldStop: @escaping @Sendable () -> Bool) throws(RunError) -> any LiveCapture {
        try FolderWatch(input: folder.input, skipDirectories: folder.skipDirectories, rescan: rescan, inbox: shared,
                        logger: logger, deadline: deadline, shouldStop: shouldStop)
    }
}

extension JobSpec {
    /// The source of `segno run --watch`: the input folder, or why this spec cannot be watched
    /// (an `s3://` prefix has no change notifications; stations are recorded for a window).
    public func makeWatchSource(rescan: Double, tools: AudioTools) throws(RunError) -> WatchSource {
        if input.isObjectStore {
            throw .input("--watch needs a folder as input.root; \(input.root) is an object store, which sends no change events: run segno from cron instead")
        }
        if input.streams != nil {
            throw .input("--watch needs a folder as input.root; input.streams records for its window and processes each segment as it finishes already: run it without --watch")
        }
        let skip: Set<String> = [outputRoot, (statePath as NSString).deletingLastPathComponent]
        return WatchSource(folder: FolderSource(input: input, skipDirectories: skip, tools: tools), rescan: rescan)
    }
}

/// Paths the runner's thread hands to the watcher thread: recordings the last scan found settling.
final package class WatchInbox: Sendable {
    private let paths = Mutex<[String]>([])

    /// Called by `scan()` on the run's thread.
    package func arm(_ absolutePaths: [String]) { paths.withLock { $0 += absolutePaths } }

    /// Called by the watcher thread; empties the inbox.
    package func take() -> [String] { paths.withLock { p in defer { p = [] }; return p } }
}
