import ArgumentParser
import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState
import SegnoWaveform

struct WaveformCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "waveform",
        abstract: "Write audiowaveform-compatible peak data (or a picture) for files and folders.",
        discussion: """
        Folders are scanned recursively and processed in parallel. JSON and .dat output is byte for \
        byte what audiowaveform 1.10.3 writes, and audiowaveform's command line works as it is \
        (-i/-o, --input-format/--output-format, -z, -b, -s/-e, -w/-h, colours, --amplitude-scale, \
        --waveform-style), so -h is the picture height: help is --help only. Differences: segno \
        defaults to 8 bits (what peaks.js expects), a 1000 × 200 picture without axis labels, and \
        clips float input beyond ±1.
        """,
        // audiowaveform's -h is --height; help keeps its long name only.
        helpNames: [.long])

    /// audiowaveform's `--with-axis-labels` / `--no-axis-labels`.
    enum AxisLabels: String, EnumerableFlag {
        case withAxisLabels, noAxisLabels
    }

    @Argument(help: "Audio files or folders.") var inputs: [String] = []
    @Option(name: [.short, .customLong("input-filename")], help: "An input, as audiowaveform names it (- reads standard input; needs --input-format).") var inputFilename: [String] = []
    @Option(name: [.short, .customLong("output")], help: "Output file (one input only); its extension picks the format; - writes standard output.") var output: String?
    @Option(name: .customLong("output-filename"), help: "Same as -o (audiowaveform's name).") var outputFilename: String?
    @Option(help: "Output folder; inputs keep their relative paths (default: beside each input).") var outDir: String?
    @Option(help: "wav, mp3, flac, ogg, opus (audio: the content decides), raw (headerless: --raw-*), dat or json (waveform data).") var inputFormat: String?
    @Option(help: "dat, json, txt or png (audiowaveform's name for --format), or wav: the input audio as 16-bit WAV.") var outputFormat: String?
    @Option(name: [.short, .customLong("zoom")], help: "Samples per pixel, at least 2 (default: 256); auto fits a PNG's width.") var zoom: String?
    @Option(help: "Several zooms in one pass, e.g. 256,512,1024 (one file per zoom: NAME-256.json).") var zooms: String?
    @Option(parsing: .unconditional, help: "Pixels per second instead of --zoom.") var pixelsPerSecond: Int?
    @Option(help: "About this many points over the whole file instead of --zoom.") var points: Int?
    @Option(name: [.short, .customLong("bits")], help: "8 or 16 (default: 8), or 16 with -i, as audiowaveform.") var bits: Int?
    @Option(help: "json, dat, png, svg or levels (default: from --output, else json).") var format: String?
    @Flag(help: "One min/max pair per channel instead of the channels mixed.") var splitChannels = false
    @Flag(help: "Add \"duration\" (seconds) to JSON output.") var duration = false
    @Option(name: [.short, .customLong("start")], help: "PNG: seconds where the picture starts (one point per column).") var start: Double?
    @Option(name: [.short, .customLong("end")], help: "Seconds where the picture ends: the zoom fits --start…--end into --width.") var end: Double?
    @Option(name: [.short, .customLong("width")], help: "Picture width in pixels (png/svg; default 1000).") var width: Int?
    @Option(name: [.short, .customLong("height")], help: "Picture height in pixels (png/svg; default 200).") var height: Int?
    @Option(name: [.short, .customLong("colors")], help: "audacity or audition: audiowaveform's colour schemes (default: #336EC4 on white).") var colors: String?
    @Option(help: "Background colour, rrggbb[aa].") var backgroundColor: String?
    @Option(help: "Waveform colour, rrggbb[aa]; several (comma-separated) colour split channels in turn.") var waveformColor: String?
    @Option(help: "Border and tick colour, rrggbb[aa] (with --with-axis-labels).") var borderColor: String?
    @Option(help: "Time label colour, rrggbb[aa] (with --with-axis-labels).") var axisLabelColor: String?
    @Flag(help: "PNG: a border and time labels (audiowaveform's default), or none (segno's default).") var axisLabels: AxisLabels?
    @Option(help: "Vertical zoom: a factor (> 0), or auto (the loudest peak reaches full scale).") var amplitudeScale: String?
    @Option(help: "PNG: normal, or bars.") var waveformStyle: String?
    @Option(parsing: .unconditional, help: "Bar width in pixels (--waveform-style bars; default 8).") var barWidth: Int?
    @Option(parsing: .unconditional, help: "Gap between bars in pixels (--waveform-style bars; default 4).") var barGap: Int?
    @Option(help: "square or rounded (--waveform-style bars).") var barStyle: String?
    @Option(parsing: .unconditional, help: "PNG compression: only -1 (the default) is accepted.") var compression: Int?
    @Flag(name: [.short, .long], help: "No status messages (segno prints none but errors anyway).") var quiet = false
    @Option(parsing: .unconditional, help: "Raw input: sample rate in Hz.") var rawSamplerate: Int?
    @Option(parsing: .unconditional, help: "Raw input: channels.") var rawChannels: Int?
    @Option(help: "Raw input: s8, u8, s16le, s16be, s24le, s24be, s32le, s32be, f32le, f32be, f64le or f64be.") var rawFormat: String?
    @Option(help: "Number of levels for --format levels.") var levels: Int = 100
    @Option(help: "Worker count (default: active processors).") var parallel: Int?
    @Flag(help: "Keep what a damaged input holds (cut short, sizes unwritten, lost frames) instead of failing; gaps become silence.") var salvage = false
    @Option(help: ArgumentHelp("A healthy recording from the same recorder, whose settings rebuild the index of an MP4/M4A that lost it (implies --salvage).", valueName: "GOOD")) var reference: String?
    @Flag(help: "Replace existing outputs even when they are not waveform data of this format.") var overwrite = false

    static let audioInputFormats: Set<String> = ["wav", "mp3", "flac", "ogg", "opus"]

    /// audiowaveform's own form: `-i` given, or `--input-format` with no input named (standard
    /// input). It keeps audiowaveform's contract: standard output without `-o`, its defaults
    /// (16 bits, an 800 × 250 picture with axis labels, the audacity colours), `txt` and `wav`
    /// output, and exit status 1 for every failure, usage included.
    var awfForm: Bool { !inputFilename.isEmpty || (inputs.isEmpty && inputFormat != nil) }
    /// The output name, from -o or --output-filename; `-` (standard output) in the audiowaveform
    /// form when only --output-format is given.
    var outputName: String? {
        output ?? outputFilename ?? (awfForm && (outputFormat ?? format) != nil ? "-" : nil)
    }
    /// Every input: positional ones, then -i ones; standard input in the audiowaveform form without -i.
    var allInputs: [String] {
        let given = inputs + inputFilename
        return given.isEmpty && awfForm ? ["-"] : given
    }
    /// The bit depth written: -b, else 16 in the audiowaveform form and 8 otherwise.
    var effectiveBits: Int { bits ?? (awfForm ? 16 : 8) }
    /// The picture width: -w, else 800 in the audiowaveform form (its default) and 1000 otherwise.
    var pictureWidth: Int { width ?? (awfForm ? 800 : 1000) }
    /// Axis labels: --with-axis-labels, or the audiowaveform form without --no-axis-labels.
    var labelsOn: Bool { axisLabels == .withAxisLabels || (awfForm && axisLabels == nil && (chosenFormat ?? .json) == .png) }

    /// The bits to write: `effectiveBits`, except that audiowaveform converts waveform data at its
    /// own depth when -b is not given.
    func dataBits(_ given: [String]) -> Int {
        guard awfForm, bits == nil, Self.awfData.contains(awfInputFormat), let path = given.first,
              let bytes = FileManager.default.contents(atPath: path) else { return effectiveBits }
        let data = awfInputFormat == "dat" ? try? WaveformDat.decode(Array(bytes)) : try? WaveformJSON.decode(Array(bytes))
        return data?.bits ?? effectiveBits
    }

    /// The format asked for: --format or --output-format, else the output's extension.
    var chosenFormat: WaveformConfig.Format? {
        if let f = format ?? outputFormat { return WaveformConfig.Format(rawValue: f) }
        return outputName.flatMap(WaveformConfig.format(forPath:))
    }

    /// A number of seconds or a factor as audiowaveform takes it.
    var amplitude: WaveformConfig.AmplitudeScale? {
        guard let amplitudeScale else { return nil }
        if amplitudeScale == "auto" { return .auto }
        return Double(amplitudeScale).map { .factor($0) }
    }

    /// The flag checks, run first thing in `run()` (not ArgumentParser's `validate()`) so the
    /// audiowaveform form can fail with its exit status 1.
    func check() throws {
        if awfForm { try checkAudiowaveformForm() }
        if allInputs.isEmpty { throw ValidationError("give an input (a file, a folder, or -i FILE)") }
        if output != nil && outputFilename != nil { throw ValidationError("give -o or --output-filename, not both") }
        if outputName != nil && outDir != nil { throw ValidationError("give --output or --out-dir, not both") }
        if let outDir, missingFolder(of: outDir + "/x") != nil {
            throw ValidationError("--out-dir \(outDir) does not exist; create it first (segno makes the subfolders inside it, not the folder itself)")
        }
        let chosen = [zoom != nil, zooms != nil, pixelsPerSecond != nil, points != nil].filter { $0 }.count
        if chosen > 1 { throw ValidationError("give only one of --zoom, --zooms, --pixels-per-second, --points") }
        if effectiveBits != 8 && effectiveBits != 16 { throw ValidationError("--bits must be 8 or 16") }
        if let format, WaveformConfig.Format(rawValue: format) == nil { throw ValidationError("--format must be json, dat, png, svg or levels") }
        if let outputFormat {
            if !awfForm && (outputFormat == "wav" || outputFormat == "txt") {
                throw ValidationError("--output-format \(outputFormat) is audiowaveform's form: give the input with -i (or segno convert IN OUT.wav for audio)")
            }
            if !["dat", "json", "png", "wav", "txt"].contains(outputFormat) { throw ValidationError("--output-format must be dat, json, txt, png or wav") }
            if let format, format != outputFormat { throw ValidationError("--format \(format) and --output-format \(outputFormat) disagree") }
        }
        if let inputFormat {
            if !Self.audioInputFormats.contains(inputFormat) && !["dat", "json", "raw"].contains(inputFormat) {
                throw ValidationError("--input-format must be wav, mp3, flac, ogg, opus, raw, dat or json")
            }
        }
        if readsRaw {
            if rawSamplerate == nil { throw ValidationError("--input-format raw needs --raw-samplerate") }
            if rawChannels == nil { throw ValidationError("--input-format raw needs --raw-channels") }
            if rawFormat == nil { throw ValidationError("--input-format raw needs --raw-format") }
            do { _ = try rawInput() } catch { throw ValidationError("\(error)") }
        } else if rawSamplerate != nil || rawChannels != nil || rawFormat != nil {
            throw ValidationError("--raw-samplerate, --raw-channels and --raw-format describe --input-format raw")
        }
        if allInputs.contains("-") && inputFormat == nil { throw ValidationError("reading standard input (-i -) needs --input-format") }
        if allInputs.filter({ $0 == "-" }).count > 1 { throw ValidationError("standard input can be read once") }
        if let z = zoom, z != "auto", (Int(z) ?? 0) < 2 { throw ValidationError("--zoom must be at least 2, or auto") }
        if let p = pixelsPerSecond, p < 1 { throw ValidationError("--pixels-per-second must be at least 1") }
        if let p = points, p < 1 { throw ValidationError("--points must be at least 1") }
        if let p = parallel, !JobSpec.parallelRange.contains(p) { throw ValidationError("--parallel must be 1…256") }
        if !WaveformConfig.levelsRange.contains(levels) { throw ValidationError("--levels must be 1…1400") }
        if let zooms, parseZooms(zooms) == nil { throw ValidationError("--zooms takes whole numbers ≥ 2 separated by commas") }
        if let out = outputName, out != "-", let dir = missingFolder(of: out) {
            throw ValidationError("\(AudioError.quoted(out)): its folder \(AudioError.quoted(dir)) does not exist; segno creates no folder for -o")
        }
        if awfForm && ["wav", "txt"].contains(awfOutputFormat ?? "") { return }
        try validateOutputName()
        try validateAudiowaveformFlags()
    }

    func validateOutputName() throws {
        guard let output = outputName else { return }
        if output == "-" {
            if format == nil && outputFormat == nil { throw ValidationError("writing standard output (-o -) needs --output-format (dat, json or png)") }
            if zooms != nil { throw ValidationError("--zooms writes one file per zoom; it cannot write standard output") }
            return
        }
        // The output's format follows a known extension or --format; never audio under an audio name.
        let ext = (output as NSString).pathExtension.lowercased()
        if OutputFormat(extensionOf: output) != nil || ["m4a", "mp4", "aac", "3gp", "amr", "webm", "mka"].contains(ext) {
            throw ValidationError("--output \(output) has an audio extension; waveform data goes in .json, .dat, .png or .svg")
        }
        let implied = WaveformConfig.format(forPath: output)
        if let implied, let f = format ?? outputFormat, f != implied.rawValue, !(f == "levels" && implied == .json) {
            throw ValidationError("--output \(output) names a .\(ext) file but the format is \(f)")
        }
        if implied == nil && format == nil && outputFormat == nil {
            throw ValidationError("cannot tell the format from --output \(output); name it .json, .dat, .png or .svg, or give --format")
        }
    }

    /// audiowaveform's picture and time flags: what segno does with them, and what it refuses.
    func validateAudiowaveformFlags() throws {
        let fmt = chosenFormat ?? .json
        let picture = fmt == .png || fmt == .svg
        if let w = width, !(1...16384).contains(w) { throw ValidationError("--width must be 1…16384") }
        if let h = height, !(1...4096).contains(h) { throw ValidationError("--height must be 1…4096") }
        if let s = start, !(s.isFinite && s >= 0) { throw ValidationError("--start must be a number of seconds ≥ 0") }
        if let e = end {
            guard e.isFinite, e > (start ?? 0) else { throw ValidationError("--end must be greater than --start (\(start ?? 0))") }
            if zoom != nil || zooms != nil || points != nil { throw ValidationError("give either --end or --zoom, not both") }
            if pixelsPerSecond != nil { throw ValidationError("give either --end or --pixels-per-second, not both") }
        }
        if (start != nil || end != nil || zoom == "auto") && fmt != .png && !(fmt == .json || fmt == .dat) {
            throw ValidationError("--start, --end and --zoom auto lay out a PNG (or set a .dat/.json zoom with --end); not for \(fmt.rawValue)")
        }
        if fmt == .json || fmt == .dat {
            if zoom == "auto" { throw ValidationError("--zoom auto fits a PNG's width; give a number for .\(fmt.rawValue) output (or --end with --width)") }
            if start != nil && end == nil {
                throw ValidationError("--start lays out a PNG; for .\(fmt.rawValue) output it only counts with --end (the zoom is (end − start) × rate / width, as audiowaveform)")
            }
        }
        if (zoom == "auto" || end != nil) && zooms != nil { throw ValidationError("--zooms cannot be combined with --zoom auto or --end") }
        if let a = amplitudeScale {
            guard a == "auto" || (Double(a).map { $0.isFinite && $0 > 0 } ?? false) else {
                throw ValidationError("--amplitude-scale must be auto or a number greater than 0")
            }
            if fmt == .levels { throw ValidationError("--amplitude-scale applies to dat, json, png and svg output") }
        }
        if let c = colors, c != "audacity" && c != "audition" { throw ValidationError("--colors must be audacity or audition") }
        for (name, value) in [("--background-color", backgroundColor), ("--border-color", borderColor), ("--axis-label-color", axisLabelColor)] {
            if let value, (try? RGBAColor(hex: value)) == nil { throw ValidationError("\(name) \(value) is not a colour: give rrggbb or rrggbbaa") }
        }
        if let waveformColor, waveformColor.split(separator: ",").contains(where: { (try? RGBAColor(hex: String($0).trimmingCharacters(in: .whitespaces))) == nil }) || waveformColor.isEmpty {
            throw ValidationError("--waveform-color \(waveformColor) is not a colour list: give rrggbb[aa] or several separated by commas")
        }
        if (borderColor != nil || axisLabelColor != nil) && !labelsOn {
            throw ValidationError("--border-color and --axis-label-color colour the border and time labels, which segno draws only with --with-axis-labels (audiowaveform draws them by default)")
        }
        if axisLabels == .withAxisLabels && fmt != .png { throw ValidationError("--with-axis-labels draws PNG only") }
        if let s = waveformStyle, s != "normal" && s != "bars" { throw ValidationError("--waveform-style must be normal or bars") }
        if let s = barStyle, s != "square" && s != "rounded" { throw ValidationError("--bar-style must be square or rounded") }
        if let w = barWidth, w < 1 { throw ValidationError("--bar-width must be at least 1") }
        if let g = barGap, g < 0 { throw ValidationError("--bar-gap must be at least 0") }
        if waveformStyle != "bars" && (barWidth != nil || barGap != nil || barStyle != nil) {
            throw ValidationError("--bar-width, --bar-gap and --bar-style need --waveform-style bars")
        }
        if waveformStyle == "bars" && fmt != .png { throw ValidationError("--waveform-style bars draws PNG only") }
        if let c = compression {
            if !(-1...9).contains(c) { throw ValidationError("--compression must be -1 (default) or 0…9") }
            if c != -1 { throw ValidationError("--compression \(c): segno's PNG encoder has one compression level; leave --compression out") }
        }
        let pictureOnly = [("--colors", colors != nil), ("--background-color", backgroundColor != nil),
                           ("--waveform-color", waveformColor != nil), ("--waveform-style", waveformStyle != nil),
                           ("--with-axis-labels", axisLabels == .withAxisLabels),
                           ("--height", height != nil)].filter { $0.1 }.map { $0.0 }
        if !picture && !pictureOnly.isEmpty {
            throw ValidationError("\(pictureOnly.joined(separator: ", ")) \(pictureOnly.count == 1 ? "draws" : "draw") pictures; the output is \(fmt.rawValue)")
        }
        if !picture && width != nil && end == nil { throw ValidationError("--width sizes a picture (or, with --end, sets a .\(fmt.rawValue) zoom); the output is \(fmt.rawValue)") }
    }

    /// The `--raw-*` description (only with `--input-format raw`).
    func rawInput() throws -> SndFileDecoder.RawFormat {
        try SndFileDecoder.RawFormat(sampleRate: rawSamplerate ?? 0, channels: rawChannels ?? 0, encoding: rawFormat ?? "")
    }

    func parseZooms(_ text: String) -> [Int]? {
        let z = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !z.isEmpty, z.allSatisfy({ ($0 ?? 0) >= 2 }) else { return nil }
        return z.map { $0! }
    }

    /// The picture the flags describe (size, colours, scale, bars).
    func makePicture() throws -> WaveformPicture {
        var background = RGBAColor.white, waveform = WaveformPicture.defaultWaveform
        var border = RGBAColor(red: 0, green: 0, blue: 0), label = RGBAColor(red: 0, green: 0, blue: 0)
        switch colors ?? (awfForm ? "audacity" : nil) {
        case "audacity"?:
            background = RGBAColor(red: 214, green: 214, blue: 214); waveform = RGBAColor(red: 63, green: 77, blue: 155)
        case "audition"?:
            background = RGBAColor(red: 0, green: 63, blue: 34); waveform = RGBAColor(red: 134, green: 252, blue: 199)
            border = RGBAColor(red: 157, green: 157, blue: 157); label = RGBAColor(red: 190, green: 190, blue: 190)
        default: break
        }
        if let borderColor { border = try RGBAColor(hex: borderColor) }
        if let axisLabelColor { label = try RGBAColor(hex: axisLabelColor) }
        if let backgroundColor { background = try RGBAColor(hex: backgroundColor) }
        var lanes: [RGBAColor] = []
        if let waveformColor {
            lanes = try waveformColor.split(separator: ",").map { try RGBAColor(hex: String($0).trimmingCharacters(in: .whitespaces)) }
            waveform = lanes[0]
        }
        var factor = 1.0
        if case .factor(let f)? = amplitude { factor = f }
        var p = try WaveformPicture(width: pictureWidth, height: height ?? (awfForm ? 250 : 200), background: background, waveform: waveform,
                                    amplitudeScale: factor)
        p.laneColors = lanes.count > 1 ? lanes : []
        p.autoAmplitude = amplitude == .auto
        p.drawsAsAudiowaveform = awfForm
        if labelsOn { p.axisLabels = .init(border: border, text: label, startSeconds: start ?? 0) }
        if waveformStyle == "bars" { p.barStyle = try WaveformPicture.BarStyle(width: barWidth ?? 8, gap: barGap ?? 4, rounded: barStyle == "rounded") }
        return p
    }

    func run() throws {
        do { try check() } catch let e as ValidationError { throw usageFailure(e.message) }
        // `-i -`: standard input spooled into a private folder, named so its kind is known.
        var spool: String?
        var given = allInputs
        if let dash = given.firstIndex(of: "-"), let inputFormat {
            var t = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("segno-waveform-XXXXXX").utf8CString)
            guard let made = mkdtemp(&t) else { printError("segno: cannot make a temporary folder: \(String(cString: strerror(errno)))"); throw Exit.failures }
            spool = String(cString: made)
            given[dash] = spool! + "/stdin." + inputFormat
            do { try ConvertCommand.copy(from: 0, toFile: given[dash]) } catch { printError("segno: reading standard input: \(error)"); throw Exit.failures }
        }
        defer { if let spool { try? FileManager.default.removeItem(atPath: spool) } }
        if awfForm, let out = outputName, awfOutputFormat == "wav" || awfOutputFormat == "txt" {
            return awfOutputFormat == "wav" ? try runWAV(input: given[0], output: out, spool: spool) : try runText(input: given[0], output: out)
        }
        let (files, problems) = WaveformBatch.expand(given)
        for p in problems { printError("segno: skipped \(p)") }
        // A ValidationError thrown from run() would print the root command's usage
        // ("segno <subcommand>"); after the scan, say it like any other failure, with exit 2.
        if outputName != nil && files.count != 1 { throw usageFailure("--output takes one input; use --out-dir for several") }
        let fmt = chosenFormat ?? .json
        var resolutions: [WaveformResolution] = [.samplesPerPixel(zoom.flatMap { Int($0) } ?? 256)]
        if zoom == "auto" { resolutions = [.span(seconds: nil, width: pictureWidth)] }
        if let end { resolutions = [.span(seconds: end - (start ?? 0), width: pictureWidth)] }
        if let pixelsPerSecond { resolutions = [.pixelsPerSecond(pixelsPerSecond)] }
        if let points { resolutions = [.points(points)] }
        if let zooms { resolutions = parseZooms(zooms)!.map { .samplesPerPixel($0) } }
        if fmt == .png && !awfForm && axisLabels == .withAxisLabels && zoom == nil && pixelsPerSecond == nil && points == nil && end == nil {
            resolutions = [.span(seconds: nil, width: pictureWidth)]  // labels alone: the whole file, as -z auto
        }
        let picture: WaveformPicture
        do { picture = try makePicture() } catch { throw usageFailure("\(error)") }
        var config = WaveformConfig(path: try PathTemplate("{stem}.json"), format: fmt, bits: dataBits(given), resolutions: resolutions,
                                    split: splitChannels, duration: duration, levels: levels, picture: picture)
        if fmt == .json || fmt == .dat { config.amplitude = amplitude }
        config.standardOutput = StandardOutputSink { try FileHandle.standardOutput.write(contentsOf: $0) }
        // audiowaveform's PNG layout whenever its zoom, time or label flags are given; else the whole
        // file fits. Labels need a time per column, so alone they lay the whole file out as -z auto.
        let laidOut = awfForm || zoom != nil || pixelsPerSecond != nil || start != nil || end != nil
        if fmt == .png && (laidOut || labelsOn) { config.pictureStart = start ?? 0 }
        let destination: WaveformBatch.Destination = outputName.map { .file($0) } ?? outDir.map { .directory($0) } ?? .besideInput
        let watcher = SignalWatcher()
        var batch = WaveformBatch(config: config, destination: destination,
                                  workers: parallel ?? ProcessInfo.processInfo.activeProcessorCount, tools: ProcessContext.tools, overwrite: overwrite)
        switch readsRaw ? "raw" : inputFormat {
        case "raw"?: batch.inputKind = .raw(try rawInput())
        case "dat"?: batch.inputKind = .dat
        case "json"?: batch.inputKind = .json
        case .some: batch.inputKind = .audio
        case nil: break
        }
        batch.damaged = salvage || reference != nil ? .salvage : .fail
        batch.reference = reference
        batch.decodesMP3AsAudiowaveform = awfForm && awfInputFormat == "mp3"
        batch.keepsDataZoom = zoom == nil && zooms == nil && pixelsPerSecond == nil && points == nil && end == nil
        let outcomes = batch.run(files, stop: watcher.flag)
        var failed = 0
        for o in outcomes {
            if let e = o.error { failed += 1; printError("segno: " + AudioError.salvageWording(e, for: .flag)) }
            if let s = o.salvaged { printError("segno: warning: \(AudioError.quoted(o.input)): salvaged: \(s)") }
        }
        if let s = watcher.flag.signal { throw s == SIGTERM ? Exit.sigterm : Exit.sigint }
        if failed > 0 || files.isEmpty { throw Exit.failures }
    }
}

extension WaveformCommand {
    /// A usage error found in `run()`: printed with this command's usage line, exit 2.
    static func usage(_ message: String) -> ExitCode {
        printError("segno waveform: \(message)\nUsage: segno waveform [<options>] <inputs> ...\n  See 'segno waveform --help' for more information.")
        return Exit.usage
    }
}
