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
        discussion: "Frames are exact: what segno's decoder yields (frame headers are counted where the container only estimates, and a file from which no audio decodes is an error). Each file is reported on its own line; a bad file gets an error line and the rest go on. Exit code 1 if any file failed.")

    @Flag(name: .long, help: "One JSON object per line per input, in input order.")
    var json = false

    @Flag(name: .long, help: "Read headers only: faster, but MP3 without a Xing/Info/VBRI header, ADTS, AMR, ALAC in CAF and WebM/Matroska get an estimated length (\"estimated\": true in --json), and a file whose audio does not decode is not noticed.")
    var fast = false

    @Flag(name: .long, help: "List the decoders available: libsndfile's version, whether ffmpeg (needed for AAC in .m4a/.3gp/.caf, ADTS, AMR, WebM/Matroska) is on PATH, and the segno-decode helper (needed for fingerprints).")
    var formats = false

    @Flag(name: .long, help: "Print each file's Chromaprint fingerprint like `fpcalc -raw` (DURATION= and FINGERPRINT= as unsigned 32-bit items); the whole file unless --length. Made by the segno-decode helper, which must be installed.")
    var fingerprint = false

    @Option(name: .long, help: "With --fingerprint: seconds fingerprinted from the start (fpcalc's -length; default the whole file).")
    var length: Double?

    @Option(name: .long, help: "With --fingerprint: Chromaprint algorithm, fpcalc's numbering 1…5.")
    var algorithm: Int = 2

    @Argument(help: "Audio files.")
    var files: [String] = []

    func validate() throws {
        if files.isEmpty && !formats { throw ValidationError("give at least one audio file, or --formats") }
        if !fingerprint && (length != nil || algorithm != 2) { throw ValidationError("--length and --algorithm go with --fingerprint") }
        if let l = length, !(l > 0) { throw ValidationError("--length must be above 0 seconds") }
        if !Chromaprinter.algorithms.contains(algorithm) { throw ValidationError("--algorithm must be 1…5") }
    }

    func run() throws {
        if formats {
            DecoderFactory.availableDecoders(searchPath: ProcessInfo.processInfo.environment["PATH"]).forEach(printOut)
            SpeechEngineList.lines().forEach(printOut)
        }
        var failed = false
        if fingerprint {
            for (n, path) in files.enumerated() {
                do {
                    let fp = try Chromaprinter.fingerprint(path: path, algorithm: algorithm, length: length)
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
        for path in files {
            let inspection = FileInfo.inspect(path: path, fast: fast)
            let r = inspection.map(\.info)
            let estimated = (try? inspection.get().estimated) ?? false
            if case .failure = r { failed = true }
            let metadata = try? inspection.get().metadata
            if json {
                printOut(FileInfo.json(path: path, r, estimated: estimated, metadata: metadata))
            } else if case .failure = r {
                printError("segno: " + FileInfo.text(path: path, r))
            } else {
                printOut(FileInfo.text(path: path, r, estimated: estimated, metadata: metadata))
                for w in metadata?.warnings ?? [] { printError("segno: warning: \(AudioError.quoted(path)): \(w)") }
            }
        }
        if failed { throw Exit.failures }
    }
}
