import Foundation
import Logging
import SegnoAudio
import SegnoCore

extension JobSpec {
    /// Where this job's recordings come from: objects under an `s3://` prefix, stations being
    /// recorded into a capture folder, or a folder.
    /// Throws (exit 2) when an object store cannot be reached for want of credentials.
    public func makeSource(environment: [String: String], tools: AudioTools, logger: Logger) throws -> any RecordingSource {
        if input.isObjectStore {
            do { return try ObjectStoreSource(input: input, environment: environment, tools: tools, logger: logger) } catch {
                throw RunError.input("input.root \(input.root): \(error)")
            }
        }
        let skip: Set<String> = [outputRoot, (statePath as NSString).deletingLastPathComponent]
        if let streams = input.streams { return StreamSource(input: input, streams: streams, skipDirectories: skip, tools: tools) }
        if let problem = inputRootProblem() { throw RunError.input(problem) }
        return FolderSource(input: input, skipDirectories: skip, tools: tools)
    }

    /// Why a folder `input.root` cannot be scanned (missing, not a folder, unreadable), or nil.
    /// Checked by `validate` and before a run opens its state, so a refused spec leaves nothing
    /// behind. Object stores and stream captures are not folders to check here.
    public func inputRootProblem() -> String? {
        guard !input.isObjectStore, input.streams == nil else { return nil }
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: input.root, isDirectory: &isDir) else {
            return "input.root \(AudioError.quoted(input.root)) does not exist; create it or fix the path"
        }
        guard isDir.boolValue else { return "input.root \(AudioError.quoted(input.root)) is a file, not a folder" }
        guard access(input.root, R_OK | X_OK) == 0 else {
            return "input.root \(AudioError.quoted(input.root)) is not readable: \(String(cString: strerror(errno)))"
        }
        return nil
    }
}

/// A folder scanned recursively (`input.root`, include/exclude, settle, links), decoded by
/// libsndfile or the `ffmpeg` program.
public struct FolderSource: RecordingSource {
    public let input: JobSpec.Input
    /// Folders never scanned: the output root and the state's folder.
    public let skipDirectories: Set<String>
    /// The helper pool and `PATH` its recordings are decoded with.
    public let tools: AudioTools

    public init(input: JobSpec.Input, skipDirectories: Set<String>, tools: AudioTools) {
        self.input = input
        self.skipDirectories = skipDirectories
        self.tools = tools
    }

    public func scan() throws(RunError) -> ScanResult {
        do { return try InputScanner(input: input, skipDirectories: skipDirectories).scan() } catch {
            throw .input("input.root \(AudioError.quoted(input.root)) is not a readable folder")
        }
    }

    public func open(_ file: ScannedFile) throws -> any AudioDecoder { try DecoderFactory.open(path: file.absolutePath, tools: tools, damaged: input.damaged, reference: input.reference) }

    public func metadata(_ file: ScannedFile, pictures: Bool) -> RecordingMetadata {
        TagReader.read(path: file.absolutePath, pictures: pictures ? .load : .describe)
    }

    public func contentHash(_ file: ScannedFile) throws -> Data { try FileHash.sha256(path: file.absolutePath).digest }

    public func currentIdentity(_ file: ScannedFile) -> FileIdentity? {
        var st = stat()
        guard stat(file.absolutePath, &st) == 0 else { return nil }
        return FileIdentity(size: Int64(st.st_size), mtimeNs: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
                            inode: Int64(st.st_ino))
    }
}

/// One file named on the command line (`segno convert`, `segno waveform`): the same opening and
/// pass logic as a folder's recordings.
public struct FileSource: RecordingSource {
    /// The file as a recording, named by its last path component.
    public let file: ScannedFile
    /// `--salvage`: a damaged file is read for what it holds instead of failing.
    public let damaged: DamagedPolicy
    /// `--reference`: a healthy recording from the same recorder, for rebuilding a lost MP4 index.
    public let reference: String?
    /// The helper pool and `PATH` it is decoded with.
    public let tools: AudioTools

    public init(path: String, tools: AudioTools, damaged: DamagedPolicy = .fail, reference: String? = nil) {
        self.tools = tools
        self.damaged = damaged
        self.reference = reference
        let abs = URL(fileURLWithPath: path).standardizedFileURL.path
        file = ScannedFile(relativePath: (abs as NSString).lastPathComponent, absolutePath: abs,
                           identity: FileIdentity(size: 0, mtimeNs: 0, inode: 0))
    }

    public func scan() throws(RunError) -> ScanResult { ScanResult(files: [file]) }
    public func open(_ file: ScannedFile) throws -> any AudioDecoder { try DecoderFactory.open(path: file.absolutePath, tools: tools, damaged: damaged, reference: reference) }
    public func metadata(_ file: ScannedFile, pictures: Bool) -> RecordingMetadata {
        TagReader.read(path: file.absolutePath, pictures: pictures ? .load : .describe)
    }
    public func contentHash(_ file: ScannedFile) throws -> Data { try FileHash.sha256(path: file.absolutePath).digest }
    public func currentIdentity(_ file: ScannedFile) -> FileIdentity? { file.identity }
}
