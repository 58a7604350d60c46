import ArgumentParser
import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSpeech
import SegnoState

struct SpeakersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "speakers",
        abstract: "Name voices: enroll, list and forget the voice prints the speakers tap names turns with.",
        discussion: """
        A voice print is kept in the spec's state (SQLite or PostgreSQL). The next run names every \
        speaker whose voice matches a print, in the recordings it processes and, without decoding \
        them again, in those processed before (decision 0075).
        """,
        subcommands: [Enroll.self, List.self, Forget.self])

    struct Enroll: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "enroll",
            abstract: "Make a voice print from recordings of one voice and keep it under NAME.",
            discussion: """
            Each file is decoded, its speech found by the voice activity detector of the spec's speakers \
            stage (silero unless the spec says otherwise) and cut into 1.5 s windows; the print is the \
            L2-normed mean of the windows' GE2E embeddings; six more prints come from the same speech mixed \
            with pink and brown noise at 20, 10 and 5 dB SNR, so the name holds in noisy recordings. A \
            print enrolled again under the same name is replaced. Names: 1-64 characters, letters, digits, spaces and . - _ ' only, beginning with a \
            letter or digit; speaker-N is kept for voices without a name. A file with no speech, or one \
            that cannot be decoded, is an error naming it, and nothing is enrolled.
            """)

        @Argument(help: "The job spec (YAML).") var spec: String
        @Argument(help: "The voice's name.") var name: String
        @Argument(help: "Recordings of that voice alone (one or more; 10 s of speech or more is best).") var files: [String]

        func validate() throws {
            if files.isEmpty { throw ValidationError("give at least one recording of the voice") }
        }

        func run() throws {
            let s = try loadSpec(spec)
            if let why = VoicePrint.check(name) {
                printError("segno: \(EnrollError.badName(name, why: why))")
                throw Exit.usage
            }
            for f in files where !FileManager.default.isReadableFile(atPath: f) {
                printError("segno: \(EnrollError.unreadable(path: f, detail: FileManager.default.fileExists(atPath: f) ? "cannot be read (permissions)" : "no such file"))")
                throw Exit.failures
            }
            let pool = SpeakerHelperPool()
            defer { pool.shutdown() }
            let enroller = VoiceEnroller(stages: s.stages.map(\.config), helpers: pool)
            let tools = ProcessContext.tools
            let print: VoicePrint
            do {
                print = try enroller.enroll(name: name, files: files.map { f -> (path: String, open: () throws -> any AudioDecoder) in (f, { try DecoderFactory.open(path: f, tools: tools) }) })
            } catch {
                printError("segno: \(error)")
                throw Exit.failures
            }
            try withVoiceStore(s, spec: spec) { try $0.enroll(print) }
            printOut("enrolled \(name): \(print.files) file\(print.files == 1 ? "" : "s"), \(String(format: "%.1f", print.seconds)) s of speech; the next run names this voice in every recording")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the voices enrolled: name, files and seconds of speech, date (one line each, in columns).")

        @Argument(help: "The job spec (YAML).") var spec: String
        @Flag(help: "One JSON object per line: {\"name\",\"files\",\"seconds\",\"enrolled\"}.") var json = false

        func run() throws {
            let (s, store) = try openStateForReading(spec: spec)
            guard let store else {
                if !json { printOut(nothingHasRun(s, spec: spec)) }
                return
            }
            defer { store.close() }
            let prints: [VoicePrint]
            do { prints = try (store as? any VoiceStore)?.voicePrints() ?? [] } catch {
                printError("segno: state database: \(error)")
                throw Exit.failures
            }
            let date = ISO8601DateFormatter()
            let width = prints.map(\.name.count).max() ?? 0
            for p in prints {
                let when = date.string(from: Date(timeIntervalSince1970: p.enrolledAt))
                if json {
                    printJSON(.object([("name", .string(p.name)), ("files", .int(p.files)),
                                       ("seconds", .rounded(p.seconds, places: 1)), ("enrolled", .string(when))]))
                } else {
                    let name = p.name + String(repeating: " ", count: width - p.name.count)
                    printOut("\(name)  \(p.files) file\(p.files == 1 ? "" : "s")  \(String(format: "%.1f", p.seconds)) s  \(when)")
                }
            }
            if prints.isEmpty && !json { printOut("no voices enrolled (segno speakers enroll SPEC NAME FILE… enrolls one)") }
        }
    }

    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "forget",
            abstract: "Forget the voice enrolled under NAME; the next run takes its name out of every recording.")

        @Argument(help: "The job spec (YAML).") var spec: String
        @Argument(help: "The voice's name, as `speakers list` shows it.") var name: String

        func run() throws {
            let s = try loadSpec(spec)
            var known: [String] = []
            let forgotten = try withVoiceStore(s, spec: spec) { store -> Bool in
                if try store.forgetVoice(name) { return true }
                known = try store.voicePrints().map(\.name)
                return false
            }
            guard forgotten else {
                let list = known.isEmpty ? "none is enrolled" : "enrolled: " + known.joined(separator: ", ")
                printError("segno: no voice named \(JSONValue.string(name).serialized()) is enrolled (\(list))")
                throw Exit.failures
            }
            printOut("forgot \(name); the next run takes the name out of every recording")
        }
    }
}

/// Loads a spec (a bad one exits 2 with its line).
private func loadSpec(_ path: String) throws -> JobSpec {
    do { return try SpecLoader.load(path: path, registry: .standard(tools: ProcessContext.tools), environment: ProcessContext.environment) } catch {
        printError("segno: \(error)")
        throw Exit.usage
    }
}

/// Takes the spec's state as a run does (another run holding it exits 75) and hands `body` its voices.
private func withVoiceStore<T>(_ s: JobSpec, spec: String, _ body: (any VoiceStore) throws -> T) throws -> T {
    let hold: any RunHold, store: any StateBackend
    do { (hold, store) = try s.stateLocation.openForRun() } catch {
        printError("segno: \(error.message(spec: spec))")
        if case .locked = error { throw Exit.locked }
        if case .stateLost = error { throw Exit.stateLost }
        throw Exit.failures
    }
    defer { store.close(); _ = hold }
    guard let voices = store as? any VoiceStore else {
        printError("segno: the state of \(AudioError.quoted(spec)) keeps no voices")
        throw Exit.failures
    }
    do { return try body(voices) } catch {
        printError("segno: state database: \(error)")
        throw Exit.failures
    }
}
