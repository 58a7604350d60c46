import Foundation
import SegnoCore

/// Stream facts and tags of a file's first audio stream, learnt before any audio is decoded:
/// from `ffprobe -of json` (`FFprobe`) or, for common MP4 files, from their header (`MP4Probe`).
package struct StreamProbe {
    /// What the stream is, as `SourceInfo` reports it.
    package var info: SourceInfo
    /// Frames the container declares exactly (MP4 edit list or `iTunSMPB`): ffmpeg's output is
    /// cut there, dropping the encoder's end padding. Nil when the container says nothing exact.
    package var exactFrames: Int?
    /// Frames the container's header promises (MP4, CAF): decoding far fewer means the file is
    /// truncated. Nil for raw streams (ADTS, AMR), whose length ffprobe estimates from the bitrate.
    package var declaredFrames: Int?
    /// The ffprobe child's process id (reaped before `run` returns; tests check it); 0 when no
    /// process ran.
    package var processID: pid_t = 0
}

/// Runs `ffprobe -of json` and reads its answer. Called once per recording that goes through
/// ffmpeg and that `MP4Probe` does not read.
package enum FFprobe {

    /// Runs ffprobe on `path` (passed as a `file:` URL, so names starting with `-` or holding `:`
    /// are never options or protocols). Throws `AudioError` naming the file and ffprobe's reason.
    static package func run(path: String, kind: ContentSniffer.Kind, tools: FFmpegTools) throws -> StreamProbe {
        let args = ["-hide_banner", "-loglevel", "error", "-of", "json", "-show_format", "-show_streams",
                    "-select_streams", "a:0", FFmpegDecoder.inputURL(path)]
        let child: ChildProcess
        do { child = try ChildProcess(executable: tools.ffprobe, arguments: args) } catch {
            throw AudioError.decodeFailed(path: path, detail: "cannot run \(tools.ffprobe): \(error)")
        }
        defer { child.terminate() }
        let json: [UInt8]
        do { json = try child.readAllStdout(limit: 16 << 20) } catch {
            throw AudioError.decodeFailed(path: path, detail: "ffprobe: \(error)")
        }
        let status = child.wait()
        guard status.succeeded else {
            let why = FFmpegDecoder.summary(child, path: path)
            throw FFmpegDecoder.failure(path: path, detail: "ffprobe: \(why.isEmpty ? status.description : why)")
        }
        var probe = try parse(json: json, path: path, kind: kind)
        probe.processID = child.pid
        return probe
    }

    /// Turns ffprobe's JSON into facts. `kind` (from the file's first bytes) tells MP4 from 3GP.
    static package func parse(json: [UInt8], path: String, kind: ContentSniffer.Kind) throws -> StreamProbe {
        // ffprobe copies tag bytes as they are; invalid UTF-8 would make the JSON unreadable.
        let clean = Data(String(decoding: json, as: UTF8.self).utf8)
        let out: Output
        do { out = try JSONDecoder().decode(Output.self, from: clean) } catch {
            throw AudioError.decodeFailed(path: path, detail: "ffprobe printed unreadable JSON: \(error)")
        }
        let formatName = out.format?.format_name ?? ""
        guard let s = out.streams?.first(where: { $0.codec_type == "audio" }) else {
            throw AudioError.unrecognised(path: path, looksLike: kind == .unknown ? formatName : kind.rawValue,
                                          detail: "ffprobe found no audio stream")
        }
        let rate = Int(s.sample_rate ?? "") ?? 0
        let channels = s.channels ?? 0
        guard rate > 0, channels > 0 else {
            throw AudioError.decodeFailed(path: path, detail: "ffprobe reports \(channels) channels at \(rate) Hz")
        }
        let codecName = s.codec_name ?? "unknown"
        let formatTags = lowercased(out.format?.tags)
        let container = containerName(formatName: formatName, brand: formatTags["major_brand"], kind: kind)

        var frames = 0
        if let ts = s.duration_ts, let tb = rational(s.time_base), tb.den > 0 {
            frames = Int((Double(ts) * Double(tb.num) * Double(rate) / Double(tb.den)).rounded())
        } else if let d = Double(s.duration ?? out.format?.duration ?? "") {
            frames = Int((d * Double(rate)).rounded())
        }
        let isMP4 = formatName.contains("mp4") || formatName.contains("mov")
        var exact: Int? = nil
        if isMP4 {
            exact = frames > 0 ? frames : nil
            if let smpb = formatTags["itunsmpb"], let n = iTunSMPBLength(smpb) { exact = n }
            if let exact { frames = exact }
        }
        let declared = isMP4 || formatName == "caf" ? (frames > 0 ? frames : nil) : nil
        let info = SourceInfo(container: container, codec: codecLabel(codecName, profile: s.profile, bits: Int(s.bits_per_raw_sample ?? "")),
                              sampleRate: rate, channels: channels, frames: max(0, frames),
                              sampleKind: sampleKind(codecName), tags: userTags(stream: s.tags, format: out.format?.tags))
        return StreamProbe(info: info, exactFrames: exact, declaredFrames: declared)
    }

    // MARK: - Names

    /// "MP4", "3GP", "MOV", "CAF", "ADTS", "AMR", … from ffprobe's demuxer name and the MP4 brand.
    static package func containerName(formatName: String, brand: String?, kind: ContentSniffer.Kind) -> String {
        let b = (brand ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        if formatName.contains("mov") || formatName.contains("mp4") {
            if kind == .threeGP || b.hasPrefix("3g") { return "3GP" }
            if b == "qt" { return "MOV" }
            return "MP4"
        }
        if formatName.contains("matroska") { return kind == .webm ? "WebM" : "Matroska" }
        switch formatName {
        case "caf": return "CAF"
        case "aac": return "ADTS"
        case "mp3": return "MPEG-1/2"  // as libsndfile names it
        case "amr", "amrnb", "amrwb": return "AMR"
        case "ogg": return "Ogg"
        case "wav": return "WAV"
        default: return (formatName.split(separator: ",").first.map(String.init) ?? "unknown").uppercased()
        }
    }

    /// Codec names in the words segno already uses for libsndfile's decodes ("ALAC_16", "FLOAT")
    /// plus "AAC", "HE-AAC", "AMR-NB", "IMA4".
    static package func codecLabel(_ name: String, profile: String?, bits: Int?) -> String {
        switch name {
        case "aac":
            switch profile {
            case "HE-AAC"?: return "HE-AAC"
            case "HE-AACv2"?: return "HE-AACv2"
            case "LD"?: return "AAC-LD"
            case "ELD"?: return "AAC-ELD"
            default: return "AAC"
            }
        case "alac": return "ALAC_\(bits.flatMap { [16, 20, 24, 32].contains($0) ? $0 : nil } ?? 16)"
        case "amr_nb": return "AMR-NB"
        case "amr_wb": return "AMR-WB"
        case "adpcm_ima_qt": return "IMA4"
        case "mp3", "mp3float": return "MP3"
        case "opus": return "Opus"
        case "vorbis": return "Vorbis"
        case "flac": return "FLAC"
        case "pcm_f32le", "pcm_f32be": return "FLOAT"
        case "pcm_f64le", "pcm_f64be": return "DOUBLE"
        case "pcm_mulaw": return "ULAW"
        case "pcm_alaw": return "ALAW"
        default:
            if name.hasPrefix("pcm_s"), let b = Int(name.dropFirst(5).prefix { $0.isNumber }) { return "PCM_\(b)" }
            return name.uppercased()
        }
    }

    /// Lossless integer codecs give exact integer fractions; floats are floats; the rest is lossy.
    static package func sampleKind(_ name: String) -> SampleKind {
        if name == "alac" || name == "flac" || name.hasPrefix("pcm_s") || name.hasPrefix("pcm_u") { return .integer }
        if name.hasPrefix("pcm_f") { return .float }
        return .lossy
    }

    /// The original length in frames from an iTunes gapless tag
    /// (" 00000000 PPPPPPPP EEEEEEEE LLLLLLLLLLLLLLLL …": priming, padding, length, all hex).
    static package func iTunSMPBLength(_ value: String) -> Int? {
        let fields = value.split(separator: " ")
        guard fields.count >= 4, let n = Int(fields[3], radix: 16), n > 0 else { return nil }
        return n
    }

    /// Keys that describe the container rather than the recording.
    static package let technicalTags: Set<String> = ["major_brand", "minor_version", "compatible_brands", "handler_name",
                                             "vendor_id", "language", "itunsmpb", "itunnorm", "encoder", "duration"]

    /// The recording's own tags (title, date, creation_time, location from `©xyz` or QuickTime's
    /// ISO 6709 key, artist, …), keys lowercased; the container's tags win over the stream's.
    /// Nil when there are none.
    static package func userTags(stream: [String: String]?, format: [String: String]?) -> [String: String]? {
        var tags: [String: String] = [:]
        for (k, v) in lowercased(stream).merging(lowercased(format), uniquingKeysWith: { $1 })
        where !technicalTags.contains(k) && !v.isEmpty {
            tags[k] = v
        }
        // ffmpeg also exports language-qualified copies ("location-eng"); keep the plain key.
        for k in Array(tags.keys) {
            guard let dash = k.lastIndex(of: "-"), k.distance(from: dash, to: k.endIndex) == 4,
                  k[k.index(after: dash)...].allSatisfy({ $0.isLetter && $0.isLowercase }) else { continue }
            let base = String(k[..<dash])
            guard tags[base] == nil || tags[base] == tags[k] else { continue }
            tags[base] = tags[k]
            tags[k] = nil
        }
        // QuickTime metadata keys (iPhone recordings) under the names templates use.
        for (plain, apple) in [("location", "com.apple.quicktime.location.iso6709"), ("date", "com.apple.quicktime.creationdate"),
                               ("title", "com.apple.quicktime.title")] where tags[plain] == nil {
            tags[plain] = tags[apple]
        }
        return tags.isEmpty ? nil : tags
    }

    private static func lowercased(_ tags: [String: String]?) -> [String: String] {
        var out: [String: String] = [:]
        for (k, v) in tags ?? [:] { out[k.lowercased()] = v }
        return out
    }

    private static func rational(_ s: String?) -> (num: Int, den: Int)? {
        guard let s else { return nil }
        let p = s.split(separator: "/")
        guard p.count == 2, let n = Int(p[0]), let d = Int(p[1]) else { return nil }
        return (n, d)
    }

    // MARK: - ffprobe's JSON (only the fields segno reads)

    package struct Output: Decodable {
        package var streams: [Stream]?
        package var format: Format?
    }

    package struct Stream: Decodable {
        package var codec_type: String?
        package var codec_name: String?
        package var profile: String?
        package var sample_rate: String?
        package var channels: Int?
        package var bits_per_raw_sample: String?
        package var time_base: String?
        package var duration_ts: Int64?
        package var duration: String?
        package var tags: [String: String]?
    }

    package struct Format: Decodable {
        package var format_name: String?
        package var duration: String?
        package var tags: [String: String]?
    }
}
