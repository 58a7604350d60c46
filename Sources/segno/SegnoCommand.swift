import ArgumentParser
import Foundation
import Logging
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

struct SegnoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "segno",
        abstract: "Declarative audio pipelines over folders of recordings.",
        discussion: """
        Exit codes: 0 all done; 1 some recordings failed (the rest done); 2 bad spec or usage; \
        65 the state database is damaged or missing (segno state rebuild); 75 another run holds the \
        state; 130/143 interrupted (state is consistent; run --watch exits 0 on SIGINT/SIGTERM).

        The stages a spec can use: segno help stages; one stage's options: segno help stage NAME.
        """,
        version: SegnoVersion.string,
        subcommands: [RunCommand.self, StatusCommand.self, RetryCommand.self, ReportCommand.self, ValidateCommand.self, StateCommand.self,
                      SpeakersCommand.self, WaveformCommand.self, ConvertCommand.self, InfoCommand.self, DuplicatesCommand.self, FindCommand.self,
                      OutputsCommand.self, RepairCommand.self, HelpStagesCommand.self, HelpStageCommand.self, HelpCommandsCommand.self]
    )
}

/// Exit codes of DESIGN.md §4, in one place.
enum Exit {
    static let failures = ExitCode(1)
    static let usage = ExitCode(2)
    /// The state database is damaged (moved aside) or missing after earlier runs (EX_DATAERR).
    static let stateLost = ExitCode(65)
    static let locked = ExitCode(75)
    static let sigint = ExitCode(130)
    static let sigterm = ExitCode(143)
}

/// Loads a spec and opens its state read-only (`status`, `outputs`): nil when nothing has run.
/// A bad spec exits 2, a damaged or missing state 65, another failure 1, each with one line.
func openStateForReading(spec path: String) throws -> (JobSpec, (any StateBackend)?) {
    let spec: JobSpec
    do { spec = try SpecLoader.load(path: path, registry: .standard(tools: ProcessContext.tools), environment: ProcessContext.environment) } catch {
        printError("segno: \(error)")
        throw Exit.usage
    }
    do { return (spec, try spec.stateLocation.openForReading()) } catch {
        printError("segno: \(error.message(spec: path))")
        if case .stateLost = error { throw Exit.stateLost }
        throw Exit.failures
    }
}

/// What every reading command (`status`, `find`, `outputs`, `report`, `duplicates`) says for a
/// spec that has never run, on standard output with exit 0: nothing is wrong, and there is
/// nothing to show yet (`--json` prints its empty answer instead).
func nothingHasRun(_ s: JobSpec, spec: String) -> String {
    "no state yet at \(AudioError.quoted(s.statePath)): nothing has run (segno run \(ReportData.shellQuoted(spec)) processes the recordings)"
}

/// Whether a recording's source (its path relative to `input.root`) is still there, as `status`
/// and `outputs` both count it: a recording whose source is gone is "gone", whatever it was.
func sourcePresence(_ s: JobSpec) -> (String) -> Bool {
    guard s.input.isObjectStore else { return { FileNameBytes.exists(s.input.root + "/" + $0) } }
    // Objects are listed (one ListObjectsV2 per 1,000); without credentials nothing counts as gone.
    let listed = try? s.makeSource(environment: ProcessContext.environment, tools: ProcessContext.tools, logger: Logger(label: "segno")).scan()
    let names = listed.map { Set($0.files.map(\.relativePath) + $0.settlingPaths) }
    return { names?.contains($0) ?? true }
}

/// "segno: unknown command "runn"; did you mean run? …" when the first word (or a word after
/// `help`) names no command; nil when they all do. ArgumentParser would say "Unexpected
/// argument", and `help nothing` would print the root help with exit 0.
func unknownCommand(_ args: ArraySlice<String>) -> String? {
    guard let first = args.first, !first.hasPrefix("-") else { return nil }
    var command: any ParsableCommand.Type = SegnoCommand.self
    var words = first == "help" ? Array(args.dropFirst()) : [first]
    while let word = words.first, !word.hasPrefix("-") {
        let subcommands = command.configuration.subcommands
        if subcommands.isEmpty { return nil }
        let names = subcommands.compactMap { $0.configuration.commandName }
        guard let next = subcommands.first(where: { $0.configuration.commandName == word }) else {
            let hint = SpecError.suggestion(for: word, among: names).map { "; did you mean \($0)?" } ?? ""
            let path = ObjectIdentifier(command) == ObjectIdentifier(SegnoCommand.self) ? "segno" : "segno \(command.configuration.commandName ?? "")"
            return "segno: unknown command \(JSONValue.string(word).serialized())\(hint) (\(path) commands: \(names.joined(separator: ", ")); segno --help says more)"
        }
        command = next
        words.removeFirst()
        if first != "help" { return nil }
    }
    return nil
}

/// Writes one line to standard error.
func printError(_ message: String) {
    var line = printable(message)
    if !line.hasSuffix("\n") { line += "\n" }
    FileHandleOutput.standardError.write(line)
}

/// Entry point: `--force` alone means `--force=all` (ArgumentParser options need a value).
@main
enum Main {
    static func main() {
        LoggingSystem.bootstrap { _ in LineLogHandler() }
        // From the raw argv, so a file name that is not UTF-8 keeps its bytes (`FileNameBytes`);
        // `CommandLine.arguments` replaces them with U+FFFD.
        var args = HelpCommandsCommand.rewrite(HelpStageCommand.rewrite((1..<Int(CommandLine.argc)).map { i in
            CommandLine.unsafeArgv[i].flatMap { FileNameBytes.string(cString: $0) } ?? CommandLine.arguments[i]
        }))
        // Only options before a `--` terminator; after it, "--force" could be a file name.
        let end = args.firstIndex(of: "--") ?? args.count
        // `--force waveform` is `--force=waveform` when the next word names a stage that can be
        // forced (and is not a file: `--force spec.yaml` forces all).
        let forcible = StageRegistry.standard(tools: ProcessContext.tools).tapKinds.union(["upload", "prune", "all"])
        var i = 0, last = end
        while i < last {
            if args[i] == "--force" {
                if i + 1 < last, forcible.contains(args[i + 1]), !FileNameBytes.exists(args[i + 1]) {
                    args[i] = "--force=" + args[i + 1]
                    args.remove(at: i + 1)
                    last -= 1
                } else {
                    args[i] = "--force=all"
                }
            }
            i += 1
        }
        if let problem = unknownCommand(args[..<last]) {
            printError(problem)
            SegnoCommand.exit(withError: Exit.usage)
        }
        do {
            var command = try SegnoCommand.parseAsRoot(args)
            defer { ProcessContext.tools.shutdown() }
            try command.run()
        } catch {
            // ArgumentParser exits with EX_USAGE (64) on bad usage; DESIGN.md §4 promises 2.
            if SegnoCommand.exitCode(for: error) == .validationFailure {
                printError(SegnoCommand.fullMessage(for: error))
                // audiowaveform's form of `waveform` fails every way with 1, as audiowaveform does.
                let awf = args.first == "waveform" && args[..<last].contains { a in
                    ["-i", "--input-filename", "--input-format"].contains { a == $0 || a.hasPrefix($0 + "=") }
                }
                SegnoCommand.exit(withError: awf ? Exit.failures : Exit.usage)
            }
            SegnoCommand.exit(withError: error)
        }
    }
}
