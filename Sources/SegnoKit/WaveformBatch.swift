import Dispatch
import Foundation
import SegnoAudio
import SegnoCore
import SegnoSources
import SegnoSpeech
import SegnoState
import SegnoWaveform
import Synchronization

/// `segno waveform IN...`: the waveform tap over files and folders (recursively, in parallel),
/// without a spec or state store.
public struct WaveformBatch: Sendable {
    /// Where each output goes.
    public enum Destination: Sendable {
        /// One output file (one input only).
        case file(String)
        /// A folder mirroring the inputs' relative paths.
        case directory(String)
        /// Beside each input, extension replaced.
        case besideInput
    }
    public let config: WaveformConfig
    public let destination: Destination
    public let workers: Int
    /// Replace existing files that are not waveform data of the kind being written (`--overwrite`).
    public let overwrite: Bool
    /// How inputs are read: by their extension (`.dat`/`.json` are waveform data, anything else
    /// audio), or as one kind whatever the name (audiowaveform's `--input-format`).
    public var inputKind: InputKind = .byExtension
    public enum InputKind: Sendable { case byExtension, audio, dat, json, raw(SndFileDecoder.RawFormat) }
    /// Waveform data inputs keep their own zoom (no zoom was asked for: audiowaveform converts
    /// .dat ↔ .json without resampling); false rescales them to `config.resolutions[0]`.
    public var keepsDataZoom = false
    /// `--salvage`: damaged inputs are read for what they hold.
    public var damaged: DamagedPolicy = .fail
    /// `--reference`: a healthy recording from the same recorder, for a damaged MP4 without its index.
    public var reference: String?
    /// Inputs are MP3 decoded as audiowaveform decodes it (`AudiowaveformMP3Decoder`: libmad in
    /// the segno-decode helper), for the audiowaveform form; false uses segno's MP3 decoder.
    public var decodesMP3AsAudiowaveform = false

    /// The helper pools and `PATH` inputs are decoded with; made and shut down by the caller.
    public let tools: AudioTools

    public init(config: WaveformConfig, destination: Destination, workers: Int, tools: AudioTools, overwrite: Bool = false) {
        self.config = config
        self.tools = tools
        self.destination = destination
        self.workers = max(1, workers)
        self.overwrite = overwrite
    }

    /// Refuses to write over the input itself (same file, however spelt), over an existing file
    /// segno did not write (no `user.segno` mark: a sidecar, an audio file, audiowaveform's own
    /// output, notes) unless `overwrite`, and into a folder that does not exist (segno creates
    /// none for a one-off output, as SoX and ffmpeg). Called for each output before anything is written.
    package func checkTarget(_ out: String, input: String) throws(AudioError) {
        if out == "-" { return }
        if OutputFile.sameFile(out, input) {
            throw .refused(path: out, detail: "is the input file; segno never writes over its input")
        }
        if case .file = destination {
            let dir = (out as NSString).deletingLastPathComponent
            if !dir.isEmpty && !FileNameBytes.isDirectory(dir) {
                throw .refused(path: out, detail: "its folder \(AudioError.quoted(dir)) does not exist; segno creates no folder for -o")
            }
        }
        guard !overwrite, OutputFile.exists(out), !OutputFile.isMarked(out) else { return }
        let fmt = config.format.rawValue
        let what = Self.holdsWaveformData(out, format: config.format) ? "\(fmt) waveform data segno did not write" : "not \(fmt) waveform data (a file segno did not write)"
        throw .refused(path: out, detail: "exists and is \(what); segno does not overwrite it (--overwrite replaces it)")
    }

    /// Where `input` (relative path `relative`) writes its output.
    package func outputPath(_ input: String, relative: String) -> String {
        let stemRel = (relative as NSString).deletingPathExtension
        switch destination {
        case .file(let f): return f == "-" ? f : URL(fileURLWithPath: f).standardizedFileURL.path
        case .directory(let d): return URL(fileURLWithPath: d).standardizedFileURL.path + "/" + stemRel + "." + outputExtension
        case .besideInput: return (input as NSString).deletingPathExtension + "." + outputExtension
        }
    }

    /// Inputs whose output would land on an earlier input's (`b.wav` and `b.mp3` both writing
    /// `b.json`): index → the message naming both. The first in the given order keeps the name,
    /// as `segno run` does.
    package func collisions(_ files: [(String, String)]) -> [Int: String] {
        var owner: [String: String] = [:]
        var out: [Int: String] = [:]
        for (i, f) in files.enumerated() {
            let path = outputPath(f.0, relative: f.1)
            if path == "-" { continue }
            if let first = owner[path] {
                out[i] = "\(AudioError.quoted(f.0)): would write \(AudioError.quoted(path)) like \(AudioError.quoted(first)); not written (give it its own name: segno waveform \(AudioError.quoted(ReportData.shellQuoted(f.0))) -o OTHER.\(outputExtension))"
            } else {
                owner[path] = f.0
            }
        }
        return out
    }

    /// True when the file at `path` is what segno writes for `format` (so replacing it loses nothing
    /// segno did not make): audiowaveform JSON or .dat, a levels file, a PNG, an SVG.
    static package func holdsWaveformData(_ path: String, format: WaveformConfig.Format) -> Bool {
        guard let bytes = FileManager.default.contents(atPath: path) else { return false }
        switch format {
        case .json: return (try? WaveformJSON.decode(Array(bytes))) != nil
        case .dat: return (try? WaveformDat.decode(Array(bytes))) != nil
        case .png: return bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        case .svg: return String(decoding: bytes.prefix(512), as: UTF8.self).contains("<svg")
        case .levels:
            let object = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any]
            return object?["levels"] is [Any] && object?["encoded"] is String
        }
    }

    /// One input's outcome.
    public struct Outcome: Sendable {
        public var input: String
        public var outputs: [String]
        public var error: String?
        /// One line saying what salvage recovered (`damaged: .salvage` on a damaged input).
        public var salvaged: String? = nil
    }

    /// Expands folders (recursively, audio extensions, hidden files skipped) and keeps files as given.
    /// Returns (absolute input, path relative to its root) pairs in a stable order, plus problems.
    public static func expand(_ inputs: [String]) -> (files: [(String, String)], problems: [String]) {
        var files: [(String, String)] = []
        var problems: [String] = []
        for raw in inputs {
            let abs = URL(fileURLWithPath: raw).standardizedFileURL.path
            if FileNameBytes.isDirectory(abs) {
                let input = JobSpec.Input(root: abs, include: JobSpec.defaultInclude.map { try! Glob($0) },
                                          exclude: JobSpec.defaultExclude.map { try! Glob($0) }, settle: 0,
                                          followLinks: false, verify: .metadata)
                do {
                    let scan = try InputScanner(input: input, skipDirectories: []).scan()
                    files += scan.files.map { ($0.absolutePath, $0.relativePath) }
                    problems += scan.problems.map(\.description)
                } catch { problems.append("\(AudioError.quoted(raw)): \(error)") }
            } else {
                files.append((abs, (abs as NSString).lastPathComponent))
            }
        }
        return (files, problems)
    }

    /// The extension outputs get.
    package var outputExtension: String {
        switch config.format {
        case .levels: return "levels.json"
        default: return config.format.rawValue
        }
    }

    /// Runs every input on `workers` threads; outcomes come back in input order.
    public func run(_ files: [(String, String)], stop: StopFlag) -> [Outcome] {
        let clashes = collisions(files)
        let results = Mutex<[Int: Outcome]>([:])
        WorkerPool.run(count: files.count, workers: workers, shouldStop: { stop.isStopped }) { i in
            if let clash = clashes[i] {
                results.withLock { $0[i] = Outcome(input: files[i].0, outputs: [], error: clash) }
                return
            }
            let o = self.one(files[i].0, relative: files[i].1, stop: stop)
            results.withLock { $0[i] = o }
        }
        let r = results.withLock { $0 }
        return files.indices.compactMap { r[$0] }
    }

    /// An existing audiowaveform `.dat`/`.json` file in: converts format and bits, and rescales
    /// to a coarser zoom when it is a whole multiple (else says to recompute from the audio).
    package func convertData(_ input: String, to out: String) -> Outcome {
        do {
            guard let bytes = FileManager.default.contents(atPath: input) else { throw AudioError.unreadable(path: input, reason: "cannot read") }
            var data: WaveformData
            do {
                let dat: Bool
                switch inputKind {
                case .dat: dat = true
                case .byExtension: dat = input.lowercased().hasSuffix(".dat")
                default: dat = false
                }
                data = dat ? try WaveformDat.decode(Array(bytes)) : try WaveformJSON.decode(Array(bytes))
            } catch { throw AudioError.unrecognised(path: input, looksLike: nil, detail: "not audiowaveform data: \(error)") }
            if config.resolutions.count != 1 { throw AudioError.unsupportedOutput(path: input, detail: "--zooms needs audio input") }
            let spp = keepsDataZoom ? data.samplesPerPixel : try config.resolutions[0].samplesPerPixel(sampleRate: data.sampleRate, frames: data.length * data.samplesPerPixel)
            if spp != data.samplesPerPixel {
                do { data = try data.rescaled(toSamplesPerPixel: spp) } catch {
                    throw AudioError.unsupportedOutput(path: input, detail: "\(error)")
                }
            }
            if config.format == .json || config.format == .dat { data = try config.finalData(data) }
            else if data.bits != config.bits { data = try data.converted(toBits: config.bits) }
            let bytesOut: [UInt8]
            switch config.format {
            case .json: bytesOut = WaveformJSON.encode(data)
            case .dat: bytesOut = WaveformDat.encode(data)
            case .png: bytesOut = config.png(data)
            case .svg: bytesOut = Array(config.picture.svg(data).utf8)
            case .levels: throw AudioError.unsupportedOutput(path: input, detail: "levels need audio input")
            }
            try checkTarget(out, input: input)
            try WaveformTap.write(bytesOut, to: out, standardOutput: config.standardOutput)
            return Outcome(input: input, outputs: [out], error: nil)
        } catch {
            return Outcome(input: input, outputs: [], error: "\(error)")
        }
    }

    /// `first` for the first pass, a fresh `open()` for each later one.
    static package func passes(first: any AudioDecoder, then open: @escaping () throws -> any AudioDecoder) -> () throws -> any AudioDecoder {
        var pending: (any AudioDecoder)? = first
        return {
            if let d = pending { pending = nil; return d }
            return try open()
        }
    }

    package func one(_ input: String, relative: String, stop: StopFlag) -> Outcome {
        let out = outputPath(input, relative: relative)
        let ext = (input as NSString).pathExtension.lowercased()
        switch inputKind {
        case .dat, .json: return convertData(input, to: out)
        case .byExtension where ext == "dat" || ext == "json": return convertData(input, to: out)
        default: break
        }
        do {
            try checkTarget(out, input: input)
            let source = FileSource(path: input, tools: tools, damaged: damaged, reference: reference)
            var raw: SndFileDecoder.RawFormat?
            if case .raw(let r) = inputKind { raw = r }
            let open: () throws -> any AudioDecoder = {
                if let raw { return try SndFileDecoder(path: source.file.absolutePath, raw: raw) }
                if decodesMP3AsAudiowaveform { return try AudiowaveformMP3Decoder.open(path: source.file.absolutePath, tools: tools) }
                return try source.open(source.file)
            }
            let decoder = try open()
            // (NSString's deletingLastPathComponent traps on "-" in swift-corelibs-foundation.)
            let root = out == "-" ? FileManager.default.currentDirectoryPath : (out as NSString).deletingLastPathComponent
            var context = RecordingContext(sourcePath: input, relativePath: relative, modified: Date(), source: decoder.info,
                                           outputRoot: root)
            context.source = decoder.info
            var paths = [out]
            if config.resolutions.count > 1 {
                paths = config.resolutions.map { r in
                    let base = (out as NSString).deletingPathExtension
                    return "\(base)-\(r.zoomName).\((out as NSString).pathExtension)"
                }
                for p in paths { try checkTarget(p, input: input) }
            }
            let produced = try ChainRecipe(items: [.tap(config, paths: paths)]).run(open: Self.passes(first: decoder, then: open),
                                                                                   context: context, isCancelled: { stop.isStopped }, progress: { _ in })
            return Outcome(input: input, outputs: produced.flatMap { $0.map(\.path) }, error: nil,
                           salvaged: decoder.salvage.map { $0.summary(sampleRate: decoder.info.sampleRate) })
        } catch {
            return Outcome(input: input, outputs: [], error: "\(error)")
        }
    }
}
