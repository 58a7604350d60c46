import ArgumentParser
import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

/// `segno repair`: rebuilds the lost index of MP4/M4A/MOV/3GP recordings (a recorder that died
/// before writing `moov`) into new, playable files, sets the sizes of a PCM file cut short to what
/// it holds, and copies the whole frames of a damaged ADTS AAC or Ogg stream or an MP3 behind a
/// broken ID3v2 tag; the damaged files are only read.
struct RepairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repair",
        abstract: "Rebuild the lost index of damaged MP4/M4A/MOV/3GP recordings, set the sizes of a WAV/RF64/AIFF/CAF cut short to what it holds, or copy the whole frames of damaged ADTS AAC, Ogg or MP3 behind a broken tag, into new playable files (same codec, no re-encoding).")

    @Argument(help: "Damaged recordings (never changed).") var damaged: [String]
    @Option(help: "A healthy recording from the same recorder: its codec settings rebuild the index (without it, AAC-LC at every rate, mono and stereo, is tried, and the rate its frames' bitrate names is chosen).") var reference: String?
    @Option(name: [.short, .customLong("output")], help: "Output file (one damaged file only).") var output: String?
    @Option(help: "Folder for the repaired files (default: beside each, named STEM.repaired.EXT).") var outDir: String?
    @Flag(help: "Replace an output file even when segno did not write it.") var overwrite = false

    func validate() throws {
        if output != nil && outDir != nil { throw ValidationError("give -o OUT or --out-dir DIR, not both") }
        if output != nil && damaged.count > 1 { throw ValidationError("-o names one output; use --out-dir DIR for several damaged files") }
    }

    func run() throws {
        defer { ProcessContext.tools.shutdown() }
        if let reference {
            // Refused before any file is tried (a FIFO would wait for a writer), whatever the damaged files are.
            do { try StreamRepair.refuseSpecialFile(reference) } catch {
                printError("segno: \(error)")
                throw Exit.failures
            }
        }
        var failed = 0
        for path in damaged {
            let name = (path as NSString).lastPathComponent
            let ext = (name as NSString).pathExtension
            let repairedName = (name as NSString).deletingPathExtension + ".repaired" + (ext.isEmpty ? ".m4a" : "." + ext)
            let target = output ?? outDir.map { ($0 as NSString).appendingPathComponent(repairedName) }
                ?? ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent(repairedName)
            do {
                if let copied = try StreamRepair.repair(input: path, output: target, overwrite: overwrite) {
                    printOut(copied.summary(input: path) + " → " + AudioError.quoted(target))
                    continue
                }
                let outcome = try MP4Repair.repair(input: path, reference: reference, output: target, overwrite: overwrite, helpers: ProcessContext.tools.helpers)
                printOut(outcome.summary(input: path) + " → " + AudioError.quoted(target))
                for w in outcome.warnings { printError("segno: warning: " + AudioError.quoted(name + ": " + w)) }
            } catch {
                failed += 1
                printError("segno: \(error)")
            }
        }
        if failed > 0 { throw Exit.failures }
    }
}
