import Foundation

/// Everything a run decided before any audio flows: what runs, what is skipped and why, what
/// fails without running (collisions), what is pruned. `--dry-run` prints it; the real run
/// executes it — one decision code for both (DESIGN.md §4).
public struct RunPlan: Sendable {
    /// Recordings to process, in path order.
    public var work: [RecordingPlan] = []
    public var upToDate = 0
    public var knownFailures = 0
    /// With `verify: content`: touched files whose bytes are unchanged (noted, not processed).
    public var unchanged: [ScannedFile] = []
    /// Recordings that fail without running: they would write another recording's output (spec),
    /// or their names are not text (input).
    public var refused: [(file: ScannedFile, message: String, failureClass: FailureClass)] = []
    /// Scanned files that are outputs segno recorded: never taken as input.
    public var ownOutputs: [String] = []
    /// Recordings whose sources are gone and whose outputs `prune` deletes in this run.
    public var prune: [String] = []
    /// Why pruning is held back this run, when it is (over the limit, partial scan…).
    public var pruneHeld: String?
    /// `run PATH`, `fail PATH: …`, `prune PATH` lines for `--dry-run` / `--explain`.
    public var lines: TextList = []

    /// Every stored property: the initializer the other modules of segno use.
    package init(work: [RecordingPlan] = [], unchanged: [ScannedFile] = [], refused: [(file: ScannedFile, message: String, failureClass: FailureClass)] = [], ownOutputs: [String] = [], prune: [String] = [], pruneHeld: String? = nil, lines: TextList = []) {
        self.work = work
        self.unchanged = unchanged
        self.refused = refused
        self.ownOutputs = ownOutputs
        self.prune = prune
        self.pruneHeld = pruneHeld
        self.lines = lines
    }
}

