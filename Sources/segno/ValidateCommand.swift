import ArgumentParser
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Parse and check a spec, then print the plan (stages in order with resolved options).",
        discussion: "Exit code 2 with file:line:column and the key's path when the spec is wrong. Warnings (a level-changing stage after normalize, a transform after the last tap) go to stderr with exit 0.")

    @Argument(help: "The job spec (YAML).") var spec: String

    func run() throws {
        do {
            let s = try SpecLoader.load(path: spec, registry: .standard(tools: ProcessContext.tools), environment: ProcessContext.environment)
            if let problem = s.inputRootProblem() {
                printError("segno: \(spec): \(problem)")
                throw Exit.usage
            }
            printOut(PlanPrinter.describe(s))
            // Warnings do not fail validation (exit 0): the spec runs, it may just not do what was meant.
            for w in PlanPrinter.warnings(s) { printError(w) }
        } catch let e as ExitCode {
            throw e
        } catch {
            printError("segno: \(error)")
            throw Exit.usage
        }
    }
}
