import Foundation
import Logging

/// Where recordings come from (DESIGN.md §8): lists them with an identity that tells a change
/// without reading them, and opens a decoder for one. Nothing above it assumes a local path:
/// `ScannedFile.relativePath` is the recording's name in the state and in templates, and
/// `absolutePath` is whatever the source needs to find it again (a path for folders).
public protocol RecordingSource: Sendable {
    /// Lists the recordings ready to process, sorted by name, with what could not be read and what
    /// is still settling. Called once per run, before planning.
    func scan() throws(RunError) -> ScanResult
    /// Opens a decoder for one recording. Called once per pass (normalize needs two).
    func open(_ file: ScannedFile) throws -> any AudioDecoder
    /// SHA-256 of the recording's bytes (`verify: content`).
    func contentHash(_ file: ScannedFile) throws -> Data
    /// The identity now, nil when gone: a recording that changed during its pass is still being written.
    func currentIdentity(_ file: ScannedFile) -> FileIdentity?
    /// Template values the source knows of a recording (a captured segment's `{title}`).
    func templateValues(_ file: ScannedFile) -> [String: String]
    /// What the recording carries besides its audio: tags, pictures (their bytes only when
    /// `pictures` is true, for an encode that keeps them), `bext`, `iXML`. Called once per
    /// recording, after `open`. Never throws: damage is in `RecordingMetadata.warnings`.
    func metadata(_ file: ScannedFile, pictures: Bool) -> RecordingMetadata
    /// Removes what killed processes left in the source's own working space (an object store's
    /// download scratch folders). Called once before a run's work starts; nothing by default.
    func removeLeftovers()
}

extension RecordingSource {
    public func templateValues(_ file: ScannedFile) -> [String: String] { [:] }
    public func metadata(_ file: ScannedFile, pictures: Bool) -> RecordingMetadata { RecordingMetadata() }
    public func removeLeftovers() {}

    /// An opener for a recording's passes that hands out `first` (already opened, for its header)
    /// on the first call and opens the source again for later passes.
    public func passes(of file: ScannedFile, first: any AudioDecoder) -> () throws -> any AudioDecoder {
        var pending: (any AudioDecoder)? = first
        return {
            if let d = pending { pending = nil; return d }
            return try self.open(file)
        }
    }
}

/// A source that keeps producing recordings while the run goes on. The runner starts its capture
/// under the run lock (a second start exits 75 before recording anything) and loops scan → plan →
/// execute while it records, then makes a final pass.
public protocol LiveRecordingSource: RecordingSource {
    /// Deletes what a killed capture left (temporary segments). Called under the run lock.
    func removeTemporaries()
    /// Starts recording. `deadline` is the wall-clock end `--max-time` sets; `shouldStop` is the
    /// run's stop flag (signals).
    func startCapture(logger: Logger, deadline: Date?, shouldStop: @escaping @Sendable () -> Bool) throws(RunError) -> any LiveCapture
}

/// A capture under way, as the runner sees it.
public protocol LiveCapture: Sendable {
    /// How many recordings (segments) have appeared so far.
    var finishedCount: Int { get }
    /// True while anything records.
    var isRunning: Bool { get }
    /// One line per station that failed.
    var failures: [String] { get }
    /// Waits until nothing records.
    func wait()
}

