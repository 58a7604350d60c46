import ArgumentParser
import SegnoCore
import SegnoKit

/// `segno help stages`: every stage with its kind and summary, from the stages' declarations.
/// `segno help …` is ArgumentParser's; `Main` turns `help stages` into this hidden command.
struct HelpStagesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "help-stages", abstract: "List the stages a spec can use.", shouldDisplay: false)

    @Flag(help: "Print docs/reference/stages/README.md (make docs) instead.") var markdown = false

    func run() throws {
        let registry = StageRegistry.standard(tools: ProcessContext.tools)
        FileHandleOutput.standardOutput.write(markdown ? registry.stagesMarkdown : registry.stagesHelpText)
    }
}

/// `segno help stage NAME`, as `sox --help-effect NAME` and `ffmpeg -h filter=NAME`: the stage's
/// options with type, unit, default, range and help, an example and its capabilities.
struct HelpStageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "help-stage", abstract: "Describe one stage: its options, an example, its capabilities.", shouldDisplay: false)

    @Argument(help: "The stage's key in a spec, e.g. lowpass.") var name: String
    @Flag(help: "Print its reference page (docs/reference/stages/NAME.md, make docs) instead.") var markdown = false

    func run() throws {
        let registry = StageRegistry.standard(tools: ProcessContext.tools)
        guard let declaration = registry.declaration(name) else {
            printError("segno: \(registry.unknownStageMessage(name))")
            throw Exit.usage
        }
        FileHandleOutput.standardOutput.write(markdown ? declaration.markdown : declaration.helpText)
    }

    /// `help stage NAME` and `help stages` as the hidden commands that answer them; other
    /// arguments unchanged (`help run` stays ArgumentParser's).
    static func rewrite(_ args: [String]) -> [String] {
        guard args.count >= 2, args[0] == "help", ["stage", "stages"].contains(args[1]) else { return args }
        return ["help-" + args[1]] + args.dropFirst(2)
    }
}
