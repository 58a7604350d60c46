import ArgumentParser
import Foundation
import SegnoCore
import SegnoWaveform

struct WaveformCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "waveform",
        abstract: "Write audiowaveform-compatible peak data (or a picture) for files and folders.",
        discussion: """
        Folders are scanned recursively and processed in parallel. JSON and .dat output is byte for \
        byte what audiowaveform 1.10.3 writes (its flag names are kept where they overlap), except \
        that segno defaults to 8 bits, what peaks.js expects, and clips float input beyond ±1.
        """)

    @Argument(help: "Audio files or folders.") var inputs: [String]
    @Option(name: [.short, .customLong("output")], help: "Output file (one input only); its extension picks the format.") var output: String?
    @Option(help: "Output folder; inputs keep their relative paths (default: beside each input).") var outDir: String?
    @Option(name: [.short, .customLong("zoom")], help: "Samples per pixel, at least 2 (default: 256).") var zoom: Int?
    @Option(help: "Several zooms in one pass, e.g. 256,512,1024 (one file per zoom: NAME-256.json).") var zooms: String?
    @Option(help: "Pixels per second instead of --zoom.") var pixelsPerSecond: Int?
    @Option(help: "About this many points over the whole file instead of --zoom.") var points: Int?
    @Option(name: [.short, .customLong("bits")], help: "8 or 16.") var bits: Int = 8
    @Option(help: "json, dat, png, svg or levels (default: from --output, else json).") var format: String?
    @Flag(help: "One min/max pair per channel instead of the channels mixed.") var splitChannels = false
    @Flag(help: "Add \"duration\" (seconds) to JSON output.") var duration = false
    @Option(help: "Picture width in pixels (png/svg).") var width: Int = 1000
    @Option(help: "Picture height in pixels (png/svg).") var height: Int = 200
    @Option(help: "Number of levels for --format levels.") var levels: Int = 100
    @Option(help: "Worker count (default: active processors).") var parallel: Int?
    @Flag(help: "Replace existing outputs even when they are not waveform data of this format.") var overwrite = false

    func validate() throws {
        if output != nil && outDir != nil { throw ValidationError("give --output or --out-dir, not both") }
        let chosen = [zoom != nil, zooms != nil, pixelsPerSecond != nil, points != nil].filter { $0 }.count
        if chosen > 1 { throw ValidationError("give only one of --zoom, --zooms, --pixels-per-second, --points") }
        if bits != 8 && bits != 16 { throw ValidationError("--bits must be 8 or 16") }
        if let format, WaveformConfig.Format(rawValue: format) == nil { throw ValidationError("--format must be json, dat, png, svg or levels") }
        if let z = zoom, z < 2 { throw ValidationError("--zoom must be at least 2") }
        if let p = pixelsPerSecond, p < 1 { throw ValidationError("--pixels-per-second must be at least 1") }
        if let p = points, p < 1 { throw ValidationError("--points must be at least 1") }
        if let p = parallel, !JobSpec.parallelRange.contains(p) { throw ValidationError("--parallel must be 1…256") }
        if !WaveformConfig.levelsRange.contains(levels) { throw ValidationError("--levels must be 1…1400") }
        if let zooms, parseZooms(zooms) == nil { throw ValidationError("--zooms takes whole numbers ≥ 2 separated by commas") }
        if let output {
            // The output's format follows a known extension or --format; never audio under an audio name.
            let ext = (output as NSString).pathExtension.lowercased()
            if OutputFormat(extensionOf: output) != nil || ["m4a", "mp4", "aac", "3gp", "amr", "webm", "mka"].contains(ext) {
                throw ValidationError("--output \(output) has an audio extension; waveform data goes in .json, .dat, .png or .svg")
            }
            let implied = WaveformConfig.format(forPath: output)
            if let implied, let format, format != implied.rawValue, !(format == "levels" && implied == .json) {
                throw ValidationError("--output \(output) names a .\(ext) file but --format is \(format)")
            }
            if implied == nil && format == nil {
                throw ValidationError("cannot tell the format from --output \(output); name it .json, .dat, .png or .svg, or give --format")
            }
        }
    }

    func parseZooms(_ text: String) -> [Int]? {
        let z = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !z.isEmpty, z.allSatisfy({ ($0 ?? 0) >= 2 }) else { return nil }
        return z.map { $0! }
    }

    func run() throws {
        let (files, problems) = WaveformBatch.expand(inputs)
        for p in problems { printError("segno: skipped \(p)") }
        // A ValidationError thrown from run() would print the root command's usage
        // ("segno <subcommand>"); after the scan, say it like any other failure, with exit 2.
        if output != nil && files.count != 1 { throw Self.usage("--output takes one input; use --out-dir for several") }
        var fmt = format.flatMap(WaveformConfig.Format.init(rawValue:))
        if fmt == nil, let output { fmt = WaveformConfig.format(forPath: output) }
        var resolutions: [WaveformResolution] = [.samplesPerPixel(zoom ?? 256)]
        if let pixelsPerSecond { resolutions = [.pixelsPerSecond(pixelsPerSecond)] }
        if let points { resolutions = [.points(points)] }
        if let zooms { resolutions = parseZooms(zooms)!.map { .samplesPerPixel($0) } }
        let picture: WaveformPicture
        do { picture = try WaveformPicture(width: width, height: height) } catch { throw Self.usage("\(error)") }
        let config = WaveformConfig(path: try PathTemplate("{stem}.json"), format: fmt ?? .json, bits: bits, resolutions: resolutions,
                                    split: splitChannels, duration: duration, levels: levels, picture: picture)
        let destination: WaveformBatch.Destination = output.map { .file($0) } ?? outDir.map { .directory($0) } ?? .besideInput
        let watcher = SignalWatcher()
        let batch = WaveformBatch(config: config, destination: destination,
                                  workers: parallel ?? ProcessInfo.processInfo.activeProcessorCount, overwrite: overwrite)
        let outcomes = batch.run(files, stop: watcher.flag)
        var failed = 0
        for o in outcomes {
            if let e = o.error { failed += 1; printError("segno: \(e)") }
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
