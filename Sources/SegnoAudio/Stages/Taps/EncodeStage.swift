import CSoxr
import Foundation
import SegnoCore
import SegnoDSP

/// `encode: { path: "{dir}/{stem}.flac", format: flac, bits: 16, quality: 0.8 }` writes the
/// stream at its place in the chain. The format follows the path's extension unless given;
/// `bits` defaults to the source's depth (see `SampleBits.defaultFor`). `aac` and `alac` (`.m4a`)
/// are written through the `ffmpeg` program (`FFmpegEncoder`), AAC at `bitrate` bits per second.
public struct EncodeConfig: TapConfig {
    public let pathTemplate: PathTemplate
    public let format: OutputFormat?
    public let bits: SampleBits?
    /// 0…1: lossy quality (higher is better) or FLAC compression effort.
    public let quality: Double?
    /// AAC's bitrate, or MP3's constant bitrate, in bits per second (nil: AAC
    /// `FFmpegEncoder.defaultBitrate`; MP3 libsndfile's default or `quality`).
    public let bitrate: Int?
    /// MP3 variable bitrate quality as LAME's `-V`: 0 (best) … 9 (smallest); nil: not VBR by request.
    public let vbr: Double?
    /// Which tags, pictures, `bext` and `iXML` the output carries.
    public let tags: TagPolicy
    public var name: String { "encode" }
    public var carriesPictures: Bool { tags.keep }
    public var version: Int { 1 }
    /// Chapters a `chapters` tap makes in the same run are embedded (decision 0082): when that tap
    /// runs again, the encode does too, or it would keep the chapters made before.
    public var usesKinds: Set<Findings.Kind> { [.chapters] }
    public var options: [(String, String)] {
        var o = [("path", pathTemplate.text)]
        if let format { o.append(("format", format.rawValue)) }
        if let bits { o.append(("bits", bits.rawValue)) }
        if let quality { o.append(("quality", canonicalNumber(quality))) }
        if let bitrate { o.append(("bitrate", String(bitrate))) }
        if let vbr { o.append(("vbr", canonicalNumber(vbr))) }
        return o + tags.options
    }

    /// The `PATH` in which the `ffmpeg` program is looked for (M4A output), as the caller read it;
    /// not an option, so not in the recipe. Looked up per recording, so installing ffmpeg helps
    /// the next run.
    public let searchPath: String?

    public init(path: PathTemplate, format: OutputFormat?, bits: SampleBits?, quality: Double?, bitrate: Int? = nil,
                vbr: Double? = nil, tags: TagPolicy = TagPolicy(), searchPath: String?) {
        self.vbr = vbr
        self.searchPath = searchPath
        self.tags = tags
        self.pathTemplate = path
        self.format = format
        self.bits = bits
        self.quality = quality
        self.bitrate = bitrate
    }

    /// The format this tap writes for a resolved path.
    public func resolvedFormat(path: String) throws -> OutputFormat {
        if let format { return format }
        guard let f = OutputFormat(extensionOf: path) else {
            throw AudioError.unsupportedOutput(path: path, detail: "cannot tell the output format from the name; add format: (\(OutputFormat.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return f
    }

    public func makeTap(paths: [String], context: RecordingContext) throws -> any Tap {
        let path = paths[0]
        let f = try resolvedFormat(path: path)
        let b = bits ?? context.source.flatMap { SampleBits.defaultFor(source: $0.sampleKind, sourceCodec: $0.codec, format: f) }
        var plan: TagPlan
        do { plan = try TagPlan(policy: tags, context: context) } catch {
            throw StageStartError(stage: "encode", "set: \(error.message)")
        }
        let dropped = plan.fit(f)
        let tap = EncodeTap(path: path, format: f, bits: b, quality: quality, bitrate: bitrate, tags: plan, searchPath: searchPath)
        tap.vbr = vbr
        tap.notes = dropped
        return tap
    }
}

final package class EncodeTap: Tap, TimelineUsing, FindingsUsingTap {
    package let path: String
    package let format: OutputFormat
    package let bits: SampleBits?
    package let quality: Double?
    package let bitrate: Int?
    /// MP3's `-V` quality (`EncodeConfig.vbr`).
    package var vbr: Double?
    package let tags: TagPlan
    package let searchPath: String?
    package var encoder: (any AudioEncoder)?
    /// What the output format could not hold (`TagPlan.fit`), as warnings.
    package var notes: [String] = []
    /// The maps of the time-moving transforms before this tap (decision 0072).
    private var timeline: () -> [TimeMap] = { [] }
    /// Frames that reached the tap, and their rate: the output's length for its chapters.
    private var framesSeen = 0, streamRate = 0

    package func useTimeline(_ maps: @escaping () -> [TimeMap]) { timeline = maps }

    /// Chapters the run made (`chapters: { from }`, decision 0082), source seconds: written in
    /// place of the recording's own. Nil when none were made.
    private var made: [Chapter]?
    package var uses: Set<Findings.Kind> { [.chapters] }
    package func use(_ findings: Findings) { made = findings.chapters }

    package init(path: String, format: OutputFormat, bits: SampleBits?, quality: Double?, bitrate: Int?, tags: TagPlan, searchPath: String?) {
        self.searchPath = searchPath
        self.tags = tags
        self.path = path
        self.format = format
        self.bits = bits
        self.quality = quality
        self.bitrate = bitrate
    }

    /// The plan the encoder got, its counts at the output's rate (`TagPlan.retimed`).
    private var retimed: TagPlan?

    /// Opus at a rate it cannot code (22.05 kHz): the stream is resampled to 48 kHz inside the tap,
    /// as `convert`, opusenc and ffmpeg do, and said in a note (decision 0065).
    private var opusResampler: (any Transform)?
    private var resampled = AudioBlock(channels: 1)

    package func start(_ stream: AudioFormat) throws {
        streamRate = stream.sampleRate
        var format = stream
        if self.format == .opus, let rates = OutputFormat.opus.allowedRates, !rates.contains(stream.sampleRate) {
            let r = SoxrResampleTransform(rate: Self.opusRate, recipe: UInt(SOXR_VHQ))
            format = try r.start(stream)
            opusResampler = r
            resampled = AudioBlock(channels: stream.channels)
            notes.append("encode: Opus is coded at \(Self.opusRate) Hz; resampled from \(stream.sampleRate) Hz for \(AudioError.quoted(path)) (a resample stage before encode to 8000, 12000, 16000, 24000 or 48000 Hz chooses another)")
        }
        let plan: TagPlan? = tags.isEmpty ? nil : tags.retimed(to: format.sampleRate)
        retimed = plan
        if self.format.needsFFmpeg {
            // Looked up per recording (a few `stat` calls), so installing ffmpeg helps the next run.
            let ffmpeg = FFmpegTools.find("ffmpeg", in: searchPath)
            encoder = try FFmpegEncoder(path: path, format: self.format, bits: bits, bitrate: bitrate, stream: format, executable: ffmpeg, tags: plan)
        } else {
            encoder = try SndFileEncoder(path: path, format: self.format, bits: bits, quality: quality, stream: format, tags: plan,
                                         mp3Rate: self.format == .mp3 ? (bitrate.map { .constant(kbps: $0 / 1000) } ?? vbr.map { .variable(v: $0) }) : nil)
        }
    }

    /// The rate Opus gets when the stream's rate is not one it codes.
    package static let opusRate = 48000

    package func observe(_ block: AudioBlock) throws {
        framesSeen += block.frames
        guard let r = opusResampler else { try encoder?.write(block); return }
        resampled.reset(channels: block.channels, capacity: block.frames)
        resampled.samples.withUnsafeMutableBufferPointer { to in
            block.samples.withUnsafeBufferPointer { from in
                _ = to.update(fromContentsOf: from[0..<(block.frames * block.channels)])
            }
        }
        resampled.frames = block.frames
        try r.process(&resampled)
        if resampled.frames > 0 { try encoder?.write(resampled) }
    }

    package func finish() throws -> [ProducedFile] {
        guard let e = encoder else { throw AudioError.encodeFailed(path: path, detail: "encoder never started") }
        if let r = opusResampler {
            var tail = AudioBlock(channels: resampled.channels)
            try r.finish(&tail)
            if tail.frames > 0 { try e.write(tail) }
            opusResampler = nil
        }
        // Made chapters replace the recording's own; a WAV keeps its markers beside them.
        let keptMarkers = format == .wav || format == .rf64
        let chapters = made.map { ChapterList(chapters: $0, markers: keptMarkers ? tags.chapters.markers : []) } ?? tags.chapters
        if !chapters.isEmpty, [.aiff, .caf, .w64].contains(format) {
            notes.append("encode: \(format.rawValue) holds no chapters or markers; the source's \(chapters.chapters.count + chapters.markers.count) are not in \(AudioError.quoted(path))")
        } else if !chapters.isEmpty, streamRate > 0 {
            // WAV and RF64 keep markers apart; other formats get them as chapters, each to the next start.
            let list = keptMarkers ? chapters : ChapterWriter.chaptersOnly(chapters)
            e.chapters = list.mapped(timeline(), length: Double(framesSeen) / Double(streamRate))
        }
        // The iXML's sync points go where its markers went (decision 0096).
        if format == .wav || format == .rf64, let x = retimed?.ixml, streamRate > 0 {
            let placed = IXMLPlacement.mapped(x, rate: streamRate, timeReference: retimed?.broadcast?.timeReference, maps: timeline(),
                                              length: Double(framesSeen) / Double(streamRate), file: path)
            if placed.xml != x { e.placedIXML = placed.xml }
            notes += placed.notes
        }
        try e.finish()
        encoder = nil
        return [ProducedFile(stage: "encode", path: path)]
    }

    package func abandon() {
        encoder?.abandon()
        encoder = nil
    }
}

extension EncodeConfig {
    /// The spec\'s options for this stage: every check, before any audio flows (SoX\'s getopts).
    /// Called by the stage registry, which gives the `PATH` in which ffmpeg is looked for.
    static package func parse(_ v: SpecValue, _ c: StageParseContext, searchPath: String?) throws(SpecError) -> any StageConfig {
        // `encode: "{stem}.flac"` is `encode: { path: "{stem}.flac" }`.
        let o = v.isScalar ? SpecOptions(values: ["path": v], owner: v) : try v.options(declaredBy: declaration)
        let template = try StageRegistry.parseTemplate(o["path"]!)
        let format = try o["format"]?.choice(OutputFormat.self)
        if format == nil, OutputFormat(extensionOf: template.text) == nil {
            throw o["path"]!.error("cannot tell the format from \"\(template.text)\"; add format: (\(OutputFormat.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let resolved = format ?? OutputFormat(extensionOf: template.text)!
        var bits: SampleBits? = nil
        if let b = o["bits"] {
            guard let parsed = SampleBits(text: try b.string()) else { throw b.error("bits must be 8, 16, 24, 32, float or double") }
            if resolved.isLossy { throw b.error("\(resolved.rawValue) is lossy; use \(resolved == .aac ? "bitrate" : "quality") instead of bits") }
            guard resolved.allowedBits.contains(parsed) else {
                throw b.error("\(resolved.rawValue) cannot hold \(parsed.samplesLabel) samples (allowed: \(resolved.allowedBits.map(\.rawValue).joined(separator: ", ")))")
            }
            bits = parsed
        }
        if let rates = resolved.allowedRates, let rate = c.knownRate, !rates.contains(rate) {
            throw o["path"]!.error("\(resolved.rawValue) cannot be written at \(rate) Hz (allowed: \(rates.map(String.init).joined(separator: ", ")))")
        }
        if let q = o["quality"], resolved.needsFFmpeg {
            throw q.error(resolved == .aac ? "aac takes bitrate (e.g. bitrate: 128k), not quality" : "alac is lossless and has no quality setting")
        }
        var bitrate: Int? = nil
        if let b = o["bitrate"], resolved == .mp3 {
            guard let parsed = Self.parseMP3Bitrate(try b.string()) else { throw b.error(Self.mp3BitrateRule) }
            bitrate = parsed
        } else if let b = o["bitrate"] {
            guard resolved == .aac else { throw b.error("bitrate applies to aac and mp3 only (\(resolved.rawValue) \(resolved.isLossy ? "takes quality 0…1" : "is lossless"))") }
            guard let parsed = Self.parseBitrate(try b.string()) else {
                throw b.error("bitrate must be bits per second, or kb/s with k: 8k…512k (e.g. 128k)")
            }
            bitrate = parsed
        }
        var vbr: Double? = nil
        if let q = o["vbr"] {
            guard resolved == .mp3 else { throw q.error("vbr (LAME's -V 0…9) applies to mp3 only") }
            if o["bitrate"] != nil || o["quality"] != nil { throw q.error("give one of vbr, bitrate and quality") }
            vbr = try q.double(in: Self.vbrRange)
        }
        if resolved == .mp3, o["bitrate"] != nil, o["quality"] != nil { throw o["bitrate"]!.error("give one of bitrate and quality") }
        return EncodeConfig(path: template, format: format, bits: bits, quality: try o["quality"]?.double(in: Self.qualityRange), bitrate: bitrate,
                            vbr: vbr, tags: try parseTags(o["tags"], o["set"]), searchPath: searchPath)
    }

    /// `tags: keep | none` and `set: { NAME: TEMPLATE }`: names are letters, digits, `_`, `-`,
    /// `:` and `.` (normalised to lower case); values are text templates (`{title}`, `{tag:artist}`).
    static package func parseTags(_ keep: SpecValue?, _ set: SpecValue?) throws(SpecError) -> TagPolicy {
        var policy = TagPolicy()
        if let k = keep {
            switch try k.string() {
            case "keep": policy.keep = true
            case "none": policy.keep = false
            default: throw k.error("tags must be keep or none")
            }
        }
        if let s = set {
            for (key, value) in try s.mapping() {
                guard TagPolicy.isValidName(key) else { throw value.error("tag names are letters, digits, '_', '-', ':' and '.'") }
                let text = try value.string()
                let template: PathTemplate
                do { template = try PathTemplate(text, isPath: false) } catch { throw value.error(error.message) }
                policy.set.append((key.lowercased(), template))
            }
        }
        return policy
    }

    /// "128k" or "128000" → 128000 (bits per second); nil when malformed or outside
    /// `FFmpegEncoder.bitrateRange`. Shared by the spec and `convert --bitrate`.
    /// LAME's `-V` range: 0 (best, largest) … 9 (smallest).
    public static let vbrRange = 0.0...9.0

    /// What an MP3 bitrate may be, for messages.
    public static let mp3BitrateRule = "mp3 bitrate is kb/s as LAME's -b: 8…320, e.g. 128 or 128k"

    /// An MP3 constant bitrate as LAME's `-b` takes it (kb/s, `128` or `128k`) in bits per second;
    /// nil outside 8…320 kb/s.
    public static func parseMP3Bitrate(_ text: String) -> Int? {
        var t = text.trimmingCharacters(in: .whitespaces).lowercased()
        if t.hasSuffix("k") { t.removeLast() }
        guard let kbps = Int(t), (8...320).contains(kbps) else { return nil }
        return kbps * 1000
    }

    public static func parseBitrate(_ text: String) -> Int? {
        var t = text.trimmingCharacters(in: .whitespaces).lowercased()
        var scale = 1
        if t.hasSuffix("k") { t.removeLast(); scale = 1000 }
        guard let v = Double(t), v.isFinite, v > 0 else { return nil }
        let bps = Int((v * Double(scale)).rounded())
        return FFmpegEncoder.bitrateRange.contains(bps) ? bps : nil
    }
}

extension EncodeConfig {
    /// `quality`: lossy quality (higher is better) or FLAC compression effort.
    public static let qualityRange = 0.0...1.0

    public static let declaration = StageDeclaration(
        key: "encode", kind: .tap, summary: "Writes the stream at its place in the chain as an audio file (WAV, FLAC, MP3, Opus, AAC, …).",
        options: [
            .init("path", .pathTemplate, default: nil, help: "Where the file goes, relative to the output root: \"{dir}/{stem}.flac\"."),
            .init("format", .choice, default: "from the path's extension", .oneOf(OutputFormat.self), help: "The file format."),
            .init("bits", .choice, default: "the source's depth where the format holds it", .oneOf(SampleBits.self),
                  help: "Sample depth, for lossless formats."),
            .init("quality", .number, default: "the format's", .within(qualityRange),
                  help: "Lossy quality (higher is better) or FLAC compression effort; not for aac or alac."),
            .init("bitrate", .text, unit: "bit/s", default: "aac: 64k per channel",
                  help: "aac: \(FFmpegEncoder.bitrateRange.lowerBound / 1000)k…\(FFmpegEncoder.bitrateRange.upperBound / 1000)k (128k or 128000); \(mp3BitrateRule)."),
            .init("vbr", .number, default: "none", .within(vbrRange), help: "mp3 only: LAME's -V, 0 (best) … 9 (smallest)."),
            .init("tags", .choice, default: "keep", .choices(["keep", "none"]), help: "Whether the source's tags, pictures, bext and iXML are carried over."),
            .init("set", .mapping, default: "none", help: "Tags to set: NAME: text template (\"{title}\", \"{tag:artist}\")."),
        ],
        shorthand: "`encode: \"{stem}.flac\"` is `{ path: \"{stem}.flac\" }`",
        example: "encode: { path: \"{dir}/{stem}.flac\", bits: 16 }")
}
