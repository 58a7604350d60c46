import ArgumentParser
import Foundation
import Logging
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

struct StateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state",
        abstract: "Look after the state database.",
        subcommands: [RebuildCommand.self])

    struct RebuildCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rebuild",
            abstract: "Adopt the outputs and uploads already in place into a new (or incomplete) state database.",
            discussion: """
            After the state database was lost or damaged (a run exits 65 and says so): each recording \
            the input holds and the store does not know gets the taps whose outputs exist and the \
            uploads whose objects match (segno-sha256 and segno-recipe) recorded as done, with the \
            current spec. The next run does only what is missing. Speaker turns are not adopted \
            (the voices they were matched with are kept in the state, not in the files): the next \
            run finds them again, with the names of the voices enrolled by then.
            """)

        @Argument(help: "The job spec (YAML).") var spec: String

        func run() throws {
            let s: JobSpec
            do { s = try SpecLoader.load(path: spec, registry: .standard(tools: ProcessContext.tools), environment: ProcessContext.environment) } catch {
                printError("segno: \(error)")
                throw Exit.usage
            }
            let summary: StateRebuild.Summary
            do { summary = try StateRebuild(job: Job(spec: s), logger: Logger.segno(), environment: ProcessContext.environment, tools: ProcessContext.tools).run() } catch {
                printError("segno: \(error)")
                if case .locked = error { throw Exit.locked }
                throw Exit.failures
            }
            for p in summary.problems { printError("segno: \(p)") }
            printOut("state rebuilt: \(summary.adoptedRecordings) of \(summary.recordings) recordings adopted (\(summary.adoptedOutputs) outputs, \(summary.adoptedUploads) uploads); the next run does the rest")
        }
    }
}
