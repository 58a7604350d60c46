import ArgumentParser
import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Print format, rate, channels, frames and duration of audio files.",
        discussion: "Frames are exact: each file is decoded to the end and the frames segno's decoder yields are reported, whatever the header claims; a file whose decode stops early (a FLAC that loses sync, an MP3 cut short of its Xing header's length) is an error that gives the frames decoded before it, and a file from which no audio decodes is an error. --fast reads the header only and says so. Each file is reported on its own line; a bad file gets an error line and the rest go on. Exit code 1 if any file failed.")

    @Flag(name: .long, help: "One JSON object per line per input, in input order.")
    var json = false

    @Flag(name: .long, help: "Read headers only (\"frames_from\": \"header\" in --json, \"from the header, not decoded\" in text): faster, but MP3 without a Xing/Info/VBRI header, ADTS, AMR, ALAC in CAF and WebM/Matroska get an estimated length (\"estimated\": true in --json), and a file whose audio does not decode is not noticed.")
    var fast = false

    @Flag(name: .long, help: "List the decoders available: libsndfile's version, whether ffmpeg (needed for AAC in .m4a/.3gp/.caf, ADTS, AMR, WebM/Matroska) is on PATH, and the segno-decode helper (needed for fingerprints).")
    var formats = false

    @Flag(name: .long, help: "Print each file's Chromaprint fingerprint like `fpcalc -raw` (DURATION= and FINGERPRINT= as unsigned 32-bit items); the whole file unless --length. Made by the segno-decode helper, which must be installed.")
    var fingerprint = false

    @Option(name: .long, help: "With --fingerprint: seconds fingerprinted from the start (fpcalc's -length; default the whole file).")
    var length: Double?

    @Option(name: .long, help: "With --fingerprint: Chromaprint algorithm, fpcalc's numbering 1…5.")
    var algorithm: Int = 2

    @Argument(help: "Audio files, or folders: a folder lists its recordings (recursively, hidden files skipped), one line each.")
    var files: [String] = []

    func validate() throws {
        if files.isEmpty && !formats { throw ValidationError("give at least one audio file, or --formats") }
        if !fingerprint && (length != nil || algorithm != 2) { throw ValidationError("--length and --algorithm go with --fingerprint") }
        if let l = length, !(l > 0) { throw ValidationError("--length must be above 0 seconds") }
        if !Chromaprinter.algorithms.contains(algorithm) { throw ValidationError("--algorithm must be 1…5") }
    }

    func run() throws {
        if formats {
            DecoderFactory.availableDecoders(tools: ProcessContext.tools).forEach(printOut)
            SpeechEngineList.lines().forEach(printOut)
        }
        var failed = false
        if fingerprint {
            for (n, path) in files.enumerated() {
                do {
                    let fp = try Chromaprinter.fingerprint(path: path, tools: ProcessContext.tools, algorithm: algorithm, length: length)
                    if files.count > 1 { printOut((n > 0 ? "\n" : "") + "FILE=\(path)") }
                    printOut("DURATION=\(Int(fp.duration))")
                    printOut("FINGERPRINT=" + fp.items.map(String.init).joined(separator: ","))
                } catch {
                    failed = true
                    printError("segno: \(AudioError.quoted(path)): \(error)")
                }
            }
            if failed { throw Exit.failures }
            return
        }
        for (path, problem) in Self.expand(files) {
            if let p = problem {
                failed = true
                if json { printJSONLine(FileInfo.json(path: path, .failure(p))) } else { printError("segno: \(p)") }
                continue
            }
            let inspection = FileInfo.inspect(path: path, tools: ProcessContext.tools, fast: fast)
            let (line, bad) = FileInfo.text(path: path, inspection: inspection)
            if bad { failed = true }
            if json {
                printJSONLine(FileInfo.json(path: path, inspection: inspection))
            } else if bad {
                printError("segno: " + line)
            } else {
                printOut(line)
            }
            if !json, let x = try? inspection.get() {
                for w in x.metadata.warnings + x.warnings { printError("segno: warning: \(AudioError.quoted(path)): \(w)") }
            }
        }
        if failed { throw Exit.failures }
    }

    /// The files to report, in argument order: a file as given, a folder replaced by its
    /// recordings (recursively, the audio extensions a spec's folder input takes by default,
    /// hidden files skipped, sorted by path). A folder that cannot be read or holds none is an
    /// entry with its problem, in its place.
    static func expand(_ arguments: [String]) -> [(path: String, problem: AudioError?)] {
        var out: [(path: String, problem: AudioError?)] = []
        for arg in arguments {
            var st = stat()
            guard stat(arg, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else { out.append((arg, nil)); continue }
            let found = WaveformBatch.expand([arg])
            let base = arg.hasSuffix("/") && arg.count > 1 ? String(arg.dropLast()) : arg
            out += found.files.map { (base + "/" + $0.1, nil) }
            out += found.problems.map { (arg, AudioError.refused(path: arg, detail: "cannot take " + $0)) }
            if found.files.isEmpty && found.problems.isEmpty {
                out.append((arg, AudioError.refused(path: arg, detail: "a folder with no recordings in it")))
            }
        }
        return out
    }
}
