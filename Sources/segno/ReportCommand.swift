import ArgumentParser
import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write one self-contained HTML page: runs, failures, and every recording with its waveform and a player.",
        discussion: "Reads the state read-only (nothing in the state folder changes). Links to outputs are relative to the page.")

    @Argument(help: "The job spec (YAML).") var spec: String
    @Option(name: .shortAndLong, help: "The HTML file to write (default: the spec's report.path, else report.html in output.root).")
    var output: String?
    @Option(name: .customLong("run"), help: ArgumentHelp("Only this run: its history row and the recordings it touched.", valueName: "N")) var runId: Int64?
    @Flag(help: "Only recordings that failed or are partly done.") var failed = false
    @Flag(help: "Print the report's data as one JSON object instead of writing HTML.") var json = false

    func validate() throws {
        // As convert, waveform and run --report: a typo in a folder name is an error, not a new tree.
        if let output, !json, let dir = missingFolder(of: output) {
            throw ValidationError("-o \(AudioError.quoted(output)): its folder \(AudioError.quoted(dir)) does not exist; segno creates no folder for -o")
        }
    }

    func run() throws {
        // Read-only: never migrates, creates or changes a file in the state folder.
        let (s, opened) = try openStateForReading(spec: spec)
        guard let store = opened else {
            if json {
                printJSON(.object([("state", .string(s.statePath)), ("counts", .object(["recordings", "done", "failed", "partial"].map { ($0, .int(0)) })),
                                   ("runs", .array([])), ("failures", .array([])), ("recordings", .array([]))]))
            } else {
                printOut(nothingHasRun(s, spec: spec))
            }
            return
        }
        let target = output.map { URL(fileURLWithPath: $0).standardizedFileURL.path } ?? s.reportPath ?? s.outputRoot + "/report.html"
        var options = ReportData.Options(reportPath: target, runId: runId, failedOnly: failed)
        options.runLimit = runId == nil ? 30 : 1
        do {
            if json {
                printJSON(try ReportData.collect(spec: s, store: store, options: options).json(compact: false))
                return
            }
            try ReportWriter.writeHTML(spec: s, store: store, options: options)
            printOut("report: \(target)")
        } catch let e as ReportError {
            printError("segno: \(e)")
            throw Exit.usage
        } catch {
            printError("segno: \(error)")
            throw Exit.failures
        }
    }
}
