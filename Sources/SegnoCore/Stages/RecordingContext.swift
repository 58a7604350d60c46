import Foundation

/// What a chain knows about the recording it is processing: its names (for path templates
/// and metadata) and, once opened, its audio facts. Built by the runner or by `convert`.
public struct RecordingContext: Sendable {
    /// The source file, absolute.
    public var sourcePath: String
    /// The source relative to the input root, with `/` separators ("2024/memo 1.m4a").
    public var relativePath: String
    /// The source's modification time.
    public var modified: Date
    /// Audio facts from the decoder; nil until the file is opened.
    public var source: SourceInfo?
    /// Folder that every output must stay inside (absolute).
    public var outputRoot: String
    /// Extra template values from other stages or decoders (`title`, `recorded`, `zoom`).
    public var extra: [String: String] = [:]

    public init(sourcePath: String, relativePath: String, modified: Date, source: SourceInfo? = nil, outputRoot: String) {
        self.sourcePath = sourcePath
        self.relativePath = relativePath
        self.modified = modified
        self.source = source
        self.outputRoot = outputRoot
    }

    /// File name with extension ("memo 1.m4a").
    public var name: String { relativePath.split(separator: "/").last.map(String.init) ?? relativePath }
    /// File name without its last extension ("memo 1"). A name that is only a dot-prefixed word
    /// (".hidden") keeps it.
    public var stem: String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }
    /// Extension without the dot, as written ("m4a"); empty when none.
    public var ext: String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return String(name[name.index(after: dot)...])
    }
    /// Folder relative to the input root, empty at the top ("2024").
    public var dir: String {
        guard let slash = relativePath.lastIndex(of: "/") else { return "" }
        return String(relativePath[..<slash])
    }
}
