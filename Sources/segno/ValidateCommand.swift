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
            try refuseMissingParts(s)
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

/// Refuses a spec that names an engine, model or helper this machine does not have (exit 2,
/// one line each), before any work: `validate` and `run` alike (decision 0066).
func refuseMissingParts(_ spec: JobSpec) throws {
    let missing = spec.missingParts()
    guard !missing.isEmpty else { return }
    for line in missing { printError("segno: " + AudioError.quoted(line)) }
    throw Exit.usage
}
