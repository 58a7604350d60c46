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
    public enum Status: String, Sendable { case done, failed, interrupted, unchanged }
    public var path: String
    public var status: Status
    /// Seconds of audio (source duration).
    public var duration: Double?
    /// Wall seconds spent.
    public var seconds: Double
    public var attempts: Int
    public var outputs: [String]
    public var error: String?
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
    public var stop: Stop = .none
    public var results: [RecordingResult] = []
    public var problems: [String] = []
    public var plan: [String] = []
    public var startedAt = Date()
    public var finishedAt = Date()
}

/// Why a run could not start at all.
public enum RunError: Error, Sendable, CustomStringConvertible {
    /// Another process holds the state's lock (exit 75).
    case locked(statePath: String, holder: String?)
    /// The state database could not be opened or written.
    case state(String)
    /// The input root is missing or unreadable.
    case input(String)
    /// An upload stage cannot work (no credentials, bad endpoint): exit 2.
    case upload(String)

    public var description: String {
        switch self {
        case .locked(let p, let h): return "another segno run holds \(AudioError.quoted(p))\(h.map { " (pid \($0))" } ?? ""); exiting"
        case .state(let m): return "state database: \(m)"
        case .input(let m): return m
        case .upload(let m): return m
        }
    }
}

/// Runs a job over its input folder: scan, plan against the state store, process the
/// recordings that need it on `parallel` Dispatch workers (a recording's whole chain on one
/// worker, no locks in the sample loop), record each finished recording through one batching
/// writer, and stop cleanly on signals or `--max-time`.
public final class BatchRunner: Sendable {
    public let job: Job
    public let options: RunOptions
    let stop: StopFlag
    let logger: Logger

    public init(job: Job, options: RunOptions, stop: StopFlag, logger: Logger) {
        self.job = job
        self.options = options
        self.stop = stop
        self.logger = logger
    }

    /// Runs the job. Throws only when the run cannot start (lock, state, input root); per-recording
    /// failures are in the summary.
    public func run() throws(RunError) -> RunSummary {
        let spec = job.spec
        var summary = RunSummary()
        var lock: RunLock?
        let store: StateStore?
        do {
            if options.dryRun {
                store = FileManager.default.fileExists(atPath: spec.statePath) ? try StateStore(path: spec.statePath) : nil
            } else {
                guard let l = try RunLock(statePath: spec.statePath) else {
                    throw RunError.locked(statePath: spec.statePath, holder: RunLock.holder(statePath: spec.statePath))
                }
                lock = l
                store = try StateStore(path: spec.statePath)
                try store?.closeAbandonedRuns()
                Self.removeTemporaries(under: spec.outputRoot)
                for up in job.uploads {
                    // The fixed part of a file:// target (before its first template variable).
                    if case .folder(let t) = up.config.target {
                        let fixed = "/" + String(t.text.prefix { $0 != "{" })
                        let dir = fixed.hasSuffix("/") ? fixed : (fixed as NSString).deletingLastPathComponent
                        if dir != "/" { Self.removeTemporaries(under: dir) }
                    }
                }
            }
        } catch let e as RunError {
            throw e
        } catch {
            throw .state("\(error)")
        }
        defer { _ = lock }

        // Scan and plan.
        let scanner = InputScanner(input: spec.input, skipDirectories: [spec.outputRoot, (spec.statePath as NSString).deletingLastPathComponent])
        let scan: (files: [ScannedFile], problems: [ScanProblem], settling: Int, settlingPaths: Set<String>)
        do { scan = try scanner.scan() } catch { throw .input("input.root \(AudioError.quoted(spec.input.root)) is not a readable folder") }
        summary.scanned = scan.files.count
        summary.settling = scan.settling
        summary.problems = scan.problems.map(\.description)
        let state: [String: RecordingState]
        do { state = try store?.loadAll() ?? [:] } catch { throw .state("\(error)") }
        var planner = Planner(job: job, state: state)
        planner.force = options.force
        planner.retryOnly = options.retryOnly
        if options.explain, let store { planner.recipeLookup = { try? store.recipe($0) } }
        var work: [RecordingPlan] = []
        let collisions = Self.outputCollisions(job: job, files: scan.files)
        var collided: [(ScannedFile, String)] = []
        for file in scan.files {
            if let message = collisions[file.relativePath] {
                if let prior = state[file.relativePath], prior.status == "failed", prior.identity == file.identity,
                   prior.failedRecipe == job.recipeFingerprint, !options.retryOnly, options.force == .none {
                    summary.knownFailures += 1  // reported once, not every cron run
                    continue
                }
                collided.append((file, message))
                if options.dryRun || options.explain { summary.plan.append("fail \(file.relativePath): \(message)") }
                continue
            }
            let p = planner.plan(file)
            switch p.action {
            case .skip: summary.skipped += 1
            case .knownFailure: summary.knownFailures += 1
            case .run(_, _, let reasons):
                work.append(p)
                if options.dryRun || options.explain {
                    summary.plan.append(options.explain ? "run \(file.relativePath): " + reasons.joined(separator: "; ") : "run \(file.relativePath)")
                }
            }
        }
        summary.planned = work.count
        if options.dryRun {
            if job.uploads.contains(where: { $0.config.prune }) {
                let present = Set(scan.files.map(\.relativePath)).union(scan.settlingPaths)
                for path in state.keys.sorted() where !present.contains(path) { summary.plan.append("prune \(path)") }
            }
            summary.finishedAt = Date()
            return summary
        }

        guard let store else { throw .state("not opened") }
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
        let workUploaders = uploaders
        // A folder or file the scan could not read may still exist: never prune on a partial scan.
        if scan.problems.isEmpty,
           let pruned = prune(state: state, present: Set(scan.files.map(\.relativePath)).union(scan.settlingPaths), store: store, uploaders: uploaders) {
            summary.pruned = pruned
        }
        let runId: Int64
        do { runId = try store.startRun(spec: spec.file, specName: spec.name) } catch { throw .state("\(error)") }
        let writer = StateWriter(store: store)
        for (file, message) in collided {
            let text = "\(AudioError.quoted(file.relativePath)): \(message)"
            writer.submit(.failed(path: file.relativePath, identity: file.identity, error: text, attempts: 1, recipe: job.recipeFingerprint))
            summary.results.append(RecordingResult(path: file.relativePath, status: .failed, duration: nil, seconds: 0, attempts: 1,
                                                   outputs: [], error: text, reasons: []))
            FileHandle.standardError.write(Data("segno: \(text)\n".utf8))
        }
        let progress = ProgressPrinter(mode: options.progress)
        progress.start(planned: work.count)

        // Execute: workers pull the next plan from a shared index.
        let next = Mutex(0)
        let results = Mutex<[RecordingResult]>([])
        let timeUp = Mutex(false)
        let deadline = options.maxTime.map { Date().addingTimeInterval($0) }
        let workers = max(1, min(options.parallel ?? spec.workers, max(1, work.count)))
        let group = DispatchGroup()
        let plans = work
        for _ in 0..<workers {
            group.enter()
            Thread.detachNewThread { [self] in
                defer { group.leave() }
                while true {
                    if stop.isStopped { return }
                    if let deadline, Date() >= deadline { timeUp.withLock { $0 = true }; return }
                    let i = next.withLock { n -> Int in defer { n += 1 }; return n }
                    if i >= plans.count { return }
                    let r = process(plans[i], writer: writer, progress: progress, uploaders: workUploaders)
                    results.withLock { $0.append(r) }
                }
            }
        }
        group.wait()
        progress.stop()
        do { try writer.flush() } catch { progress.error("segno: \(error)") }

        let workerResults = results.withLock { $0.count }
        summary.results = (summary.results + results.withLock { $0 }).sorted { $0.path < $1.path }
        for r in summary.results {
            switch r.status {
            case .done: summary.done += 1
            case .failed: summary.failed += 1
            case .interrupted: summary.interrupted += 1
            case .unchanged: summary.skipped += 1; summary.planned -= 1
            }
        }
        summary.notStarted = work.count - workerResults
        if let sig = stop.signal { summary.stop = .signal(sig) } else if timeUp.withLock({ $0 }) { summary.stop = .timeUp }
        summary.finishedAt = Date()
        let status: String
        switch summary.stop {
        case .signal: status = "interrupted"
        case .timeUp: status = "time-up"
        case .none: status = summary.failed > 0 ? "failures" : "done"
        }
        try? store.finishRun(id: runId, status: status, planned: summary.planned, done: summary.done,
                             failed: summary.failed, skipped: summary.skipped)
        return summary
    }

    /// Processes one recording with retries for transient failures. Called on a worker thread.
    func process(_ plan: RecordingPlan, writer: StateWriter, progress: ProgressPrinter, uploaders: [Uploader]) -> RecordingResult {
        guard case .run(let tapIndices, let uploadIndices, let reasons) = plan.action else { fatalError("only runnable plans are processed") }
        let started = Date()
        let priorAttempts = plan.prior?.status == "failed" ? plan.prior?.attempts ?? 0 : 0
        var attempt = 0
        var outcome = RecordingResult(path: plan.file.relativePath, status: .failed, duration: nil, seconds: 0,
                                      attempts: 0, outputs: [], error: nil, reasons: reasons)
        if job.spec.input.verify == .content, plan.prior?.status == "done", let known = plan.prior?.contentHash,
           reasons.allSatisfy({ $0.hasSuffix(": source changed") }),
           let now = try? FileHash.sha256(path: plan.file.absolutePath).digest, now == known {
            // Same bytes under new metadata (touched, copied): note the new identity, run nothing.
            writer.submit(.touched(path: plan.file.relativePath, identity: plan.file.identity))
            outcome.status = .unchanged
            outcome.seconds = Date().timeIntervalSince(started)
            progress.update { $0.planned -= 1 }
            return outcome
        }
        while true {
            attempt += 1
            do {
                let (update, duration, outputs) = try RecordingJob(job: job, plan: plan, tapIndices: tapIndices, uploadIndices: uploadIndices,
                                                                   uploaders: uploaders, stop: stop).run()
                writer.submit(update)
                outcome.status = .done
                outcome.duration = duration
                outcome.outputs = outputs
                progress.update { $0.done += 1; $0.audioSeconds += duration ?? 0 }
                break
            } catch is Interrupted {
                outcome.status = .interrupted
                break
            } catch {
                let transient = (error as? AudioError)?.isTransient ?? (error as? UploadError)?.isTransient ?? false
                if transient && attempt <= job.spec.retries && !stop.isStopped {
                    logger.info("retrying after a transient failure", metadata: ["file.path": "\(plan.file.relativePath)", "error": "\(error)"])
                    Thread.sleep(forTimeInterval: min(8, 0.25 * pow(2, Double(attempt - 1))))
                    continue
                }
                let message = "\(error)"
                outcome.error = message
                writer.submit(.failed(path: plan.file.relativePath, identity: plan.file.identity, error: message,
                                      attempts: priorAttempts + attempt, recipe: job.recipeFingerprint))
                progress.update { $0.failed += 1 }
                progress.error("segno: \(message)")
                break
            }
        }
        outcome.attempts = attempt
        outcome.seconds = Date().timeIntervalSince(started)
        return outcome
    }

    /// Recordings whose outputs would land on another recording's (`a.wav` and `a.flac` both
    /// writing `{stem}.flac`): the first in path order keeps the name, the others fail with a
    /// message. Only templates that need no decoding are checked (the rest are rare to collide).
    static func outputCollisions(job: Job, files: [ScannedFile]) -> [String: String] {
        let decodeVariables = ["duration", "rate", "channels", "title", "recorded", "zoom"]
        let templates = job.taps.filter { t in !decodeVariables.contains(where: { t.config.pathTemplate.uses($0) }) }
        guard !templates.isEmpty else { return [:] }
        var owner: [String: String] = [:]
        var out: [String: String] = [:]
        for f in files {
            let ctx = RecordingContext(sourcePath: f.absolutePath, relativePath: f.relativePath, modified: f.identity.modified,
                                       outputRoot: job.spec.outputRoot)
            for t in templates {
                guard let path = try? t.config.pathTemplate.resolve(ctx) else { continue }
                if let first = owner[path], first != f.relativePath {
                    out[f.relativePath] = "\(t.config.name) would write \(AudioError.quoted(String(path.dropFirst(job.spec.outputRoot.count + 1)))) like \(AudioError.quoted(first)); add {ext} or {dir} to \(t.config.pathTemplate.text)"
                    break
                }
                owner[path] = f.relativePath
            }
        }
        return out
    }

    /// `prune: true` on an upload: recordings whose source is gone lose their outputs, their
    /// uploaded objects and their state rows. Returns what was pruned (nil when prune is off).
    func prune(state: [String: RecordingState], present: Set<String>, store: StateStore, uploaders: [Uploader]) -> [String]? {
        guard job.uploads.contains(where: { $0.config.prune }) else { return nil }
        // An empty scan more likely means an unmounted folder than a deleted archive.
        guard !present.isEmpty else { return nil }
        // Files and objects a present recording still refers to are never deleted (two
        // recordings can share an upload key or, after a collision, an output).
        var kept = Set<String>()
        for (path, rec) in state where present.contains(path) {
            for step in rec.steps.values { kept.formUnion(step.outputs) }
        }
        var gone: [String] = []
        for (path, rec) in state where !present.contains(path) {
            var ok = true
            for step in rec.steps.values {
                if step.stage.hasPrefix("upload:") {
                    guard let i = job.uploads.firstIndex(where: { $0.identity == step.stage }), job.uploads[i].config.prune else { continue }
                    for uri in step.outputs where !kept.contains(uri) {
                        do { try uploaders[i].delete(uri: uri) } catch { ok = false; logger.info("prune failed", metadata: ["uri": "\(uri)", "error": "\(error)"]) }
                    }
                } else {
                    for rel in step.outputs where !kept.contains(rel) { unlink(job.spec.outputRoot + "/" + rel) }
                }
            }
            if ok { gone.append(path) }
        }
        try? store.forget(paths: gone)
        return gone.sorted()
    }

    /// Deletes `.segno-tmp-*` files left by a killed run. Called under the run lock, before work starts.
    static func removeTemporaries(under root: String) {
        guard let e = FileManager.default.enumerator(atPath: root) else { return }
        while let rel = e.nextObject() as? String {
            let name = (rel as NSString).lastPathComponent
            if name.hasPrefix(OutputFile.tempPrefix) { unlink(root + "/" + rel) }
        }
    }
}
