import Crypto
import Foundation
import SegnoDSP

/// A transform whose running state can be written between two blocks and taken up by a fresh
/// instance (decision 0095): a long recording's checkpoint holds it, and a resumed run starts the
/// chain's leading such transforms where they stood instead of at the recording's start.
public protocol CheckpointingTransform: Transform {
    /// Writes the state after the last block processed. Called between two blocks, on the thread
    /// that runs the transform, every `CheckpointRule.intervalSeconds` of source audio.
    func save(into w: inout StateBytes.Writer)
    /// Takes what `save` wrote. Called once on a fresh instance, after `start` (with the same
    /// format) and before its first block; throws `StateBytes.Mismatch` when the bytes do not fit.
    func restore(from r: inout StateBytes.Reader) throws
}

/// A decoder that can begin at any frame, giving from there exactly the blocks an unbroken read
/// would have given (PCM, FLAC): what a resumed checkpoint needs of its source.
public protocol ExactSeeking: AudioDecoder {
    /// True when `seek` lands exactly and every read after it fills whole blocks as before.
    var seeksExactly: Bool { get }
    /// Positions the stream at source frame `frame`. Called once, before the first read.
    func seek(toFrame frame: Int) throws
}

/// Where a long recording keeps its checkpoint and what it must match (decision 0095). Made by
/// the runner for each recording `CheckpointRule` admits; `ChainRecipe` uses it.
public struct CheckpointPlan: Sendable {
    /// The recording's own folder: `checkpoint` (the record) and `stream` (the kept stream).
    public var folder: String
    /// What a checkpoint must have been written for (source identity, every stage and output
    /// path, the state formats); a checkpoint for anything else is discarded.
    public var key: String
    /// Source seconds between two checkpoints.
    public var intervalSeconds: Double
    public init(folder: String, key: String, intervalSeconds: Double = CheckpointRule.intervalSeconds) {
        self.folder = folder
        self.key = key
        self.intervalSeconds = intervalSeconds
    }

    /// The recording's checkpoint folder under the output root's `.segno` folder: one per
    /// recording path, named by a digest of its bytes.
    public static func folder(outputRoot: String, relativePath: String) -> String {
        let digest = SHA256.hash(data: Data(relativePath.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
        return outputRoot + "/.segno/" + CheckpointRule.folderName + "/" + digest
    }

    /// Removes the recording's checkpoint (its two files and its folder): the recording's pass
    /// ended, or the checkpoint fits no longer. Only segno's own names are removed.
    public func discard() {
        for name in [CheckpointingDecoder.recordName, CheckpointingDecoder.recordName + ".new", CheckpointingDecoder.streamName] {
            unlink(folder + "/" + name)
        }
        rmdir(folder)
    }

    /// Removes the checkpoints under `outputRoot` whose files were all last written before
    /// `before` (recordings deleted or renamed since, or whose chain no longer keeps checkpoints).
    /// Called at the end of a run that left nothing for the next (every planned recording
    /// finished), with the run's start. Returns how many were removed.
    @discardableResult
    public static func sweep(outputRoot: String, before: Date) -> Int {
        let root = outputRoot + "/.segno/" + CheckpointRule.folderName
        var removed = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] {
            let plan = CheckpointPlan(folder: root + "/" + name, key: "")
            let names = [CheckpointingDecoder.recordName, CheckpointingDecoder.recordName + ".new", CheckpointingDecoder.streamName]
            let stale = names.allSatisfy { n in
                var st = stat()
                guard lstat(plan.folder + "/" + n, &st) == 0 else { return true }
                return Double(st.st_mtim.tv_sec) < before.timeIntervalSince1970
            }
            if stale {
                plan.discard()
                removed += 1
            }
        }
        rmdir(root)
        return removed
    }
}

/// What a checkpoint record says: where the source stood, how much of the kept stream it vouches
/// for, and the leading transforms' states.
struct SavedCheckpoint {
    var sourceFrames: Int
    var blocks: Int
    var streamBytes: Int64
    var channels: Int
    var states: [[UInt8]]

    static let magic = Array("segno-checkpoint".utf8)

    func encoded(key: String) -> [UInt8] {
        var w = StateBytes.Writer()
        w.data(Self.magic)
        w.data(Array(key.utf8))
        w.int(sourceFrames)
        w.int(blocks)
        w.int(Int(streamBytes))
        w.int(channels)
        w.int(states.count)
        for s in states { w.data(s) }
        return w.bytes
    }

    /// The record in `bytes` when it was written for `key` with `transforms` states; nil otherwise.
    static func decode(_ bytes: [UInt8], key: String, transforms: Int) -> SavedCheckpoint? {
        var r = StateBytes.Reader(bytes)
        guard (try? r.data("magic")) == magic, (try? r.data("key")) == Array(key.utf8),
              let sourceFrames = try? r.int(), let blocks = try? r.int(), let stream = try? r.int(),
              let channels = try? r.int(), let count = try? r.int(), count == transforms,
              sourceFrames > 0, blocks > 0, stream > 0, channels > 0 else { return nil }
        var states: [[UInt8]] = []
        for _ in 0..<count {
            guard let s = try? r.data("state") else { return nil }
            states.append(s)
        }
        guard r.atEnd else { return nil }
        return SavedCheckpoint(sourceFrames: sourceFrames, blocks: blocks, streamBytes: Int64(stream), channels: channels, states: states)
    }
}

/// The source of a checkpointed pass (decision 0095): decodes, runs the chain's leading
/// checkpointing transforms (`ahead`) on each block, keeps every block they make in the recording's
/// checkpoint stream, and every `intervalSeconds` of source writes a checkpoint record (their
/// states, the source position, the stream's length). `StageChain` pushes its blocks on from the
/// element after `ahead`, as for `PrefetchingDecoder`.
///
/// Resuming: when the folder holds a record for the same key, the first `read` restores the
/// transforms' states, positions the source after the frames the record names, and first hands
/// out the kept stream's blocks (replayed to the rest of the chain: the taps, `normalize` and
/// whatever follows it run from the recording's start), then decoded blocks. Each block is the
/// very block of the unbroken pass, so the outputs are byte-identical. If the stream cannot be
/// written (a full disk), checkpoints stop for this recording with a note and the pass goes on.
final class CheckpointingDecoder: AudioDecoder, TransformingDecoder {
    static let recordName = "checkpoint"
    static let streamName = "stream"

    private let inner: any ExactSeeking
    private let transforms: [any CheckpointingTransform]
    private let plan: CheckpointPlan
    private let recording: String
    let info: SourceInfo
    private var stream: BlockSpool?
    private var saved: SavedCheckpoint?
    private var begun = false
    private var replaying = false
    private var sourceFrames = 0
    private var blocks = 0
    private let blocksPerCheckpoint: Int
    private var ownNotes: [String] = []

    /// The whole lead: the first `innerAhead` of them run in the read-ahead under it (split).
    var aheadCount: Int { transforms.count }
    /// How many of `transforms` the decoder under it runs (the split's first transform).
    private var innerAhead: Int { (inner as? any TransformingDecoder)?.aheadCount ?? 0 }
    var notes: [String] { ownNotes + inner.notes }
    var salvage: SalvageReport? { inner.salvage }

    /// Reads the recording's checkpoint when there is one for `plan.key` (else clears the folder).
    init(_ inner: any ExactSeeking, transforms: [any CheckpointingTransform], plan: CheckpointPlan, recording: String, blockFrames: Int) {
        self.inner = inner
        self.transforms = transforms
        self.plan = plan
        self.recording = recording
        self.info = inner.info
        blocksPerCheckpoint = max(1, Int((plan.intervalSeconds * Double(max(1, inner.info.sampleRate)) / Double(blockFrames)).rounded(.up)))
        if let bytes = FileManager.default.contents(atPath: plan.folder + "/" + Self.recordName) {
            saved = SavedCheckpoint.decode(Array(bytes), key: plan.key, transforms: transforms.count)
            if saved == nil { plan.discard() }
        }
    }

    func close() { inner.close() }
    /// Stops the read-ahead under it, when split.
    func stop() { (inner as? any TransformingDecoder)?.stop() }

    /// Called on the first read, after the chain started every transform.
    private func begin() throws {
        begun = true
        let prefetcher = inner as? PrefetchingDecoder
        guard let s = saved else {
            prefetcher?.keepAheadStates(every: blocksPerCheckpoint, from: 0)
            return
        }
        saved = nil
        do {
            var st = stat()
            let path = plan.folder + "/" + Self.streamName
            guard stat(path, &st) == 0, Int64(st.st_size) >= s.streamBytes else { throw StateBytes.Mismatch("the kept stream is shorter than its checkpoint") }
            for (t, bytes) in zip(transforms, s.states) {
                var r = StateBytes.Reader(bytes)
                try t.restore(from: &r)
                guard r.atEnd else { throw StateBytes.Mismatch("a transform's state is longer than it reads") }
            }
            try inner.seek(toFrame: s.sourceFrames)
            prefetcher?.keepAheadStates(every: blocksPerCheckpoint, from: s.blocks)
            stream = try BlockSpool(path: path, channels: s.channels, recording: recording, keeping: s.streamBytes)
        } catch {
            // Nothing was read yet: the transforms were only restored, so start afresh.
            throw CheckpointUnusable(recording: recording, reason: "\(error)")
        }
        replayEnd = s.streamBytes
        replaying = true
        blocks = s.blocks
        let at = SplitRule.duration(Double(s.sourceFrames) / Double(max(1, info.sampleRate)))
        ownNotes.append("resumed at \(at) from its checkpoint: the first \(transforms.count == 1 ? "stage starts" : "\(transforms.count) stages start") there, the rest of the chain replays the kept stream")
    }
    private var replayEnd: Int64 = 0

    func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        if !begun { try begin() }
        if replaying, let stream {
            if stream.offset < replayEnd, let made = try stream.read(into: &block) {
                let n = made - sourceFrames
                sourceFrames = made
                return n
            }
            replaying = false
        }
        let n = try inner.read(into: &block, maxFrames: maxFrames)
        if n == 0 { return 0 }
        sourceFrames += n
        for t in transforms.dropFirst(innerAhead) { try t.process(&block) }
        blocks += 1
        keep(block)
        return n
    }

    /// Appends `block` to the kept stream and writes a record every `blocksPerCheckpoint` blocks.
    private func keep(_ block: AudioBlock) {
        guard !stopped else { return }
        do {
            if stream == nil {
                try FileManager.default.createDirectory(atPath: plan.folder, withIntermediateDirectories: true)
                stream = try BlockSpool(path: plan.folder + "/" + Self.streamName, channels: block.channels, recording: recording, keeping: 0)
            }
            guard let stream else { return }
            try stream.write(block, sourceFrames: sourceFrames)
            if blocks % blocksPerCheckpoint == 0 {
                let ahead = innerAhead
                // The read-ahead saved its transforms' states when it made this block.
                guard let first = ahead == 0 ? [] : (inner as? PrefetchingDecoder)?.aheadStates(after: blocks) else { return }
                try stream.sync()
                let states = first + transforms.dropFirst(ahead).map { t in
                    var w = StateBytes.Writer()
                    t.save(into: &w)
                    return w.bytes
                }
                let record = SavedCheckpoint(sourceFrames: sourceFrames, blocks: blocks, streamBytes: stream.offset,
                                             channels: stream.channels, states: states)
                try Self.writeRecord(record.encoded(key: plan.key), folder: plan.folder)
            }
        } catch {
            stopped = true
            stream = nil
            plan.discard()
            ownNotes.append("checkpoints stopped, the pass goes on without them: \(error)")
        }
    }
    private var stopped = false

    /// Writes the record under a temporary name, puts it on the disk, then renames it over the last.
    private static func writeRecord(_ bytes: [UInt8], folder: String) throws {
        let tmp = folder + "/" + recordName + ".new"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd < 0 { throw AudioError.system(folder, "cannot write a checkpoint", errno: errno) }
        defer { Glibc.close(fd) }
        let failure = bytes.withUnsafeBufferPointer { OutputFile.writeAll(fd, $0) }
        if failure != 0 { throw AudioError.system(folder, "cannot write a checkpoint", errno: failure) }
        if fdatasync(fd) != 0 || rename(tmp, folder + "/" + recordName) != 0 {
            throw AudioError.system(folder, "cannot write a checkpoint", errno: errno)
        }
    }
}

/// A checkpoint that was found but cannot be taken up (its stream cut short, a state that does
/// not fit): `ChainRecipe` discards it and runs the recording from its start.
struct CheckpointUnusable: Error, CustomStringConvertible {
    var recording: String
    var reason: String
    var description: String { "\(AudioError.quoted(recording)): checkpoint not used: \(reason)" }
}

/// A decoder that runs the chain's first transforms itself (`PrefetchingDecoder`,
/// `CheckpointingDecoder`): `StageChain` pushes its blocks on from the element after them.
package protocol TransformingDecoder: AudioDecoder {
    /// How many of the chain's first transforms the decoder ran on each block.
    var aheadCount: Int { get }
    /// Ends any thread of its own. Called once the pass stopped reading it.
    func stop()
}
