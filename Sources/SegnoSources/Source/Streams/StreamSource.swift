import Foundation
import Logging
import SegnoAudio
import SegnoCore


extension StreamCapture: LiveCapture {
    public var finishedCount: Int { finishedSegments.count }
}

/// `input.streams`: stations recorded into the capture folder, whose finished segments are then
/// scanned and processed like a folder's recordings (a `FolderSource` on `record.capture`).
/// Segments appear by rename, whole, and the temporaries' names start with a dot, so the scan
/// never takes a segment still being written.
public struct StreamSource: LiveRecordingSource {
    public let folder: FolderSource
    public let streams: JobSpec.StreamInput

    public init(input: JobSpec.Input, streams: JobSpec.StreamInput, skipDirectories: Set<String>, tools: AudioTools) {
        folder = FolderSource(input: input, skipDirectories: skipDirectories, tools: tools)
        self.streams = streams
    }

    public func scan() throws(RunError) -> ScanResult {
        var st = stat()
        // Nothing captured yet (a dry run before the first window): nothing to process.
        if stat(streams.capture, &st) != 0 && errno == ENOENT { return ScanResult() }
        return try folder.scan()
    }

    public func open(_ file: ScannedFile) throws -> any AudioDecoder { try folder.open(file) }
    public func contentHash(_ file: ScannedFile) throws -> Data { try folder.contentHash(file) }
    public func currentIdentity(_ file: ScannedFile) -> FileIdentity? { folder.currentIdentity(file) }

    /// `{title}`: the cue sidecar's title (the station's name plus its first title).
    public func templateValues(_ file: ScannedFile) -> [String: String] {
        let cue = SegmentWriter.cuePath(forSegment: file.absolutePath)
        guard let data = FileManager.default.contents(atPath: cue),
              let obj = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let title = obj["title"] as? String, !title.isEmpty else { return [:] }
        return ["title": title]
    }

    /// A chapter per title the station sent during the segment (its cue sidecar's `titles`), so
    /// every output of a capture carries them (issue 32). The segment's own tags are not read.
    public func metadata(_ file: ScannedFile, pictures: Bool) -> RecordingMetadata {
        var m = RecordingMetadata()
        StreamChapters.add(cue: SegmentWriter.cuePath(forSegment: file.absolutePath), into: &m)
        return m
    }

    public func removeTemporaries() { Temporaries.remove(under: streams.capture) }

    public func startCapture(logger: Logger, deadline: Date?, shouldStop: @escaping @Sendable () -> Bool) throws(RunError) -> any LiveCapture {
        guard let tools = FFmpegTools.locate(searchPath: folder.tools.searchPath) else { throw .input("recording streams needs the ffmpeg program; \(FFmpegTools.installHint)") }
        do { try OutputFile.makeFolders(streams.capture, for: streams.capture) } catch {
            throw .input("record.capture: \(error)")
        }
        return StreamCapture(input: streams, ffmpeg: tools.ffmpeg, logger: logger, deadline: deadline, shouldStop: shouldStop)
    }
}
