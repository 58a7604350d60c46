import Dispatch
import Foundation
import Logging
import SegnoAudio
import SegnoCore
import SegnoSources
import SegnoSpeech
import SegnoState
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
    /// Shown the run's progress, failures and warnings (the CLI's terminal drawing); nil: the run
    /// shows nothing (the summary and the state still say everything).
    public var observer: (any RunObserver)? = nil
    /// The process environment as the CLI read it once (S3 credentials and endpoints for the
    /// source and uploads); the library reads no environment variable itself.
    public var environment: [String: String] = [:]
    /// `--shard K/N`: only the recordings whose stable hash falls in shard K of N (0 ≤ K < N).
    public var shard: Shard? = nil
    /// Told the run's crash journal once it is open (the CLI points its fatal-signal handler at
    /// it); nil: crashes leave no mark.
    public var onJournal: (@Sendable (CrashJournal) -> Void)? = nil
    /// Called first on each worker thread (the CLI gives it an alternate signal stack, so a stack
    /// overflow still reaches the fatal-signal handler).
    public var onWorkerThread: (@Sendable () -> Void)? = nil
    /// Called on the run's thread after each pass of a live source (`--watch`, stream capture)
    /// with that pass's summary. When set, the run's own summary keeps the counts but not each
    /// pass's results and plan lines, so a watcher that runs for months does not grow.
    public var onPass: (@Sendable (RunSummary) -> Void)? = nil
    /// Cores the split rule counts (`SplitRule`); nil: the machine's active processors. Tests set it.
    package var cores: Int? = nil
    /// The length from which a recording may be split; nil: `SplitRule.minimumSeconds`. Tests lower it.
    package var splitMinimumSeconds: Double? = nil
    /// The length from which a recording keeps checkpoints, and their interval; nil:
    /// `CheckpointRule`'s. Tests lower them.
    package var checkpointMinimumSeconds: Double? = nil
    package var checkpointIntervalSeconds: Double? = nil
    public init() {}
}

/// One of N disjoint parts of the input (`--shard K/N`), for schedulers without a shared database:
/// a recording belongs to the shard its name's FNV-1a hash picks, the same on every machine.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    public let index: Int
    public let count: Int

    /// Parses "K/N" with 0 ≤ K < N ≤ 10,000.
    public init?(_ text: String) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let k = Int(parts[0]), let n = Int(parts[1]), (1...10_000).contains(n), (0..<n).contains(k) else { return nil }
        index = k
        count = n
    }

    public func contains(_ relativePath: String) -> Bool {
        var hash: UInt64 = 0xcbf29ce484222325
        for b in relativePath.utf8 { hash = (hash ^ UInt64(b)) &* 0x100000001b3 }
        return Int(hash % UInt64(count)) == index
    }

    public var description: String { "\(index)/\(count)" }

    /// The SQLite state of one shard: `state.sqlite` → `state.shard-K-of-N.sqlite`, so shards
    /// never wait on each other's lock.
    public func statePath(_ path: String) -> String {
        let ext = (path as NSString).pathExtension
        let base = (path as NSString).deletingPathExtension
        return base + ".shard-\(index)-of-\(count)" + (ext.isEmpty ? "" : "." + ext)
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
    package let stop: StopFlag
    package let logger: Logger
    /// The helper pools and `PATH` of the spec's own source; made and shut down by the caller.
    package let tools: AudioTools

    public init(job: Job, options: RunOptions, stop: StopFlag, logger: Logger, tools: AudioTools,
                source: (any RecordingSource)? = nil, state: (any StateLocation)? = nil) {
        self.job = job
        self.tools = tools
        self.options = options
        self.stop = stop
        self.logger = logger
        let spec = job.spec
        // The spec's source; an `s3://` input needs credentials, so the CLI makes it (`makeSource`).
        self.source = source ?? (try? spec.makeSource(environment: options.environment, tools: tools, logger: logger))
            ?? FolderSource(input: spec.input, skipDirectories: [spec.outputRoot], tools: tools)
        if let state {
            self.state = state
        } else if let shard = options.shard, !spec.stateIsShared {
            self.state = SQLiteStateLocation(path: shard.statePath(spec.statePath), sharedFolder: spec.sharedStateFolder)
        } else {
            self.state = spec.stateLocation
        }
    }

    /// Runs the job. Throws only when the run cannot start (lock, state, input root); per-recording
    /// failures are in the summary.
    public func run() throws(RunError) -> RunSummary {
        let session = try prepare()
        defer {
            // The stages' idle helpers end with the run, reaped, so their CPU time counts in
            // segno's (`/usr/bin/time`, getrusage of children) and none outlives it.
            for placed in job.spec.stages { (placed.config as? any HelperHoldingStage)?.stopIdleHelpers() }
            session.journal?.close()
            session.store?.close()
            _ = session.hold
        }
        var parked: [RecordingResult] = []
        if !session.crashed.isEmpty, let store = session.store { parked = try recordCrashes(session.crashed, store: store) }
        let deadline = options.maxTime.map { Date().addingTimeInterval($0) }
        var summary: RunSummary
        if !options.dryRun, let live = source as? any LiveRecordingSource {
            summary = try runLive(live, session: session, deadline: deadline)
        } else {
            summary = try pass(session: session, deadline: deadline)
        }
        // Parked by a second death: failed in this run, though the plan only skipped them as known.
        summary.results = (summary.results + parked).sorted { $0.path < $1.path }
        summary.failed += parked.count
        summary.knownFailures -= min(summary.knownFailures, parked.count)
        return summary
    }

    /// One scan → plan → execute over what the source holds now.
    package func pass(session: Session, deadline: Date?) throws(RunError) -> RunSummary {
        var scan = try source.scan()
        if let shard = options.shard {
            scan.files = scan.files.filter { shard.contains($0.relativePath) }
            scan.settlingPaths = scan.settlingPaths.filter { shard.contains($0) }
            scan.unreadableNames = scan.unreadableNames.filter { shard.contains($0.relativePath) }
        }
        let collisions = collisionsBeforeState(scan: scan)
        var state: StateIndex
        do { state = try session.store?.loadAll() ?? [:] } catch { throw StateOpening.classify(error, path: job.spec.statePath, moveAside: !options.dryRun) }
        let store = session.store
        if !options.dryRun, let store, try prepareVoices(store: store, state: state) {
            do { state = try store.loadAll() } catch { throw StateOpening.classify(error, path: job.spec.statePath) }
        }
        let plan = makePlan(scan: scan, state: state, recipeLookup: options.explain ? { try? store?.recipe($0) } : nil, collisions: collisions)
        var summary = RunSummary()
        summary.scanned = scan.files.count
        summary.settling = scan.settling
        summary.settlingPaths = scan.settlingPaths.sorted()
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
        try execute(plan, state: state, store: store, deadline: deadline, journal: session.journal, into: &summary)
        return summary
    }

    /// A source that records while the run goes on (stream capture, a watched folder): starts it
    /// under the run's lock, makes a pass each time new recordings have appeared (the chain
    /// processes a segment while the next records), and a final pass once capture ends. A signal or `--max-time`
    /// ends capture (segments closed cleanly) and passes; what is left waits for the next run.
    package func runLive(_ live: any LiveRecordingSource, session: Session, deadline: Date?) throws(RunError) -> RunSummary {
        live.removeTemporaries()
        let capture = try live.startCapture(logger: logger, deadline: deadline, shouldStop: { [stop] in stop.isStopped })
        var total = RunSummary()
        var seen = 0
        func timeUp() -> Bool { deadline.map { Date() >= $0 } ?? false }
        while true {
            let recording = capture.isRunning
            let count = capture.finishedCount
            if stop.isStopped || timeUp() { break }
            if count > seen || !recording {
                seen = count
                var s = try pass(session: session, deadline: deadline)
                if let onPass = options.onPass {
                    onPass(s)
                    s.results = []
                    s.plan = []
                }
                total.merge(s)
                if !recording { break }
                continue
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        capture.wait()
        total.captureFailures = capture.failures
        if let sig = stop.signal { total.stop = .signal(sig) } else if timeUp() { total.stop = .timeUp }
        total.finishedAt = Date()
        return total
    }

    /// What a run holds while it works: the run and the store (both nil for a dry run on a new job).
    package struct Session {
        package var hold: (any RunHold)?
        package var store: (any StateBackend)?
        /// This process's crash journal (nil for a dry run, or where it cannot be written).
        package var journal: CrashJournal? = nil
        /// Recordings that processes which died had in hand, with how many such journals named each.
        package var crashed: [String: Int] = [:]
    }

    /// Where the crash journals live: `<output.root>/.segno`.
    package var journalFolder: String { job.spec.outputRoot + "/.segno" }

    /// Records a strike (`CrashJournal.strike`) for each recording a dead process had in hand
    /// and that is still in the input. Called once, before the first pass, after a crash only.
    /// Returns the recordings it parked (the second death with the same file in hand).
    package func recordCrashes(_ crashed: [String: Int], store: any StateBackend) throws(RunError) -> [RecordingResult] {
        let scan = try source.scan()
        let state: StateIndex
        do { state = try store.loadAll() } catch { throw StateOpening.classify(error, path: job.spec.statePath) }
        var updates: [StateUpdate] = []
        for file in scan.files where crashed[file.relativePath] != nil {
            // A strike parks only as an input failure (a first one is transient, never parked).
            updates.append(CrashJournal.strike(path: file.relativePath, identity: file.identity, prior: state[file.relativePath],
                                               recipe: job.parkingRecipe(for: .input)))
        }
        do { try store.apply(updates) } catch { throw StateOpening.classify(error, path: job.spec.statePath) }
        var parked: [RecordingResult] = []
        for u in updates {
            guard case .failed(let path, _, let error, let attempts, _, let cls, _, _) = u else { continue }
            if cls.isParked {
                options.observer?.failure("segno: \(error)")
                parked.append(RecordingResult(path: path, status: .failed, duration: nil, seconds: 0, attempts: attempts,
                                              outputs: [], error: error, failureClass: cls, reasons: []))
            } else {
                options.observer?.warning("segno: warning: \(error)")
            }
        }
        return parked
    }

    /// Takes the run, opens the state (a dry run: read-only, nothing created or migrated, no
    /// lock) and removes temporaries a killed run left.
    package func prepare() throws(RunError) -> Session {
        if options.dryRun { return Session(hold: nil, store: try state.openForReading()) }
        let (hold, store) = try state.openForRun()
        let shared = job.spec.stateIsShared
        Temporaries.remove(under: job.spec.outputRoot, sharedWithOtherWorkers: shared)
        source.removeLeftovers()
        for up in job.uploads {
            if let dir = up.config.localFolder?.fixedFolder { Temporaries.remove(under: dir, sharedWithOtherWorkers: shared) }
        }
        let crashed = CrashJournal.recover(folder: journalFolder)
        let journal = CrashJournal(folder: journalFolder)
        if let journal { options.onJournal?(journal) }
        return Session(hold: hold, store: store, journal: journal, crashed: crashed)
    }

    /// Sets up uploads, prunes, runs the plan's recordings on the worker pool and records the run.
    package func execute(_ plan: RunPlan, state: StateIndex, store: any StateBackend, deadline: Date?, journal: CrashJournal?,
                         into summary: inout RunSummary) throws(RunError) {
        let runStarted = Date()
        var uploaders: [any RecordingUploader] = []
        do {
            for up in job.uploads {
                let u = try up.config.makeUploader(environment: options.environment, progressStore: store, logger: logger)
                u.abortStale(store: store)
                uploaders.append(u)
            }
        } catch {
            throw .upload("\(error)")
        }
        let runId: Int64
        do { runId = try store.startRun(spec: job.spec.file, specName: job.spec.name) } catch { throw StateOpening.classify(error, path: job.spec.statePath) }
        let (pruned, pruneRefused) = prune(plan.prune, state: state, store: store, uploaders: uploaders)
        summary.pruned = pruned.map(\.path)
        summary.pruneRefused = pruneRefused
        try? store.recordPruned(runId: runId, pruned)
        let writer = StateWriter(store: store)
        for file in plan.unchanged { writer.submit(.touched(path: file.relativePath, identity: file.identity)) }
        let refused = recordRefused(plan.refused, writer: writer)
        let progress = RunProgress(observer: options.observer)
        progress.plan(plan.work.map { ($0.file.relativePath, $0.prior?.duration) })
        options.observer?.workStarted(progress)
        let before = store.statementStats
        // The output root is opened once: a root swapped for a link mid-run changes nothing.
        let pin = options.dryRun ? nil : OutputRootPin(job.spec.outputRoot)
        defer { pin?.release() }
        let (finished, timeUp) = runWork(plan.work, store: store, writer: writer, progress: progress, uploaders: uploaders,
                                         deadline: deadline, journal: journal,
                                         owners: OutputOwners(state: state, outputRoot: job.spec.outputRoot, pruned: Set(plan.prune)))
        options.observer?.workEnded(progress)
        do { try writer.flush() } catch { progress.error("segno: \(error)") }
        if let before, let after = store.statementStats {
            summary.stateStatements = (after.statements - before.statements, after.seconds - before.seconds)
        }
        summary.notStarted = plan.work.count - finished.count
        let interrupted = Set(finished.filter { $0.status == .interrupted }.map(\.path))
        let finishedPaths = Set(finished.map(\.path))
        summary.leftForNextRun = plan.work.filter { w in
            !w.forcedOnly && (!finishedPaths.contains(w.file.relativePath) || interrupted.contains(w.file.relativePath))
        }.count
        summary.results = (refused + finished).sorted { $0.path < $1.path }
        // Every planned recording finished, each removing its own checkpoint: what is left belongs
        // to recordings gone or changed since (decision 0095). A shared state's other machines may
        // still be writing theirs.
        if summary.leftForNextRun == 0 && !job.spec.stateIsShared { CheckpointPlan.sweep(outputRoot: job.spec.outputRoot, before: runStarted) }
        summarise(&summary, timeUp: timeUp)
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

    /// Records the recordings that fail without running (collisions, names that are not text).
    package func recordRefused(_ refused: [(file: ScannedFile, message: String, failureClass: FailureClass)], writer: StateWriter) -> [RecordingResult] {
        refused.map { file, message, cls in
            let text = "\(AudioError.quoted(file.relativePath)): \(message)"
            writer.submit(.failed(path: file.relativePath, identity: file.identity, error: text, attempts: 1,
                                  recipe: job.parkingRecipe(for: cls), failureClass: cls))
            options.observer?.failure("segno: \(text)")
            return RecordingResult(path: file.relativePath, status: .failed, duration: nil, seconds: 0, attempts: 1,
                                   outputs: [], error: text, failureClass: cls, reasons: [])
        }
    }

    /// Runs the plan's recordings on the worker pool until done, stopped or out of time; with a
    /// shared store the threads take them from a `ClaimQueue` (claimed in batches). Recordings
    /// another worker holds are tried again once this worker's own are done: that lease either
    /// ends with the work done (then they are skipped) or expires (taken over). Returns the
    /// results and whether `--max-time` ran out.
    package func runWork(_ plan: [RecordingPlan], store: any StateBackend, writer: StateWriter, progress: RunProgress,
                 uploaders: [any RecordingUploader], deadline: Date?, journal: CrashJournal? = nil,
                 owners: OutputOwners? = nil) -> ([RecordingResult], Bool) {
        let collected = Mutex<[RecordingResult]>([])
        let timeUp = Mutex(false)
        let shouldStop: @Sendable () -> Bool = { [stop] in
            if stop.isStopped { return true }
            if let deadline, Date() >= deadline { timeUp.withLock { $0 = true }; return true }
            return false
        }
        // A recording's work runs to its end once started, but a search for frames in a damaged
        // MP4 can last minutes: it stops with the run (the recording is left for the next one).
        tools.helpers.stopLongWork(when: shouldStop)
        // Recordings not finished yet, the one starting included: the split rule's "pending".
        let pending = Mutex(plan.count)
        // Recordings a dead process had in hand run first, one at a time: if one of them kills
        // the process again, the journal names it alone (`CrashJournal`).
        let suspects = plan.filter { CrashJournal.isSuspect($0.prior) }
        let rest = suspects.isEmpty ? plan : plan.filter { !CrashJournal.isSuspect($0.prior) }
        for (list, workers) in [(suspects, 1), (rest, options.parallel ?? job.spec.workers)] {
            var work = list
            var pause = 0.2
            while !work.isEmpty && !shouldStop() {
                let queue = ClaimQueue(work, store: store, workers: workers)
                // Recordings that wait for a batch (decision 0088) park; the pool stands in for them.
                let parking = WorkerParking(workers: workers)
                WorkerPool.run(workers: workers, shouldStop: shouldStop, next: queue.take, onThread: options.onWorkerThread,
                               parking: parking) { [self] plan in
                    journal?.begin(plan.file.relativePath)
                    let r = process(plan, writer: writer, progress: progress, uploaders: uploaders, owners: owners,
                                    pending: { pending.withLock { $0 } }, parking: parking)
                    pending.withLock { $0 -= 1 }
                    if store.claimsRecordings && (r.status == .interrupted || r.status == .notReady) { store.release(r.path) }
                    collected.withLock { $0.append(r) }
                    journal?.end(plan.file.relativePath)
                }
                queue.releaseUnstarted()
                let (held, skipped) = queue.leftovers
                for r in skipped {
                    progress.update { $0.planned -= 1 }
                    progress.end(r.path)
                    if let e = r.error { progress.error("segno: \(e)") }
                }
                collected.withLock { $0 += skipped }
                work = held.sorted { $0.file.relativePath < $1.file.relativePath }
                // Held recordings usually finish within moments: ask again soon, then less often.
                if !work.isEmpty && !shouldStop() {
                    Thread.sleep(forTimeInterval: pause)
                    pause = min(pause * 2, min(2, max(0.2, job.spec.leaseSeconds / 4)))
                }
            }
        }
        return (collected.withLock { $0 }, timeUp.withLock { $0 })
    }

    /// The rule that decides whether a recording runs on more than one core (decision 0085).
    package var checkpointRule: CheckpointRule {
        CheckpointRule(mode: job.spec.checkpoints, minimumSeconds: options.checkpointMinimumSeconds ?? CheckpointRule.minimumSeconds,
                       intervalSeconds: options.checkpointIntervalSeconds ?? CheckpointRule.intervalSeconds)
    }

    package var splitRule: SplitRule {
        SplitRule(mode: job.spec.split, cores: options.cores ?? ProcessInfo.processInfo.activeProcessorCount,
                  minimumSeconds: options.splitMinimumSeconds ?? SplitRule.minimumSeconds)
    }

    /// Counts the results into the summary.
    package func summarise(_ summary: inout RunSummary, timeUp: Bool) {
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

    package func runStatus(_ summary: RunSummary) -> RunStatus {
        switch summary.stop {
        case .signal: return .interrupted
        case .timeUp: return .timeUp
        case .none: return summary.failed > 0 ? .failures : .done
        }
    }

    /// Processes one recording; transient failures are retried with back-off, and a retry reruns
    /// only the taps and uploads that did not finish. Called on a worker thread.
    package func process(_ plan: RecordingPlan, writer: StateWriter, progress: RunProgress, uploaders: [any RecordingUploader],
                         owners: OutputOwners? = nil, pending: @escaping () -> Int = { 1 }, parking: WorkerParking? = nil) -> RecordingResult {
        guard case .run(let tapIndices, let uploadIndices, let reasons) = plan.action else { fatalError("only runnable plans are processed") }
        let started = Date()
        let priorAttempts = plan.prior?.status.hasFailure == true ? plan.prior?.attempts ?? 0 : 0
        var result = RecordingResult(path: plan.file.relativePath, status: .failed, duration: nil, seconds: 0,
                                     attempts: 0, outputs: [], error: nil, reasons: reasons.map(\.description))
        defer { result.seconds = Date().timeIntervalSince(started) }
        var runner = RecordingJob(job: job, plan: plan, source: source, uploaders: uploaders, stop: stop)
        runner.owners = owners
        runner.parking = parking
        let rule = splitRule
        runner.split = { seconds, hasTransform in rule.decide(seconds: seconds, pending: pending(), hasTransform: hasTransform) }
        runner.checkpoints = checkpointRule
        let path = plan.file.relativePath
        progress.begin(path)
        defer { progress.end(path) }
        runner.onDecoded = { seconds, total, passes in progress.decoded(path, seconds: seconds, of: total, passes: passes) }
        if let observer = options.observer { runner.onNote = { observer.warning("segno: warning: \(AudioError.quoted(path)): \($0)") } }
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
        result.split = outcome.split
        result.duration = outcome.duration
        result.outputs = outcome.written
        result.salvaged = outcome.salvage.map { $0.report.json(sampleRate: $0.sampleRate) }
        guard let cls = outcome.failureClass else {
            writer.submit([.done(path: plan.file.relativePath, identity: plan.file.identity, contentHash: outcome.contentHash,
                                 duration: outcome.duration, steps: Array(outcome.steps.values), recipes: outcome.recipes)]
                          + archiveUpdates(outcome, path: plan.file.relativePath))
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
        writer.submit([.failed(path: plan.file.relativePath, identity: plan.file.identity, error: message,
                               attempts: priorAttempts + attempt, recipe: job.parkingRecipe(for: cls), failureClass: cls,
                               steps: Array(outcome.steps.values), recipes: outcome.recipes)]
                      + archiveUpdates(outcome, path: plan.file.relativePath))
        progress.update { $0.failed += 1 }
        progress.error("segno: \(message)")
        return result
    }

    /// The salvage report, fingerprints and search entry a recording's pass produced, submitted
    /// with its steps in one transaction (a step without its fingerprint row would be rerun).
    private func archiveUpdates(_ outcome: RecordingOutcome, path: String) -> [StateUpdate] {
        var out: [StateUpdate] = []
        if outcome.decoded {
            out.append(.salvaged(path: path, report: outcome.salvage.map { $0.report.json(sampleRate: $0.sampleRate).serialized() }))
        }
        if !outcome.fingerprints.isEmpty || outcome.catalog != nil {
            out.append(.archived(path: path, fingerprints: outcome.fingerprints, catalog: outcome.catalog))
        }
        return out
    }
}
