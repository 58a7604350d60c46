import Foundation
import SegnoCore
import SegnoDSP

/// `segno info`: what a file holds, or why it cannot be read.
public enum FileInfo {
    /// What `inspect` learnt about one file.
    public struct Inspection: Sendable, Equatable {
        /// The stream facts; `frames` is what the decoder yields unless `fromHeader`.
        public var info: SourceInfo
        /// True only with `fast`, when the container's header gives no exact length (MP3 without
        /// a Xing/Info/VBRI header, ADTS, AMR, ALAC in CAF, WebM/Matroska, …).
        public var estimated: Bool
        /// Tags under their own keys, pictures, `bext`, `iXML` (`TagReader`); its normalised tags
        /// are also in `info.tags`.
        public var metadata = RecordingMetadata()
        /// True with `fast`: `info.frames` is the header's claim; nothing was decoded.
        public var fromHeader = false
        /// The frames the header declares, when decoding to the end gave another number.
        public var headerFrames: Int?
        /// Why decoding stopped before the end (lost sync, cut short): `info.frames` is what decoded
        /// before it. The file fails, as it would in a run.
        public var problem: AudioError?
        /// What the decode met that did not stop it (the decoder's notes), one line each.
        public var warnings: [String] = []
    }

    /// Opens `path` and reports what it holds. Never throws: failures become `.failure`.
    ///
    /// By default the file is decoded to the end and `frames` is the number of frames segno's
    /// decoder yields, whatever the header claims (a FLAC that loses sync, an MP3 whose Xing
    /// header or trailing tags lie). A decode that stops with an error after some audio is a
    /// success carrying `problem` (the frames decoded before it, and the header's claim); one from
    /// which no audio decodes is a failure naming the file and the cause. With `fast`, only the
    /// header is read and the first block is not decoded.
    public static func inspect(path: String, tools: AudioTools, fast: Bool = false) -> Result<Inspection, AudioError> {
        do {
            let d = try DecoderFactory.open(path: path, tools: tools)
            defer { d.close() }
            var context = RecordingContext(sourcePath: path, relativePath: path, modified: Date(), source: d.info, outputRoot: "/")
            context.carry(TagReader.read(path: path))
            var info = context.source ?? d.info
            let metadata = context.metadata
            let headerIsExact = ExactLength.headerIsExact(d, path: path)
            if fast { return .success(Inspection(info: info, estimated: !headerIsExact, metadata: metadata, fromHeader: true)) }
            let (decoded, problem) = decodedFrames(d, path: path)
            if decoded == 0 { throw problem ?? noAudio(d, path: path) }
            let header = info.frames
            info.frames = decoded
            let differs = problem != nil || (headerIsExact && decoded != header)
            return .success(Inspection(info: info, estimated: false, metadata: metadata, headerFrames: differs ? header : nil,
                                       problem: problem, warnings: d.notes))
        } catch let e as AudioError {
            return .failure(e)
        } catch {
            return .failure(.decodeFailed(path: path, detail: "\(error)"))
        }
    }

    /// Decodes to the end and counts the frames; a decode error ends the count and is returned
    /// beside it. Called once per file, blocks of 65,536 frames.
    private static func decodedFrames(_ d: any AudioDecoder, path: String) -> (Int, AudioError?) {
        var block = AudioBlock(channels: d.info.channels, capacity: 65536)
        var total = 0
        do {
            while true {
                let n = try d.read(into: &block, maxFrames: 65536)
                if n == 0 { return (total, nil) }
                total += n
            }
        } catch let e as AudioError {
            return (total, e)
        } catch {
            return (total, .decodeFailed(path: path, detail: "\(error)"))
        }
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
            return JSONValue.object(successFields(path: path, i, estimated: estimated, metadata: metadata)).serialized()
        case .failure(let e):
            var fields: [(String, JSONValue)] = [("path", .string(FileNameBytes.escaped(path))), ("ok", .bool(false)), ("error", .string(e.description))]
            if let m = metadataDespite(e, path: path) {
                if !m.tags.isEmpty { fields.append(("tags", .object(m.flattened.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))) }
                fields += metadataFields(m)
            }
            if let s = SalvageOpener.describe(path: path) { fields.append(("salvage", .string(s))) }
            return JSONValue.object(fields).serialized()
        }
    }

    /// One line of `info --json` for what `inspect` returned: the fields of `json(path:_:…)` and
    /// `"frames_from":"header"` with `fast` (nothing was decoded), `"header_frames"` when the header
    /// claims other than what decoded, `"decode_warnings"` (the decoder's notes). A `problem` makes
    /// it `"ok":false` with its `"error"`, still giving the stream and the frames decoded before it.
    public static func json(path: String, inspection result: Result<Inspection, AudioError>) -> String {
        guard case .success(let x) = result else { return json(path: path, result.map(\.info)) }
        var fields = successFields(path: path, x.info, estimated: x.estimated, metadata: x.metadata)
        if let p = x.problem {
            fields[1] = ("ok", .bool(false))
            fields.insert(("error", .string(p.description)), at: 2)
        }
        if x.fromHeader { fields.append(("frames_from", .string("header"))) }
        if let h = x.headerFrames { fields.append(("header_frames", .int(h))) }
        if !x.warnings.isEmpty { fields.append(("decode_warnings", .array(x.warnings.map { .string($0) }))) }
        if x.problem != nil, let s = SalvageOpener.describe(path: path) { fields.append(("salvage", .string(s))) }
        return JSONValue.object(fields).serialized()
    }

    /// `info`'s human line for what `inspect` returned, and whether it is an error (for stderr, and
    /// exit code 1). `fast` says `(from the header, not decoded)` after the duration; a header that
    /// claims other than what decoded is named there; a `problem` is the error, then the frames
    /// that decoded before it.
    public static func text(path: String, inspection result: Result<Inspection, AudioError>) -> (line: String, failed: Bool) {
        guard case .success(let x) = result else { return (text(path: path, result.map(\.info)), true) }
        if let p = x.problem {
            let i = x.info
            var line = p.description + String(format: "; decoded: %d frames (%.3f s)", i.frames, i.duration)
            if let h = x.headerFrames { line += " of the \(h) its header declares" }
            let carried = describe(tags: i.tags ?? [:], metadata: x.metadata)
            if !carried.isEmpty { line += "; it carries" + carried.dropFirst() }
            if let s = SalvageOpener.describe(path: path) { line += "; salvage: " + s }
            return (line, true)
        }
        let note = x.fromHeader ? "from the header, not decoded" : x.headerFrames.map { "its header says \($0) frames" }
        return (text(path: path, .success(x.info), estimated: x.estimated, metadata: x.metadata, lengthNote: note), false)
    }

    private static func successFields(path: String, _ i: SourceInfo, estimated: Bool, metadata: RecordingMetadata?) -> [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = [
            ("path", .string(FileNameBytes.escaped(path))), ("ok", .bool(true)), ("container", .string(i.container)),
            ("codec", .string(i.codec)), ("sample_rate", .int(i.sampleRate)), ("channels", .int(i.channels)),
            ("frames", .int(i.frames)), ("duration", JSONValue.rounded(i.duration, places: 3)),
        ]
        if estimated { fields.append(("estimated", .bool(true))) }
        if let tags = i.tags, !tags.isEmpty {
            fields.append(("tags", .object(tags.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })))
        }
        if let m = metadata { fields += Self.metadataFields(m) }
        return fields
    }

    /// One human line: `memo.wav: WAV PCM_16, 44100 Hz, 2 ch, 88200 frames, 2.000 s`, then the
    /// tags when the file has some: `, title="Kitchen idea", date="2024-05-01"` (sorted by key).
    /// `estimated` writes `about N frames` and `about D s`; `lengthNote` goes in brackets after the duration.
    /// `metadata` adds the pictures (`, picture: front cover, image/png, 1234 bytes`), the BWF
    /// origin (`, bext: originator "…", time reference N`) and `iXML` when present.
    /// Characters of a tag value `text` shows; longer ones end in "…" and their size.
    static package let valueShown = 200

    public static func text(path: String, _ result: Result<SourceInfo, AudioError>, estimated: Bool = false,
                            metadata: RecordingMetadata? = nil, lengthNote: String? = nil) -> String {
        switch result {
        case .success(let i):
            let about = estimated ? "about " : ""
            var line = "\(AudioError.quoted(path)): \(i.container) \(i.codec), \(i.sampleRate) Hz, \(i.channels) ch, \(about)\(i.frames) frames, \(about)\(String(format: "%.3f", i.duration)) s"
            if let n = lengthNote { line += " (\(n))" }
            return line + describe(tags: i.tags ?? [:], metadata: metadata)
        case .failure(let e):
            // What the container says about itself is shown even when its audio does not decode.
            let carried = metadataDespite(e, path: path).map { "; it carries" + String(describe(tags: $0.flattened, metadata: $0).dropFirst()) } ?? ""
            return e.description + carried + (SalvageOpener.describe(path: path).map { "; salvage: " + $0 } ?? "")
        }
    }

    /// ", title="Kitchen idea", picture: front cover, image/png, 1234 bytes, bext: …": the tags
    /// (sorted by key) and what else `metadata` holds, each after ", ".
    static func describe(tags: [String: String], metadata: RecordingMetadata?) -> String {
        var line = ""
        for (k, v) in tags.sorted(by: { $0.key < $1.key }) {
            // A line for people: a long value is shown by its start and size (`--json` has it whole).
            let cut = v.index(v.startIndex, offsetBy: Self.valueShown, limitedBy: v.endIndex) ?? v.endIndex
            let shown = cut == v.endIndex ? v : String(v[..<cut]) + "…"
            line += ", \(AudioError.quoted(k))=" + JSONValue.string(shown).serialized()
            if shown != v { line += " (\(v.utf8.count) bytes)" }
        }
        if let m = metadata {
            for p in m.pictures { line += ", picture: " + p.summary }
            if let b = m.broadcast { line += ", bext: originator \(JSONValue.string(b.originator).serialized()), time reference \(b.timeReference)" }
            if let x = m.ixml { line += ", iXML: \(x.count) bytes" }
            line += ChapterText.summary(m.chapterList)
        }
        return line
    }

    /// The tags, pictures, `bext` and `iXML` of a regular file whose audio failed (`error` is about
    /// its content, not a missing or empty file), as TagReader reads them whatever the audio
    /// holds; nil when it carries none.
    static func metadataDespite(_ error: AudioError, path: String) -> RecordingMetadata? {
        switch error {
        case .missing, .notAFile, .unreadable, .empty, .io, .refused: return nil
        default: break
        }
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        let m = TagReader.read(path: path)
        return m.isEmpty ? nil : m
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
        fields += ChapterText.jsonFields(m.chapterList)
        if !m.warnings.isEmpty { fields.append(("tag_warnings", .array(m.warnings.map { .string($0) }))) }
        return fields
    }
}
