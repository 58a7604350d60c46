import Foundation

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
    /// What salvage recovered and lost (`damaged: salvage`); nil when the recording was read whole.
    public var salvaged: JSONValue? = nil
    /// True when the recording ran on more than one core (`SplitRule`, decision 0085).
    public var split = false

    /// Every stored property: the initializer the other modules of segno use.
    package init(path: String, status: Status, duration: Double? = nil, seconds: Double, attempts: Int, outputs: [String], error: String? = nil, failureClass: FailureClass? = nil, reasons: [String], salvaged: JSONValue? = nil) {
        self.path = path
        self.status = status
        self.duration = duration
        self.seconds = seconds
        self.attempts = attempts
        self.outputs = outputs
        self.error = error
        self.failureClass = failureClass
        self.reasons = reasons
        self.salvaged = salvaged
    }
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
    /// The settling recordings' relative paths (sorted), for `--explain`.
    public var settlingPaths: [String] = []
    public var notStarted = 0
    /// Recordings not started or interrupted that the next plain run will take up: those only
    /// `--force` made run (`RecordingPlan.forcedOnly`) are up to date for it, and not counted.
    public var leftForNextRun = 0
    /// Recordings of this run that are partly done (some taps or uploads finished, others failed):
    /// counted in `failed` (the exit code), named "partly done" as `status` names them.
    public var partial: Int { results.filter { $0.status == .partial }.count }
    /// Recordings whose sources disappeared and whose outputs and uploads were deleted (`prune`).
    public var pruned: [String] = []
    /// Why `prune` deleted nothing this run although sources are gone (over `prune_limit`…).
    public var pruneHeld: String?
    /// What `prune` kept because it cannot prove segno wrote it (one line for the run), or nil.
    public var pruneRefused: String?
    /// Scanned files that are outputs segno recorded: never taken as input.
    public var ownOutputs: [String] = []
    public var stop: Stop = .none
    public var results: [RecordingResult] = []
    public var problems: [String] = []
    /// `--dry-run` / `--explain` lines (`RunPlan.lines`).
    public var plan: TextList = []
    /// The HTML report written after the run (`report.path`), or why it could not be written.
    public var report: Result<String, ReportFailure>?
    public var startedAt = Date()
    public var finishedAt = Date()
    /// Stations that could not be recorded (stream input), one line each: the run exits 1.
    public var captureFailures: [String] = []
    /// With a shared store: the statements sent to it while recordings were claimed, processed and
    /// recorded (claims, results, heartbeats, releases) and the seconds spent waiting for them.
    public var stateStatements: (count: Int, seconds: Double)?

    /// Adds a later pass of the same run (stream capture): results and counts add up; what the
    /// last pass found up to date stays, less what earlier passes did.
    mutating package func merge(_ s: RunSummary) {
        let earlier = Set(results.filter { $0.status == .done }.map(\.path))
        scanned = s.scanned
        planned += s.planned
        done += s.done
        failed += s.failed
        skipped = max(0, s.skipped - earlier.count)
        knownFailures = s.knownFailures
        interrupted += s.interrupted
        settling = s.settling
        notStarted = s.notStarted
        leftForNextRun = s.leftForNextRun
        pruned += s.pruned
        pruneHeld = s.pruneHeld ?? pruneHeld
        pruneRefused = s.pruneRefused ?? pruneRefused
        ownOutputs = s.ownOutputs
        if s.stop != .none { stop = s.stop }
        results += s.results
        problems = s.problems
        plan += s.plan
        finishedAt = s.finishedAt
    }

    /// Every stored property: the initializer the other modules of segno use.
    package init(settlingPaths: [String] = [], pruned: [String] = [], pruneHeld: String? = nil, ownOutputs: [String] = [], stop: Stop = .none, results: [RecordingResult] = [], problems: [String] = [], plan: TextList = [], report: Result<String, ReportFailure>? = nil, captureFailures: [String] = [], stateStatements: (count: Int, seconds: Double)? = nil) {
        self.settlingPaths = settlingPaths
        self.pruned = pruned
        self.pruneHeld = pruneHeld
        self.ownOutputs = ownOutputs
        self.stop = stop
        self.results = results
        self.problems = problems
        self.plan = plan
        self.report = report
        self.captureFailures = captureFailures
        self.stateStatements = stateStatements
    }
}

/// Why the run's HTML report was not written (the run itself is unaffected).
public struct ReportFailure: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    /// Every stored property: the initializer the other modules of segno use.
    package init(message: String) {
        self.message = message
    }
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

    /// The message for a person who ran `segno … SPEC`: the `state rebuild` hint names `spec`,
    /// the spec path as given (shell-quoted when it needs it).
    public func message(spec: String) -> String {
        guard case .stateLost = self else { return description }
        return description.replacingOccurrences(of: "`segno state rebuild SPEC`", with: "`segno state rebuild \(ReportData.shellQuoted(spec))`")
    }
}
