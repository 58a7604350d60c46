import Foundation
import SegnoCore
import SegnoDSP

/// `segno info`: what a file holds, or why it cannot be read.
public enum FileInfo {
    /// What `inspect` learnt about one file.
    public struct Inspection: Sendable, Equatable {
        /// The stream facts; `frames` is what the decoder yields unless `estimated`.
        public var info: SourceInfo
        /// True only with `fast`, when the container's header gives no exact length (MP3 without
        /// a Xing/Info/VBRI header, ADTS, AMR, ALAC in CAF, WebM/Matroska, …).
        public var estimated: Bool
        /// Tags under their own keys, pictures, `bext`, `iXML` (`TagReader`); its normalised tags
        /// are also in `info.tags`.
        public var metadata = RecordingMetadata()
    }

    /// Opens `path` and reports what it holds. Never throws: failures become `.failure`.
    ///
    /// By default `frames` is exact: the number of frames segno's decoder yields. Headers are
    /// trusted where they are exact (WAV, AIFF, FLAC, Ogg, PCM in CAF, MP4 with an edit list or
    /// `iTunSMPB`, MP3 with a Xing/Info/VBRI header); frame headers are counted where the header
    /// is only an estimate (MP3, ADTS, AMR; the CAF `pakt` chunk for ALAC); the file is decoded
    /// to the end where nothing else gives the length (WebM/Matroska, AAC in CAF, irregular
    /// streams). The first block is always decoded, so a file from which no audio decodes is a
    /// failure naming the file and the cause. With `fast`, only the header is read.
    public static func inspect(path: String, fast: Bool = false) -> Result<Inspection, AudioError> {
        do {
            let d = try DecoderFactory.open(path: path)
            defer { d.close() }
            var context = RecordingContext(sourcePath: path, relativePath: path, modified: Date(), source: d.info, outputRoot: "/")
            context.carry(TagReader.read(path: path))
            var info = context.source ?? d.info
            let metadata = context.metadata
            if fast { return .success(Inspection(info: info, estimated: !ExactLength.headerIsExact(d, path: path), metadata: metadata)) }
            switch ExactLength.method(for: d, path: path) {
            case .header:
                try expectAudio(d, path: path)
            case .counted(let n):
                try expectAudio(d, path: path)
                info.frames = n
            case .decode:
                info.frames = try decodedFrames(d, path: path)
            }
            return .success(Inspection(info: info, estimated: false, metadata: metadata))
        } catch let e as AudioError {
            return .failure(e)
        } catch {
            return .failure(.decodeFailed(path: path, detail: "\(error)"))
        }
    }

    /// Decodes the first block; throws when it fails or yields nothing.
    private static func expectAudio(_ d: any AudioDecoder, path: String) throws {
        var block = AudioBlock(channels: d.info.channels, capacity: 4096)
        if try d.read(into: &block, maxFrames: 4096) == 0 { throw noAudio(d, path: path) }
    }

    /// Decodes to the end and counts the frames; throws when decoding fails or yields nothing.
    private static func decodedFrames(_ d: any AudioDecoder, path: String) throws -> Int {
        var block = AudioBlock(channels: d.info.channels, capacity: 65536)
        var total = 0
        while true {
            let n = try d.read(into: &block, maxFrames: 65536)
            if n == 0 { break }
            total += n
        }
        if total == 0 { throw noAudio(d, path: path) }
        return total
    }

    private static func noAudio(_ d: any AudioDecoder, path: String) -> AudioError {
        .decodeFailed(path: path, detail: "no audio decodes from this \(d.info.container) \(d.info.codec) file (its header declares \(d.info.frames) frames)")
    }

    /// One line of `info --json`: `{"path":…,"ok":true,"container":…,…}` or `{"path":…,"ok":false,"error":…}`.
    /// `estimated` adds `"estimated":true` (only `info --fast` sets it).
    /// `metadata` adds `raw_tags` (the container's own keys), `pictures`, `bext`, `ixml` (its
    /// size in bytes) and `tag_warnings` when present.
    public static func json(path: String, _ result: Result<SourceInfo, AudioError>, estimated: Bool = false,
                            metadata: RecordingMetadata? = nil) -> String {
        switch result {
        case .success(let i):
            var fields: [(String, JSONValue)] = [
                ("path", .string(path)), ("ok", .bool(true)), ("container", .string(i.container)),
                ("codec", .string(i.codec)), ("sample_rate", .int(i.sampleRate)), ("channels", .int(i.channels)),
                ("frames", .int(i.frames)), ("duration", JSONValue.rounded(i.duration, places: 3)),
            ]
            if estimated { fields.append(("estimated", .bool(true))) }
            if let tags = i.tags, !tags.isEmpty {
                fields.append(("tags", .object(tags.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })))
            }
            if let m = metadata { fields += Self.metadataFields(m) }
            return JSONValue.object(fields).serialized()
        case .failure(let e):
            var fields: [(String, JSONValue)] = [("path", .string(path)), ("ok", .bool(false)), ("error", .string(e.description))]
            if let s = SalvageOpener.describe(path: path) { fields.append(("salvage", .string(s))) }
            return JSONValue.object(fields).serialized()
        }
    }

    /// One human line: `memo.wav: WAV PCM_16, 44100 Hz, 2 ch, 88200 frames, 2.000 s`, then the
    /// tags when the file has some: `, title="Kitchen idea", date="2024-05-01"` (sorted by key).
    /// `estimated` writes `about N frames` and `about D s`.
    /// `metadata` adds the pictures (`, picture: front cover, image/png, 1234 bytes`), the BWF
    /// origin (`, bext: originator "…", time reference N`) and `iXML` when present.
    public static func text(path: String, _ result: Result<SourceInfo, AudioError>, estimated: Bool = false,
                            metadata: RecordingMetadata? = nil) -> String {
        switch result {
        case .success(let i):
            let about = estimated ? "about " : ""
            var line = "\(AudioError.quoted(path)): \(i.container) \(i.codec), \(i.sampleRate) Hz, \(i.channels) ch, \(about)\(i.frames) frames, \(about)\(String(format: "%.3f", i.duration)) s"
            for (k, v) in (i.tags ?? [:]).sorted(by: { $0.key < $1.key }) {
                line += ", \(AudioError.quoted(k))=" + JSONValue.string(v).serialized()
            }
            if let m = metadata {
                for p in m.pictures { line += ", picture: " + p.summary }
                if let b = m.broadcast { line += ", bext: originator \(JSONValue.string(b.originator).serialized()), time reference \(b.timeReference)" }
                if let x = m.ixml { line += ", iXML: \(x.count) bytes" }
            }
            return line
        case .failure(let e):
            return e.description + (SalvageOpener.describe(path: path).map { "; salvage: " + $0 } ?? "")
        }
    }

    /// The `info --json` fields of what a file carries besides audio.
    static package func metadataFields(_ m: RecordingMetadata) -> [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = []
        if !m.raw.isEmpty {
            fields.append(("raw_tags", .array(m.raw.map { .object([("key", .string($0.key)), ("value", .string($0.value))]) })))
        }
        if !m.pictures.isEmpty {
            fields.append(("pictures", .array(m.pictures.map {
                .object([("type", .int($0.type)), ("mime", .string($0.mime)), ("description", .string($0.description)), ("size", .int($0.size))])
            })))
        }
        if let b = m.broadcast {
            fields.append(("bext", .object([
                ("description", .string(b.description)), ("originator", .string(b.originator)),
                ("originator_reference", .string(b.originatorReference)), ("origination_date", .string(b.originationDate)),
                ("origination_time", .string(b.originationTime)), ("time_reference", .int(Int(clamping: b.timeReference))),
                ("version", .int(Int(b.version))), ("coding_history", .string(b.codingHistory)),
            ])))
        }
        if let x = m.ixml { fields.append(("ixml", .string(String(decoding: x, as: UTF8.self)))) }
        if !m.warnings.isEmpty { fields.append(("tag_warnings", .array(m.warnings.map { .string($0) }))) }
        return fields
    }
}
