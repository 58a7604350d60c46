import Dispatch
import Foundation
import Logging
import Synchronization

/// How `segno run` / `segno retry` behave.
public struct RunOptions: Sendable {
    /// Worker count; nil = the spec's `parallel`.
    public var parallel: Int?
    /// Print the plan, touch nothing.
    public var dryRun = false
    /// With the plan, say why each step runs.
    public var explain = false
    public var force: Force = .none
    /// Stop taking new work after this many seconds (in-flight recordings finish).
    public var maxTime: Double?
    /// Only recordings that failed before (`segno retry`).
    public var retryOnly = false
    public var progress: ProgressPrinter.Mode = .lines
    public init() {}
}

/// What happened to one recording in this run.
public struct RecordingResult: Sendable {
    public enum Status: String, Sendable {
        case done, failed, interrupted, unchanged
        /// Some taps or uploads finished, others failed ("partly done").
        case partial
        /// The source changed while it was processed (still being written): picked up later, not failed.
        case notReady = "not-ready"
        /// Another worker holds it or has just finished it (shared state).
        case elsewhere
    }
    public var path: String
    public var status: Status
    /// Seconds of audio (source duration).
    public var duration: Double?
    /// Wall seconds spent.
    public var seconds: Double
    public var attempts: Int
    public var outputs: [String]
    public var error: String?
    /// The failure's class when it failed.
    public var failureClass: FailureClass? = nil
    public var reasons: [String]
}

/// The outcome of a run.
public struct RunSummary: Sendable {
    public enum Stop: Sendable, Equatable { case none, signal(Int32), timeUp }
    public var scanned = 0
    public var planned = 0
    public var done = 0
    public var failed = 0
    public var skipped = 0
    public var knownFailures = 0
    public var interrupted = 0
    public var settling = 0
    public var notStarted = 0
    /// Recordings whose sources disappeared and whose outputs and uploads were deleted (`prune`).
    public var pruned: [String] = []
    /// Why `prune` deleted nothing this run although sources are gone (over `prune_limit`…).
    public var pruneHeld: String?
    /// Scanned files that are outputs segno recorded: never taken as input.
    public var ownOutputs: [String] = []
    public var stop: Stop = .none
    public var results: [RecordingResult] = []
    public var problems: [String] = []
    public var plan: [String] = []
    /// The HTML report written after the run (`report.path`), or why it could not be written.
    public var report: Result<String, ReportFailure>?
    public var startedAt = Date()
    public var finishedAt = Date()
}

/// Why the run's HTML report was not written (the run itself is unaffected).
public struct ReportFailure: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// Why a run could not start at all.
public enum RunError: Error, Sendable, CustomStringConvertible {
    /// Another process holds the state's lock (exit 75).
    case locked(statePath: String, holder: String?)
    /// The state database could not be opened or written.
    case state(String)
    /// The state database is damaged (moved aside to `movedTo`) or missing after earlier runs:
    /// the run stops before touching anything (exit 65) until `segno state rebuild` makes a new one.
    case stateLost(statePath: String, movedTo: String?, detail: String)
    /// The input root is missing or unreadable.
    case input(String)
    /// An upload stage cannot work (no credentials, bad endpoint): exit 2.
    case upload(String)

    public var description: String {
        switch self {
        case .locked(let p, let h): return "another segno run holds \(AudioError.quoted(p))\(h.map { " (pid \($0))" } ?? ""); exiting"
        case .state(let m): return "state database: \(m)"
        case .stateLost(let p, let moved, let d):
            let aside = moved.map { "; moved it to \(AudioError.quoted($0))" } ?? ""
            return "state database \(AudioError.quoted(p)) \(d)\(aside); nothing was processed. Run `segno state rebuild SPEC` to adopt the existing outputs, then run again"
        case .input(let m): return m
        case .upload(let m): return m
        }
    }
}

/// Runs a job: prepare (lock, state, clean-up) → scan → plan → execute on the worker pool →
/// summarise. A recording's whole chain runs on one worker (no locks in the sample loop); each
/// finished recording is recorded through one batching writer; signals and `--max-time` stop
/// cleanly.
public final class BatchRunner: Sendable {
    public let job: Job
    public let options: RunOptions
    /// Where recordings come from (the spec's input folder unless given).
    public let source: any RecordingSource
    /// Where state lives (the spec's SQLite file unless given).
    public let state: any StateLocation
    let stop: StopFlag
    let logger: Logger

    public init(job: Job, options: RunOptions, stop: StopFlag, logger: Logger,
                source: (any RecordingSource)? = nil, state: (any StateLocation)? = nil) {
        self.job = job
        self.options = options
        self.stop = stop
        self.logger = logger
        let spec = job.spec
        self.source = source ?? FolderSource(input: spec.input,
                                             skipDirectories: [spec.outputRoot, (spec.statePath as NSString).deletingLastPathComponent])
        self.state = state ?? spec.stateLocation
    }

    /// Runs the job. Throws only when the run cannot start (lock, state, input root); per-recording
    /// failures are in the summary.
    public func run() throws(RunError) -> RunSummary {
        let session = try prepare()
        defer {
            session.store?.close()
            _ = session.hold
        }
        let scan = try source.scan()
        let state: [String: RecordingState]
        do { state = try session.store?.loadAll() ?? [:] } catch { throw StateOpening.classify(error, path: job.spec.statePath, moveAside: !options.dryRun) }
        let store = session.store
        let plan = makePlan(scan: scan, state: state, recipeLookup: options.explain ? { try? store?.recipe($0) } : nil)
        var summary = RunSummary()
        summary.scanned = scan.files.count
        summary.settling = scan.settling
        summary.problems = scan.problems.map(\.description)
        summary.ownOutputs = plan.ownOutputs
        summary.planned = plan.work.count + plan.refused.count
        summary.skipped = plan.upToDate
        summary.knownFailures = plan.knownFailures
        summary.pruneHeld = plan.pruneHeld
        summary.plan = plan.lines
        if options.dryRun {
            summary.planned = plan.work.count
            summary.pruned = plan.prune
            summary.finishedAt = Date()
            return summary
        }
        guard let store else { throw .state("not opened") }
        try execute(plan, state: state, store: store, into: &summary)
        return summary
    }

    /// What a run holds while it works: the run and the store (both nil for a dry run on a new job).
    struct Session {
        var hold: (any RunHold)?
        var store: (any StateBackend)?
    }

    /// Takes the run, opens the state (a dry run: read-only, nothing created or migrated, no
    /// lock) and removes temporaries a killed run left.
    func prepare() throws(RunError) -> Session {
        if options.dryRun { return Session(hold: nil, store: try state.openForReading()) }
        let (hold, store) = try state.openForRun()
        let shared = job.spec.stateIsShared
        Temporaries.remove(under: job.spec.outputRoot, sharedWithOtherWorkers: shared)
        for up in job.uploads {
            if case .folder(let t) = up.config.target, let dir = t.fixedFolder { Temporaries.remove(under: dir, sharedWithOtherWorkers: shared) }
        }
        return Session(hold: hold, store: store)
    }

    /// Sets up uploads, prunes, runs the plan's recordings on the worker pool and records the run.
    func execute(_ plan: RunPlan, state: [String: RecordingState], store: any StateBackend, into summary: inout RunSummary) throws(RunError) {
        var uploaders: [Uploader] = []
        do {
            for up in job.uploads {
                let u = try Uploader(config: up.config, environment: ProcessInfo.processInfo.environment, progressStore: store, logger: logger)
                u.abortStale(store: store)
                uploaders.append(u)
            }
        } catch {
            throw .upload("\(error)")
        }
        let runId: Int64
        do { runId = try store.startRun(spec: job.spec.file, specName: job.spec.name) } catch { throw StateOpening.classify(error, path: job.spec.statePath) }
        let pruned = prune(plan.prune, state: state, store: store, uploaders: uploaders)
        summary.pruned = pruned.map(\.path)
        try? store.recordPruned(runId: runId, pruned)
        let writer = StateWriter(store: store)
        for file in plan.unchanged { writer.submit(.touched(path: file.relativePath, identity: file.identity)) }
        var results: [RecordingResult] = []
        for (file, message, cls) in plan.refused {
            let text = "\(AudioError.quoted(file.relativePath)): \(message)"
            writer.submit(.failed(path: file.relativePath, identity: file.identity, error: text, attempts: 1,
                                  recipe: job.recipeFingerprint, failureClass: cls))
            results.append(RecordingResult(path: file.relativePath, status: .failed, duration: nil, seconds: 0, attempts: 1,
                                           outputs: [], error: text, failureClass: cls, reasons: []))
            FileHandle.standardError.write(Data("segno: \(text)\n".utf8))
        }
        let progress = ProgressPrinter(mode: options.progress)
        progress.start(planned: plan.work.map { ($0.file.relativePath, $0.prior?.duration) })
        let collected = Mutex<[RecordingResult]>([])
        let timeUp = Mutex(false)
        let deadline = options.maxTime.map { Date().addingTimeInterval($0) }
        let uploadersForWork = uploaders
        let shouldStop: @Sendable () -> Bool = { [stop] in
            if stop.isStopped { return true }
            if let deadline, Date() >= deadline { timeUp.withLock { $0 = true }; return true }
            return false
        }
        // Recordings another worker holds are tried again once this worker's own are done: its
        // lease either ends with the work done (then they are skipped) or expires (taken over).
        var work = plan.work
        while !work.isEmpty {
            let held = Mutex<[RecordingPlan]>([])
            let round = work
            WorkerPool.run(count: round.count, workers: options.parallel ?? job.spec.workers, shouldStop: shouldStop) { [self] i in
                let r: RecordingResult
                switch claim(round[i], store: store) {
                case .run(let plan): r = process(plan, writer: writer, progress: progress, uploaders: uploadersForWork)
                case .skip(let result): r = result; progress.update { $0.planned -= 1 }; progress.end(round[i].file.relativePath)
                case .held: held.withLock { $0.append(round[i]) }; return
                }
                if r.status == .interrupted || r.status == .notReady { store.release(r.path) }
                collected.withLock { $0.append(r) }
            }
            work = held.withLock { $0 }.sorted { $0.file.relativePath < $1.file.relativePath }
            if !work.isEmpty && !shouldStop() { Thread.sleep(forTimeInterval: min(2, max(0.2, job.spec.leaseSeconds / 4))) }
            if shouldStop() { break }
        }
        progress.stop()
        do { try writer.flush() } catch { progress.error("segno: \(error)") }
        let finished = collected.withLock { $0 }
        summary.notStarted = plan.work.count - finished.count
        summary.results = (results + finished).sorted { $0.path < $1.path }
        summarise(&summary, timeUp: timeUp.withLock { $0 })
        try? store.finishRun(id: runId, status: runStatus(summary), planned: summary.planned, done: summary.done,
                             failed: summary.failed, skipped: summary.skipped, pruned: summary.pruned.count)
        if let path = job.spec.reportPath {
            do {
                try ReportWriter.afterRun(spec: job.spec, store: store)
                summary.report = .success(path)
            } catch {
                summary.report = .failure(ReportFailure(message: "report \(AudioError.quoted(path)): \(error)"))
            }
        }
    }

    /// Counts the results into the summary.
    func summarise(_ summary: inout RunSummary, timeUp: Bool) {
        for r in summary.results {
            switch r.status {
            case .done: summary.done += 1
            case .failed, .partial: summary.failed += 1
            case .interrupted: summary.interrupted += 1
            case .unchanged: summary.skipped += 1; summary.planned -= 1
            case .notReady: summary.settling += 1; summary.planned -= 1
            case .elsewhere: summary.skipped += 1; summary.planned -= 1
            }
        }
        if let sig = stop.signal { summary.stop = .signal(sig) } else if timeUp { summary.stop = .timeUp }
        summary.finishedAt = Date()
    }

    func runStatus(_ summary: RunSummary) -> RunStatus {
        switch summary.stop {
        case .signal: return .interrupted
        case .timeUp: return .timeUp
        case .none: return summary.failed > 0 ? .failures : .done
        }
    }

    enum Claimed {
        case run(RecordingPlan)
        case skip(RecordingResult)
        /// Another worker holds a live lease on it: try again later.
        case held
    }

    /// Claims a recording before its pass (always granted with SQLite). With a shared store the
    /// plan is made again on the recording as stored now: another worker may have finished it
    /// since this worker's scan. Called on a worker thread.
    func claim(_ plan: RecordingPlan, store: any StateBackend) -> Claimed {
        var skipped = RecordingResult(path: plan.file.relativePath, status: .elsewhere, duration: nil, seconds: 0, attempts: 0,
                                      outputs: [], error: nil, reasons: [])
        let claim: ClaimResult
        do { claim = try store.claim(plan.file.relativePath) } catch {
            skipped.status = .failed
            skipped.error = "\(AudioError.quoted(plan.file.relativePath)): cannot claim it: \(error)"
            skipped.failureClass = .environment
            return .skip(skipped)
        }
        guard case .granted(let refreshed, let current) = claim else { return .held }
        guard refreshed else { return .run(plan) }
        var planner = Planner(job: job, state: current.map { [plan.file.relativePath: $0] } ?? [:], source: source)
        planner.force = options.force
        planner.retryOnly = options.retryOnly
        if options.explain { planner.recipeLookup = { try? store.recipe($0) } }
        let fresh = planner.plan(plan.file)
        guard case .run = fresh.action else {
            store.release(plan.file.relativePath)
            return .skip(skipped)
        }
        return .run(fresh)
    }

    /// Processes one recording; transient failures are retried with back-off, and a retry reruns
    /// only the taps and uploads that did not finish. Called on a worker thread.
    func process(_ plan: RecordingPlan, writer: StateWriter, progress: ProgressPrinter, uploaders: [Uploader]) -> RecordingResult {
        guard case .run(let tapIndices, let uploadIndices, let reasons) = plan.action else { fatalError("only runnable plans are processed") }
        let started = Date()
        let priorAttempts = plan.prior?.status.hasFailure == true ? plan.prior?.attempts ?? 0 : 0
        var result = RecordingResult(path: plan.file.relativePath, status: .failed, duration: nil, seconds: 0,
                                     attempts: 0, outputs: [], error: nil, reasons: reasons.map(\.description))
        defer { result.seconds = Date().timeIntervalSince(started) }
        var runner = RecordingJob(job: job, plan: plan, source: source, uploaders: uploaders, stop: stop)
        let path = plan.file.relativePath
        progress.begin(path)
        defer { progress.end(path) }
        runner.onDecoded = { seconds, total in progress.decoded(path, seconds: seconds, of: total) }
        if progress.mode != .quiet { runner.onNote = { progress.error("segno: warning: \(AudioError.quoted(path)): \($0)") } }
        var outcome = RecordingOutcome()
        var attempt = 0
        while true {
            attempt += 1
            outcome.failures = []
            do {
                try runner.run(taps: tapIndices.filter { outcome.steps[job.taps[$0].identity] == nil },
                               uploads: uploadIndices.filter { outcome.steps[job.uploads[$0].identity] == nil }, into: &outcome)
            } catch {
                result.status = .interrupted
                result.attempts = attempt
                return result
            }
            guard let cls = outcome.failureClass else { break }
            if cls.retryWithinRun && attempt <= job.spec.retries && !stop.isStopped {
                logger.debug("retrying after a transient failure", metadata: ["file.path": "\(plan.file.relativePath)", "error": "\(outcome.message)"])
                Thread.sleep(forTimeInterval: min(8, 0.25 * pow(2, Double(attempt - 1))))
                continue
            }
            break
        }
        result.attempts = attempt
        result.duration = outcome.duration
        result.outputs = outcome.written
        guard let cls = outcome.failureClass else {
            writer.submit(.done(path: plan.file.relativePath, identity: plan.file.identity, contentHash: outcome.contentHash,
                                duration: outcome.duration, steps: Array(outcome.steps.values), recipes: outcome.recipes))
            submitArchive(outcome, path: plan.file.relativePath, to: writer)
            result.status = .done
            progress.update { $0.done += 1; $0.audioSeconds += outcome.duration ?? 0 }
            return result
        }
        // A file that changed while it was read is still being written: not a failure.
        if source.currentIdentity(plan.file) != plan.file.identity {
            result.status = .notReady
            progress.update { $0.planned -= 1 }
            return result
        }
        let message = outcome.message
        result.error = message
        result.failureClass = cls
        result.status = outcome.steps.isEmpty && (plan.prior?.steps.isEmpty ?? true) ? .failed : .partial
        writer.submit(.failed(path: plan.file.relativePath, identity: plan.file.identity, error: message,
                              attempts: priorAttempts + attempt, recipe: job.recipeFingerprint, failureClass: cls,
                              steps: Array(outcome.steps.values), recipes: outcome.recipes))
        submitArchive(outcome, path: plan.file.relativePath, to: writer)
        progress.update { $0.failed += 1 }
        progress.error("segno: \(message)")
        return result
    }

    /// Queues the fingerprints and the search entry a recording's pass produced, after its steps:
    /// a crash between the two leaves a step without its fingerprint row, which the planner reruns.
    private func submitArchive(_ outcome: RecordingOutcome, path: String, to writer: StateWriter) {
        guard !outcome.fingerprints.isEmpty || outcome.catalog != nil else { return }
        writer.submit(.archived(path: path, fingerprints: outcome.fingerprints, catalog: outcome.catalog))
    }
}
