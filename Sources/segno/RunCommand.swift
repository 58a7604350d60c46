import ArgumentParser
import Foundation
import Logging
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

/// Options shared by `run` and `retry`.
struct RunFlags: ParsableArguments {
    @Option(help: ArgumentHelp("Worker count, 1…256, or auto (active processors). Default: the spec's parallel.", valueName: "n|auto"))
    var parallel: String?

    /// `--parallel` as a worker count: "auto" is the active processor count.
    var workers: Int? {
        guard let p = parallel else { return nil }
        return p.lowercased() == "auto" ? ProcessInfo.processInfo.activeProcessorCount : Int(p)
    }

    @Flag(help: "Print what would run; change nothing.")
    var dryRun = false

    @Flag(help: ArgumentHelp("With the plan, say why each step runs, which recordings run on more than one core (split: at least \(SplitRule.duration(SplitRule.minimumSeconds)) long, more cores than recordings pending, spec split: auto) and which keep checkpoints (at least \(SplitRule.duration(CheckpointRule.minimumSeconds)) long, one every \(SplitRule.duration(CheckpointRule.intervalSeconds)), spec checkpoints: auto), and why."))
    var explain = false

    @Option(name: .customLong("force"), help: ArgumentHelp("Rerun every tap (--force) or one stage kind (--force=waveform).", valueName: "stage"))
    var force: String?

    @Option(help: "Stop taking new work after this long (e.g. 50m, 1h30m); in-flight recordings finish, but a search for frames in a damaged MP4 stops and is left for the next run.")
    var maxTime: String?

    @Option(help: "Write the run summary as JSON to this file.")
    var report: String?

    @Flag(help: "Print nothing but errors.")
    var quiet = false

    @Option(help: ArgumentHelp("Only shard K of N (0 ≤ K < N) of the recordings, by a stable hash of their names; with SQLite state each shard keeps its own file.", valueName: "K/N"))
    var shard: String?

    func validate() throws {
        if parallel != nil, !(workers.map(JobSpec.parallelRange.contains) ?? false) { throw ValidationError("--parallel must be 1…256 or auto") }
        if let m = maxTime, parseDuration(m) == nil { throw ValidationError("--max-time takes a duration such as 50m or 1h30m") }
        if let s = shard, Shard(s) == nil { throw ValidationError("--shard takes K/N with 0 ≤ K < N, e.g. 0/4") }
        // Before any work, as report -o and the one-off commands: segno creates no folder for it.
        if let report, let dir = missingFolder(of: report) {
            throw ValidationError("--report \(AudioError.quoted(report)): its folder \(AudioError.quoted(dir)) does not exist; segno creates no folder for it")
        }
    }

    func options(retryOnly: Bool) -> RunOptions {
        var o = RunOptions()
        o.parallel = workers
        o.dryRun = dryRun
        o.explain = explain
        if let f = force { o.force = f == "all" || f.isEmpty ? .all : .stage(f) }
        o.maxTime = maxTime.flatMap(parseDuration)
        o.retryOnly = retryOnly
        o.observer = TerminalProgress(mode: TerminalProgress.mode(quiet: quiet))
        o.environment = ProcessContext.environment
        o.shard = shard.flatMap(Shard.init)
        o.onJournal = { CrashMark.arm($0) }
        o.onWorkerThread = { CrashMark.alternateStack() }
        return o
    }
}

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Process every recording that is new or out of date, in parallel; resumable.",
        discussion: "A second run while one holds the state exits 75 at once. SIGINT/SIGTERM stop cleanly (130/143). "
            + "With --watch the run stays up, passing again as recordings settle in the input folder, and SIGINT/SIGTERM stop it with exit 0.")

    @Argument(help: "The job spec (YAML).") var spec: String
    @OptionGroup var flags: RunFlags

    @Flag(help: "Keep running: process recordings in the input folder as they settle (inotify), until SIGTERM/SIGINT.")
    var watch = false

    @Option(help: ArgumentHelp("With --watch: a full pass after this long without one, even with no events (default 5m; e.g. 1m on a network share).", valueName: "duration"))
    var rescan: String?

    func validate() throws {
        if watch && flags.dryRun { throw ValidationError("--watch and --dry-run do not go together: --dry-run shows one pass; run it without --watch") }
        if watch && flags.report != nil { throw ValidationError("--report describes one run; a watch has many passes: use segno status or the spec's report") }
        if rescan != nil && !watch { throw ValidationError("--rescan goes with --watch") }
        if let r = rescan, (parseDuration(r) ?? 0) < 1 { throw ValidationError("--rescan takes a duration of 1s or more, such as 5m") }
    }

    func run() throws {
        try runJob(spec: spec, flags: flags, retryOnly: false,
                   watchRescan: watch ? rescan.flatMap(parseDuration) ?? WatchSource.defaultRescan : nil)
    }
}

struct RetryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Run again the recordings that failed (only those).")

    @Argument(help: "The job spec (YAML).") var spec: String
    @OptionGroup var flags: RunFlags

    func run() throws { try runJob(spec: spec, flags: flags, retryOnly: true) }
}

/// Loads the spec, runs it, prints the summary and maps the outcome to DESIGN.md §4's exit codes.
/// `watchRescan` (seconds) makes it `run --watch`: it exits 0 when a signal or `--max-time`
/// stops it, whatever failed on the way (each failure was printed when it happened).
func runJob(spec path: String, flags: RunFlags, retryOnly: Bool, watchRescan: Double? = nil) throws {
    let spec: JobSpec
    do { spec = try SpecLoader.load(path: path, registry: .standard(tools: ProcessContext.tools), environment: ProcessContext.environment) } catch {
        printError("segno: \(error)")
        throw Exit.usage
    }
    try refuseMissingParts(spec)
    if let f = flags.force, f != "all", !f.isEmpty {
        // Taps, uploads and prune can be forced; a transform reruns through the taps after it.
        let kinds = Set(spec.tapDeclarations.keys).union(["upload", "prune"])
        guard kinds.contains(f) else {
            printError("segno: --force=\(f): not a stage that can be forced; use one of \(kinds.sorted().joined(separator: ", ")), or --force alone")
            throw Exit.usage
        }
    }
    let watcher = SignalWatcher()
    let logger = Logger.segno(quiet: flags.quiet)
    let source: any RecordingSource
    do {
        if let rescan = watchRescan {
            source = try spec.makeWatchSource(rescan: rescan, tools: ProcessContext.tools)
        } else {
            source = try spec.makeSource(environment: ProcessContext.environment, tools: ProcessContext.tools, logger: logger)
        }
    } catch {
        printError("segno: \(error)")
        throw Exit.usage
    }
    var options = flags.options(retryOnly: retryOnly)
    let watchLog = watchRescan.map { _ in WatchLog(quiet: flags.quiet, explain: flags.explain) }
    if let watchLog { options.onPass = { watchLog.passed($0) } }
    let runner = BatchRunner(job: Job(spec: spec), options: options, stop: watcher.flag, logger: logger, tools: ProcessContext.tools, source: source)
    let summary: RunSummary
    do { summary = try runner.run() } catch {
        printError("segno: \(error.message(spec: path))")
        switch error {
        case .locked: throw Exit.locked
        case .upload: throw Exit.usage
        case .stateLost: throw Exit.stateLost
        default: throw Exit.failures
        }
    }
    if ProcessContext.environment["SEGNO_STATE_STATS"] != nil, let st = summary.stateStatements {
        // For bench/bench.py's fleet section: the cost of claims and state writes in this run.
        printError("segno: state statements: \(st.count) in \(String(format: "%.3f", st.seconds)) s for \(summary.done + summary.failed) recordings")
    }
    if let watchLog {
        watchLog.stopped(summary)
        return
    }
    for p in summary.problems where !flags.quiet { printError("segno: skipped \(p)") }
    for f in summary.captureFailures { printError("segno: \(f)") }
    for p in summary.ownOutputs where !flags.quiet { printError("segno: skipped \(AudioError.quoted(p)): an output of this job, never taken as input") }
    if let held = summary.pruneHeld { printError("segno: prune: \(held)") }
    if let refused = summary.pruneRefused { printError("segno: prune: \(refused)") }
    if flags.dryRun {
        // Each line is written whole (one write per line, so cron logs interleave by line) and
        // with control characters escaped, whatever a reason or message carries.
        for line in summary.plan { printOut(AudioError.quoted(line)) }
        printOut("dry run: \(summary.planned) to run, \(summary.skipped) up to date, \(summary.knownFailures) known failures (segno retry), \(settlingNote(summary.settling, settle: spec.input.settle)), \(summary.pruned.count) to prune")
        return
    }
    if flags.explain {
        for line in summary.plan { printOut(AudioError.quoted(line)) }
        for p in summary.settlingPaths { printOut(AudioError.quoted("\(p): settling: modified in the last \(secondsText(spec.input.settle)) (input.settle); the next run takes it")) }
    }
    var code: Int32 = summary.failed > 0 || !summary.captureFailures.isEmpty ? 1 : 0
    switch summary.stop {
    case .signal(let s): code = s == SIGTERM ? 143 : 130
    case .timeUp, .none: break
    }
    if !flags.quiet {
        var line: String
        if summary.planned == 0 && summary.failed == 0 {
            line = "nothing to do: \(summary.skipped) recordings up to date"
        } else {
            line = outcomeWords(summary) + ", \(summary.skipped) up to date"
        }
        if summary.knownFailures > 0 { line += ", \(summary.knownFailures) known failures (segno status --failed; segno retry)" }
        if summary.settling > 0 { line += ", " + settlingNote(summary.settling, settle: spec.input.settle) }
        if !summary.pruned.isEmpty { line += ", \(summary.pruned.count) pruned" }
        switch summary.stop {
        case .signal: line += "; interrupted, \(summary.leftForNextRun) left for the next run"
        case .timeUp: line += "; --max-time reached, \(summary.leftForNextRun) left for the next run"
        case .none: break
        }
        printOut(line)
    }
    switch summary.report {
    case .success(let path)?: if !flags.quiet { printOut("report: \(path) (open it in a browser)") }
    case .failure(let e)?: printError("segno: \(e)")
    case nil: break
    }
    if let report = flags.report {
        do { try RunReport.write(RunReport.json(summary, spec: spec, exitCode: code).escapingFileNameBytes(), to: report) } catch {
            printError("segno: \(error)")
        }
    }
    if code != 0 { throw ExitCode(code) }
}

/// "3 done, 1 failed, 2 partly done": the words of `segno status`, where a recording with some
/// outputs made and others failed is "partly done" (the count is left out when 0).
func outcomeWords(_ s: RunSummary) -> String {
    "\(s.done) done, \(s.failed - s.partial) failed" + (s.partial > 0 ? ", \(s.partial) partly done" : "")
}

/// "1 still settling (modified in the last 10 s; input.settle sets how long)": why a recording
/// was left, and the key that changes it.
func settlingNote(_ count: Int, settle: Double) -> String {
    "\(count) still settling (modified in the last \(secondsText(settle)); input.settle sets how long)"
}

/// 10 → "10 s", 90 → "1 min 30 s", 3600 → "1 h", 0.5 → "0.5 s".
func secondsText(_ s: Double) -> String {
    if s < 60 { return s == s.rounded() ? "\(Int(s)) s" : "\(s) s" }
    if Int(s) % 3600 == 0 { return "\(Int(s) / 3600) h" }
    let m = Int(s) / 60, r = Int(s) % 60
    return r == 0 ? "\(m) min" : "\(m) min \(r) s"
}
