import SegnoDSP

/// `encode: { path: "{dir}/{stem}.flac", format: flac, bits: 16, quality: 0.8 }` writes the
/// stream at its place in the chain. The format follows the path's extension unless given;
/// `bits` defaults to the source's depth (see `SampleBits.defaultFor`).
public struct EncodeConfig: TapConfig {
    public let pathTemplate: PathTemplate
    public let format: OutputFormat?
    public let bits: SampleBits?
    /// 0…1: lossy quality (higher is better) or FLAC compression effort.
    public let quality: Double?
    public var name: String { "encode" }
    public var version: Int { 1 }
    public var options: [(String, String)] {
        var o = [("path", pathTemplate.text)]
        if let format { o.append(("format", format.rawValue)) }
        if let bits { o.append(("bits", bits.rawValue)) }
        if let quality { o.append(("quality", canonicalNumber(quality))) }
        return o
    }

    public init(path: PathTemplate, format: OutputFormat?, bits: SampleBits?, quality: Double?) {
        self.pathTemplate = path
        self.format = format
        self.bits = bits
        self.quality = quality
    }

    /// The format this tap writes for a resolved path.
    public func resolvedFormat(path: String) throws -> OutputFormat {
        if let format { return format }
        guard let f = OutputFormat(extensionOf: path) else {
            throw AudioError.unsupportedOutput(path: path, detail: "cannot tell the output format from the name; add format: (wav, aiff, caf, flac, ogg, opus, mp3, w64, rf64)")
        }
        return f
    }

    public func makeTap(paths: [String], context: RecordingContext) throws -> any Tap {
        let path = paths[0]
        let f = try resolvedFormat(path: path)
        let b = bits ?? context.source.flatMap { SampleBits.defaultFor(source: $0.sampleKind, sourceCodec: $0.codec, format: f) }
        return EncodeTap(path: path, format: f, bits: b, quality: quality)
    }
}

final class EncodeTap: Tap {
    let path: String
    let format: OutputFormat
    let bits: SampleBits?
    let quality: Double?
    var encoder: SndFileEncoder?

    init(path: String, format: OutputFormat, bits: SampleBits?, quality: Double?) {
        self.path = path
        self.format = format
        self.bits = bits
        self.quality = quality
    }

    func start(_ format: AudioFormat) throws {
        encoder = try SndFileEncoder(path: path, format: self.format, bits: bits, quality: quality, stream: format)
    }

    func observe(_ block: AudioBlock) throws { try encoder?.write(block) }

    func finish() throws -> [ProducedFile] {
        guard let e = encoder else { throw AudioError.encodeFailed(path: path, detail: "encoder never started") }
        try e.finish()
        encoder = nil
        return [ProducedFile(stage: "encode", path: path)]
    }

    func abandon() {
        encoder?.abandon()
        encoder = nil
    }
}
