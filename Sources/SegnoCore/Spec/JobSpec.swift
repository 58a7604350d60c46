import Foundation

/// A loaded, fully checked job spec (version 1). Immutable; shared by all workers.
public struct JobSpec: Sendable {
    /// How the runner decides that a source changed.
    public enum Verify: String, Sendable, CaseIterable {
        /// Size, modification time and inode.
        case metadata
        /// As `metadata`, but when those change the content's SHA-256 decides (a touched or
        /// copied file with the same bytes is not processed again).
        case content
    }

    /// Where recordings come from.
    public struct Input: Sendable {
        /// Absolute folder scanned recursively.
        public var root: String
        public var include: [Glob]
        public var exclude: [Glob]
        /// Files modified less than this many seconds ago are skipped (still being written).
        public var settle: Double
        /// Follow symbolic links to folders (never in a loop).
        public var followLinks: Bool
        public var verify: Verify
        /// For `root: s3://bucket/prefix/`: the S3 endpoint and region (else the environment's).
        public var endpoint: URL? = nil
        public var region: String? = nil

        /// True when the recordings are objects under an `s3://` prefix rather than files.
        public var isObjectStore: Bool { root.hasPrefix("s3://") }

        /// Stations to record (`input.streams` + `input.record`); nil for a plain folder. When set,
        /// `root` is the capture folder, which the run scans while it records.
        public var streams: StreamInput? = nil

        /// `input.damaged`: fail a damaged recording (default) or process what salvage recovers.
        public var damaged: DamagedPolicy = .fail
        /// `input.reference`: absolute path of a healthy recording from the same recorder, whose
        /// index settings rebuild a damaged MP4's missing index; nil without one.
        public var reference: String? = nil

        /// Every stored property: the initializer the other modules of segno use.
        package init(root: String, include: [Glob], exclude: [Glob], settle: Double, followLinks: Bool, verify: Verify, endpoint: URL? = nil, region: String? = nil, streams: StreamInput? = nil, damaged: DamagedPolicy = .fail, reference: String? = nil) {
            self.root = root
            self.include = include
            self.exclude = exclude
            self.settle = settle
            self.followLinks = followLinks
            self.verify = verify
            self.endpoint = endpoint
            self.region = region
            self.streams = streams
            self.damaged = damaged
            self.reference = reference
        }
    }

    /// `input.settle` when the spec does not say: 10 s, so a file a recorder is still writing is
    /// picked up by a later run rather than failed.
    public static let defaultSettle = 10.0

    /// Worker counts `parallel` and `--parallel` accept.
    public static let parallelRange = 1...256

    /// One stage as written in the spec, with its place for messages.
    public struct Placed: Sendable {
        public var config: any StageConfig
        /// `stages[3]`
        public var keyPath: String
        public var line: Int
        /// The column of the stage's key (1-based; 0 when unknown).
        public var column: Int = 0
    }

    /// The spec file (as given).
    public var file: String
    public var name: String
    public var input: Input
    /// Absolute output folder; every output stays inside it.
    public var outputRoot: String
    /// Absolute path of the SQLite state database.
    public var statePath: String
    /// Worker count; nil = active processors.
    public var parallel: Int?
    /// `split:`: whether a long recording may use more than one core (`SplitRule`, decision 0085).
    public var split: SplitMode = .auto
    /// `checkpoints:`: whether long recordings keep checkpoints (`CheckpointRule`, decision 0095).
    public var checkpoints: CheckpointMode = .auto
    /// Extra attempts per recording for transient (I/O) failures.
    public var retries: Int
    /// With PostgreSQL state: seconds a worker's claim lasts without its heartbeat (`lease:`, 60 s).
    public var leaseSeconds: Double = 60

    /// `state: { shared_folder: true }`: the SQLite store's folder may be group-writable and its
    /// files owned by other members of the folder's group (`StateFolderTrust`).
    public var sharedStateFolder = false

    /// True when `state:` is a PostgreSQL URL (many machines) rather than a SQLite file.
    public var stateIsShared: Bool { statePath.hasPrefix("postgres://") || statePath.hasPrefix("postgresql://") }
    /// Stages in order.
    public var stages: [Placed]
    /// Absolute path of the HTML report written at the end of every run (`report.path`); nil for none.
    public var reportPath: String? = nil
    /// Each tap kind's declaration, from the registry the spec was loaded with: how the report
    /// learns what a recorded step contributes (its capabilities) without naming its stage.
    public var tapDeclarations: [String: StageDeclaration] = [:]

    /// Worker count to use when the command line does not say.
    public var workers: Int { parallel ?? ProcessInfo.processInfo.activeProcessorCount }

    /// Default include patterns: every extension segno can decode.
    public static let defaultInclude = ["**/*.{wav,wave,bwf,rf64,w64,aif,aiff,aifc,caf,flac,ogg,oga,opus,mp3,m4a,mp4,3gp,3g2,aac,amr,awb,webm,weba,mka}"]
    /// Default exclude patterns: hidden files and folders.
    public static let defaultExclude = ["**/.*"]
}
