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

extension EncodeConfig {
    /// The spec\'s options for this stage: every check, before any audio flows (SoX\'s getopts).
    static func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(allowed: ["path", "format", "bits", "quality"], required: ["path"])
        let template = try StageRegistry.parseTemplate(o["path"]!)
        let format = try o["format"]?.choice(OutputFormat.self)
        if format == nil, OutputFormat(extensionOf: template.text) == nil {
            throw o["path"]!.error("cannot tell the format from \"\(template.text)\"; add format: (\(OutputFormat.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let resolved = format ?? OutputFormat(extensionOf: template.text)!
        var bits: SampleBits? = nil
        if let b = o["bits"] {
            guard let parsed = SampleBits(text: try b.string()) else { throw b.error("bits must be 8, 16, 24, 32, float or double") }
            if resolved.isLossy { throw b.error("\(resolved.rawValue) is lossy; use quality instead of bits") }
            guard resolved.allowedBits.contains(parsed) else {
                throw b.error("\(resolved.rawValue) cannot hold \(parsed.samplesLabel) samples (allowed: \(resolved.allowedBits.map(\.rawValue).joined(separator: ", ")))")
            }
            bits = parsed
        }
        if let rates = resolved.allowedRates, let rate = c.knownRate, !rates.contains(rate) {
            throw o["path"]!.error("\(resolved.rawValue) cannot be written at \(rate) Hz (allowed: \(rates.map(String.init).joined(separator: ", ")))")
        }
        return EncodeConfig(path: template, format: format, bits: bits, quality: try o["quality"]?.double(in: 0...1))
    }
}
