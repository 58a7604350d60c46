import ArgumentParser
import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

struct ConvertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Convert one recording, through the same stages a spec uses.",
        discussion: "Stages run in this order: mix, highpass, lowpass, eq, gain, normalize, pitch, resample, encode. The output appears only when complete. A recording of \(SplitRule.duration(SplitRule.minimumSeconds)) or more runs on several cores (as segno run splits one; the same output). - as IN reads standard input (spooled to a temporary file, since most formats need seeking); - as OUT writes standard output (give --format).")

    @Argument(help: "Input audio file, or - for standard input.") var input: String
    @Argument(help: "Output file, or - for standard output; its extension picks the format unless --format is given.") var output: String

    @Option(help: "Output sample rate in Hz (default: keep).") var rate: Int?
    @Option(help: "Resampling quality: soxr-vhq or soxr-hq (libsoxr), best, medium, fast (libsamplerate) or polyphase (segno's own).") var quality: String = ResampleConfig.Quality.standard.rawValue
    @Option(help: "Mix to mono or stereo (default: keep channels).") var mix: String?
    @Option(parsing: .unconditional, help: "Gain in dB (default: 0); negative values work as --gain -6.") var gain: Double?
    @Option(help: "High-pass corner in Hz (Butterworth, order 2).") var highpass: Double?
    @Option(help: "Low-pass corner in Hz (Butterworth, order 2).") var lowpass: Double?
    @Option(help: ArgumentHelp("EQ bands \"type:freq:bandwidth:gain,…\" in AVAudioUnitEQ's types (parametric, lowShelf, highShelf, …).", valueName: "bands")) var eq: String?
    @Option(name: [.customLong("normalize"), .customLong("normalise")], parsing: .unconditional, help: ArgumentHelp("Normalise to loudness (-16 or -16LUFS, true peak ≤ -1 dBTP) or sample peak (-1dBFS).", valueName: "target")) var normalize: String?
    @Option(parsing: .unconditional, help: "Pitch shift in semitones, −24…24 (duration kept).") var pitch: Double?
    @Option(help: "Tempo factor 0.25…4 without changing pitch.") var tempo: Double?
    @Option(help: "Output format: wav, aiff, caf, flac, ogg, opus, mp3, w64, rf64, aac (or m4a), alac (default: from OUT's extension; .m4a is aac). aac and alac are written through the ffmpeg program.") var format: String?
    @Option(help: "Bits per sample: 8, 16, 24, 32, float, double (default: the source's depth where the format holds it).") var bits: String?
    @Option(name: .customLong("encode-quality"), help: "Lossy quality 0…1 (higher is better) or FLAC effort.") var encodeQuality: Double?
    @Flag(help: "Keep what a damaged IN holds (cut short, sizes unwritten, lost frames) instead of failing; gaps become silence.") var salvage = false
    @Option(help: ArgumentHelp("A healthy recording from the same recorder, whose settings rebuild the index of an MP4/M4A that lost it (implies --salvage).", valueName: "GOOD")) var reference: String?
    @Flag(help: "Replace OUT even when segno did not write it (without it, only files segno wrote are replaced).") var overwrite = false
    @Option(help: ArgumentHelp("AAC bitrate, e.g. 128k (default: 64k per channel); MP3 constant bitrate in kb/s as LAME's -b, e.g. 128.", valueName: "rate")) var bitrate: String?
    @Option(name: .customShort("V"), help: ArgumentHelp("MP3 variable bitrate quality as LAME's -V: 0 (best) … 9 (smallest).", valueName: "N")) var vbr: Double?
    @Option(name: .customLong("tag"), help: ArgumentHelp("Set a tag on OUT (repeatable): title=Meeting; the value may use {title}, {tag:NAME}, {date} and the other template variables; an empty value removes the tag.", valueName: "KEY=VALUE")) var setTags: [String] = []
    @Flag(name: .customLong("no-tags"), help: "Carry no tags, pictures, bext or iXML from IN to OUT (--tag still applies).") var noTags = false

    func validate() throws {
        _ = try Self.tagPolicy(setTags, noTags: noTags)
        if let rate, !ResampleConfig.rateRange.contains(rate) { throw ValidationError("--rate must be 1000…384000 Hz, got \(rate)") }
        if ResampleConfig.Quality(rawValue: quality) == nil { throw ValidationError("--quality must be one of \(ResampleConfig.Quality.allCases.map(\.rawValue).joined(separator: ", "))") }
        if let mix, MixConfig.Target(rawValue: mix) == nil { throw ValidationError("--mix must be mono or stereo") }
        if let gain, !GainConfig.range.contains(gain) { throw ValidationError("--gain must be −96…48 dB") }
        if let format, Self.format(named: format) == nil { throw ValidationError("--format must be one of \(OutputFormat.allCases.map(\.rawValue).joined(separator: ", ")) (or an extension such as m4a)") }
        if format == nil, output == "-" { throw ValidationError("writing to standard output (-) needs --format, e.g. --format wav") }
        if format == nil, OutputFormat(extensionOf: output) == nil { throw ValidationError("cannot tell the format from \"\(output)\"; add --format") }
        if let bits, SampleBits(text: bits) == nil { throw ValidationError("--bits must be 8, 16, 24, 32, float or double") }
        if let f = highpass, !(f > 0) { throw ValidationError("--highpass must be above 0 Hz") }
        if let f = lowpass, !(f > 0) { throw ValidationError("--lowpass must be above 0 Hz") }
        if let eq { do { _ = try EQConfig.parse(bands: eq) } catch { throw ValidationError(error.message) } }
        if let n = normalize, Self.normalizeTarget(n) == nil { throw ValidationError("--normalize takes -16 or -16LUFS (loudness) or -1dBFS (sample peak)") }
        if let p = pitch, !PitchConfig.semitoneRange.contains(p) { throw ValidationError("--pitch must be −24…24 semitones") }
        if let t = tempo, !PitchConfig.tempoRange.contains(t) { throw ValidationError("--tempo must be 0.25…4") }
        if let q = encodeQuality, !(0...1).contains(q) { throw ValidationError("--encode-quality must be 0…1") }
        let resolved = format.flatMap(Self.format(named:)) ?? OutputFormat(extensionOf: output)
        if let rate, let resolved, let allowed = resolved.allowedRates, !allowed.contains(rate) {
            throw ValidationError("--rate \(rate): \(resolved.rawValue) is coded at \(allowed.map(String.init).joined(separator: ", ")) Hz; give one of them")
        }
        if let bitrate, resolved == .mp3 {
            if EncodeConfig.parseMP3Bitrate(bitrate) == nil { throw ValidationError("--bitrate: " + EncodeConfig.mp3BitrateRule) }
        } else if let bitrate {
            guard resolved == .aac else { throw ValidationError("--bitrate applies to aac and mp3 output only") }
            if EncodeConfig.parseBitrate(bitrate) == nil { throw ValidationError("--bitrate must be bits per second, or kb/s with k: 8k…512k (e.g. 128k)") }
        }
        if let vbr {
            guard resolved == .mp3 else { throw ValidationError("-V (LAME's VBR quality) applies to mp3 output only") }
            guard EncodeConfig.vbrRange.contains(vbr) else { throw ValidationError("-V must be 0…9 (0 is best), as LAME's") }
        }
        if resolved == .mp3, [bitrate != nil, vbr != nil, encodeQuality != nil].filter({ $0 }).count > 1 {
            throw ValidationError("give one of --bitrate, -V and --encode-quality for mp3")
        }
        if encodeQuality != nil, resolved == .aac { throw ValidationError("aac takes --bitrate (e.g. --bitrate 128k), not --encode-quality") }
        if encodeQuality != nil, resolved == .alac { throw ValidationError("alac is lossless and has no --encode-quality") }
        try checkFiles()
    }

    /// The files named on the command line: a missing IN, OUT naming IN, and OUT in a folder that
    /// does not exist are usage errors (exit 2), as for every other command; nothing is created.
    func checkFiles() throws {
        if input != "-", !FileNameBytes.exists(input) { throw ValidationError("\(AudioError.quoted(input)): no such file") }
        guard output != "-" else { return }
        if input != "-", OutputFile.sameFile(output, input)
            || URL(fileURLWithPath: output).standardizedFileURL.path == URL(fileURLWithPath: input).standardizedFileURL.path {
            throw ValidationError("\(AudioError.quoted(output)) is the input file; choose another output name")
        }
        if let dir = missingFolder(of: output) {
            throw ValidationError("\(AudioError.quoted(output)): its folder \(AudioError.quoted(dir)) does not exist; segno creates no folder (as SoX and ffmpeg)")
        }
    }

    func run() throws {
        var transforms: [any TransformConfig] = []
        if let mix { transforms.append(MixConfig(target: MixConfig.Target(rawValue: mix)!)) }
        if let highpass { transforms.append(FilterConfig(filter: .highpass, frequency: highpass)) }
        if let lowpass { transforms.append(FilterConfig(filter: .lowpass, frequency: lowpass)) }
        if let eq { transforms.append(EQConfig(bands: try EQConfig.parse(bands: eq))) }
        if let gain, gain != 0 { transforms.append(GainConfig(db: gain)) }
        if let n = normalize.flatMap(Self.normalizeTarget) { transforms.append(NormalizeConfig(target: n)) }
        if (pitch ?? 0) != 0 || (tempo ?? 1) != 1 { transforms.append(PitchConfig(semitones: pitch ?? 0, tempo: tempo ?? 1)) }
        if let rate { transforms.append(ResampleConfig(rate: rate, quality: ResampleConfig.Quality(rawValue: quality)!)) }
        // `-`: a private temporary folder holds the spooled input and/or the finished output.
        var spool: String?
        if input == "-" || output == "-" {
            var t = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("segno-convert-XXXXXX").utf8CString)
            guard let made = mkdtemp(&t) else { printError("segno: cannot make a temporary folder: \(String(cString: strerror(errno)))"); throw Exit.failures }
            spool = String(cString: made)
        }
        defer { if let spool { try? FileManager.default.removeItem(atPath: spool) } }
        var input = self.input
        if input == "-", let spool {
            input = spool + "/stdin"
            do { try Self.copy(from: 0, toFile: input) } catch { printError("segno: reading standard input: \(error)"); throw Exit.failures }
        }
        // Opus is coded at 8, 12, 16, 24 or 48 kHz: another source rate is resampled to 48 kHz, as
        // opusenc and ffmpeg do, and said once (libsndfile would refuse the rate).
        let resolved = format.flatMap(Self.format(named:)) ?? OutputFormat(extensionOf: self.output)
        if rate == nil, resolved == .opus, let allowed = OutputFormat.opus.allowedRates,
           let source = try? DecoderFactory.open(path: input, tools: ProcessContext.tools) {
            let from = source.info.sampleRate
            source.close()
            if !allowed.contains(from) {
                transforms.append(ResampleConfig(rate: 48000, quality: ResampleConfig.Quality(rawValue: quality)!))
                printError("segno: note: Opus is coded at 48000 Hz; resampling from \(from) Hz (--rate 8000, 12000, 16000 or 24000 chooses another)")
            }
        }
        var output = self.output
        if output == "-", let spool, let f = format.flatMap(Self.format(named:)) {
            output = spool + "/stdout." + f.rawValue
        }
        // Never over a file segno did not write (its files carry the user.segno mark), unless asked.
        if self.output != "-", !overwrite, OutputFile.exists(output), !OutputFile.isMarked(output) {
            printError("segno: \(AudioError.quoted(output)) exists and segno did not write it; add --overwrite to replace it")
            throw Exit.failures
        }
        // A file segno made from another input: say so, as a run does for two recordings that
        // name one output, instead of replacing it silently.
        let inputPath = URL(fileURLWithPath: input).standardizedFileURL.path
        if self.output != "-", self.input != "-", !overwrite, OutputFile.isMarked(output),
           let from = OutputFile.recordedSource(of: output), from != inputPath, !OutputFile.sameFile(from, input) {
            printError("segno: \(AudioError.quoted(output)) was made by segno from \(AudioError.quoted(from)); converting \(AudioError.quoted(self.input)) would replace it (add --overwrite, or choose another output name)")
            throw Exit.failures
        }
        let template = try PathTemplate(output.lastComponent)
        let encode = EncodeConfig(path: template, format: format.flatMap(Self.format(named:)),
                                  bits: bits.flatMap(SampleBits.init(text:)), quality: encodeQuality,
                                  bitrate: bitrate.flatMap(resolved == .mp3 ? EncodeConfig.parseMP3Bitrate : EncodeConfig.parseBitrate),
                                  vbr: vbr, tags: try Self.tagPolicy(setTags, noTags: noTags),
                                  searchPath: ProcessContext.tools.searchPath)
        let watcher = SignalWatcher()
        let stop = watcher.flag
        do {
            let result = try Convert.run(input: input, output: output, tools: ProcessContext.tools, transforms: transforms, encode: encode,
                                         damaged: salvage || reference != nil ? .salvage : .fail, reference: reference, isCancelled: { stop.signal != nil })
            if let s = result.salvaged {
                printError("segno: warning: \(AudioError.quoted(self.input)): salvaged: \(s.summary(sampleRate: result.source.sampleRate))")
            }
            for note in result.notes { printError("segno: warning: \(AudioError.quoted(self.input)): " + Self.flagWording(note)) }
            if self.output != "-", self.input != "-" { OutputFile.recordSource(inputPath, of: result.output) }
        } catch is Interrupted {
            throw stop.signal == SIGTERM ? Exit.sigterm : Exit.sigint
        } catch {
            printError("segno: " + Self.flagWording("\(error)"))
            throw Exit.failures
        }
        if self.output == "-" {
            do { try Self.copy(fromFile: output, to: 1) } catch { printError("segno: writing standard output: \(error)"); throw Exit.failures }
        }
    }

    /// `--tag KEY=VALUE` and `--no-tags` as an encode's tag policy; a malformed `--tag` is a usage
    /// error (exit 2).
    static func tagPolicy(_ items: [String], noTags: Bool) throws -> TagPolicy {
        var policy = TagPolicy(keep: !noTags)
        for item in items {
            guard let eq = item.firstIndex(of: "="), case let key = String(item[..<eq]), TagPolicy.isValidName(key) else {
                throw ValidationError("--tag \(item): give KEY=VALUE, KEY of letters, digits, '_', '-', ':' or '.'")
            }
            do { policy.set.append((key.lowercased(), try PathTemplate(String(item[item.index(after: eq)...]), isPath: false))) } catch {
                throw ValidationError("--tag \(item): \(error.message)")
            }
        }
        return policy
    }

    /// Copies everything readable from `fd` into a new file at `path`, 1 MiB at a time.
    static func copy(from fd: Int32, toFile path: String) throws {
        let out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard out >= 0 else { throw AudioError.system(path, "create", errno: errno) }
        defer { close(out) }
        try pump(from: fd, to: out, name: path)
    }

    /// Copies the file at `path` to `fd` (standard output).
    static func copy(fromFile path: String, to fd: Int32) throws {
        let input = open(path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw AudioError.system(path, "open", errno: errno) }
        defer { close(input) }
        try pump(from: input, to: fd, name: "standard output")
    }

    private static func pump(from src: Int32, to dst: Int32, name: String) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(src, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw AudioError.system(name, "read", errno: errno) }
            if n == 0 { return }
            var off = 0
            while off < n {
                let w = buffer.withUnsafeBytes { write(dst, $0.baseAddress! + off, n - off) }
                if w < 0 { if errno == EINTR { continue }; throw AudioError.system(name, "write", errno: errno) }
                off += w
            }
        }
    }

    /// The library's advice names spec stages ("add mix: stereo"); convert's user has flags.
    static func flagWording(_ message: String) -> String {
        AudioError.salvageWording(message, for: .flag)
            .replacingOccurrences(of: "add mix: stereo", with: "add --mix stereo")
            .replacingOccurrences(of: "add mix: mono", with: "add --mix mono")
            .replacingOccurrences(of: "add a resample stage", with: "add --rate with one of them")
            .replacingOccurrences(of: "; add format: (", with: "; add --format (")
            .replacingOccurrences(of: "(limit: true would reach the target)", with: "")
    }
}

extension ConvertCommand {
    /// `--format`: a format's name (`aac`), or an extension that names one (`m4a` is aac, `aif` aiff).
    static func format(named name: String) -> OutputFormat? {
        OutputFormat(rawValue: name.lowercased()) ?? (name.contains("/") || name.contains(".") ? nil : OutputFormat(extensionOf: "x." + name))
    }

    /// "-16LUFS" → loudness −16 (true peak −1 dBTP); "-1dBFS" → sample peak −1.
    static func normalizeTarget(_ text: String) -> NormalizeConfig.Target? {
        let t = text.lowercased().replacingOccurrences(of: " ", with: "")
        // A bare number is loudness, as in ffmpeg's loudnorm (I=-16) and the spec's `normalize: -16`.
        if let v = Double(t), NormalizeConfig.loudnessRange.contains(v) { return .loudness(lufs: v, truePeak: -1) }
        if t.hasSuffix("lufs"), let v = Double(t.dropLast(4)), NormalizeConfig.loudnessRange.contains(v) { return .loudness(lufs: v, truePeak: -1) }
        if t.hasSuffix("dbfs"), let v = Double(t.dropLast(4)), NormalizeConfig.peakRange.contains(v) { return .peak(dbfs: v) }
        return nil
    }
}

/// The last path component of a string path.
extension String {
    var lastComponent: String { split(separator: "/").last.map(String.init) ?? self }
}
