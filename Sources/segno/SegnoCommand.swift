import ArgumentParser
import SegnoCore

@main
struct SegnoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "segno",
        abstract: "Declarative audio pipelines over folders of recordings.",
        discussion: """
        Exit codes: 0 all done; 1 some recordings failed (the rest done); 2 bad spec or usage;
        75 another run holds the state; 130/143 interrupted (state is consistent).
        """,
        version: SegnoVersion.string,
        subcommands: [InfoCommand.self, ConvertCommand.self]
    )
}

/// Exit codes of DESIGN.md §4, in one place.
enum Exit {
    static let failures = ExitCode(1)
    static let usage = ExitCode(2)
    static let locked = ExitCode(75)
    static let sigint = ExitCode(130)
    static let sigterm = ExitCode(143)
}

/// Writes one line to standard error.
func printError(_ message: String) {
    var line = message
    if !line.hasSuffix("\n") { line += "\n" }
    FileHandleOutput.standardError.write(line)
}
