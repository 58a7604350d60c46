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

/// A transform whose state no API hands out, but which a fresh instance rebuilds exactly
/// (decision 0100): started at an input frame on its grid (a multiple of `RestartGrid.period`)
/// and fed the same stream from there, after `RestartGrid.warmUp` input frames it gives the very
/// samples, and holds the very state, of the unbroken pass (libsoxr's converter). A checkpoint
/// keeps where it must arrive (`saveArrival`); a resumed pass restarts it that much earlier and
/// checks that it arrived (`checkArrival`).
public protocol RestartingTransform: Transform {
    /// The stage's name, for notes.
    var name: String { get }
    /// The grid a fresh instance may start on, or nil when none was found (no checkpoint then).
    /// Called once, after `start` and before the first block, with the source's rate (nil too
    /// when the transform does not see the source's frames one for one). May take a second:
    /// the grid is found by trying.
    func restartGrid(sourceRate: Int) -> RestartGrid?
    /// Writes where the pass stands after the last block (frames in and out, its last samples).
    /// Called between two blocks, for a checkpoint.
    func saveArrival(into w: inout StateBytes.Writer)
    /// Takes what `saveArrival` wrote, on a fresh instance after `start`, and counts from input
    /// frame `frame` (on the grid): it is then fed the stream from there up to the arrival.
    func restart(at frame: Int, arrival r: inout StateBytes.Reader) throws
    /// Throws `StateBytes.Mismatch` unless the restarted pass stands where `saveArrival` said.
    /// Called once it was fed up to the arrival frame.
    func checkArrival() throws
}

/// Where a `RestartingTransform` can start afresh: any multiple of `period` input frames, and
/// `warmUp` input frames later its output is the unbroken pass's.
public struct RestartGrid: Sendable, Equatable {
    public var period: Int
    public var warmUp: Int
    public init(period: Int, warmUp: Int) {
        self.period = period
        self.warmUp = warmUp
    }

    /// The frame a resume restarts from to arrive at source frame `frame`: the last grid point at
    /// least `warmUp` before it (0 at the latest).
    public func start(before frame: Int) -> Int { max(0, (frame - warmUp) / period * period) }
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
/// for, and the leading transforms' states. With a restarting transform (decision 0100) the
/// states of the transforms before it were taken at `restartFrames`, and `arrival` says where it
/// stood at `sourceFrames`; without one, `restartFrames == sourceFrames` and `arrival` is empty.
struct SavedCheckpoint {
    var sourceFrames: Int
    var restartFrames: Int
    var blocks: Int
    var streamBytes: Int64
    var channels: Int
    var states: [[UInt8]]
    var arrival: [UInt8]

    static let magic = Array("segno-checkpoint".utf8)

    func encoded(key: String) -> [UInt8] {
        var w = StateBytes.Writer()
        w.data(Self.magic)
        w.data(Array(key.utf8))
        w.int(sourceFrames)
        w.int(restartFrames)
        w.int(blocks)
        w.int(Int(streamBytes))
        w.int(channels)
        w.int(states.count)
        for s in states { w.data(s) }
        w.data(arrival)
        // A digest of all that: a record damaged on the disk is refused, not restored (a state
        // read back wrong could otherwise stop every later run at the same recording).
        return w.bytes + Array(SHA256.hash(data: w.bytes))
    }

    /// The record in `bytes` when it was written for `key` with `transforms` states; nil otherwise.
    static func decode(_ bytes: [UInt8], key: String, transforms: Int) -> SavedCheckpoint? {
        let digestSize = SHA256.byteCount
        guard bytes.count > digestSize, Array(SHA256.hash(data: bytes.dropLast(digestSize))) == Array(bytes.suffix(digestSize)) else { return nil }
        var r = StateBytes.Reader(Array(bytes.dropLast(digestSize)))
        guard (try? r.data("magic")) == magic, (try? r.data("key")) == Array(key.utf8),
              let sourceFrames = try? r.int(), let restartFrames = try? r.int(), let blocks = try? r.int(),
              let stream = try? r.int(), let channels = try? r.int(), let count = try? r.int(), count == transforms,
              sourceFrames > 0, (0...sourceFrames).contains(restartFrames), blocks > 0, stream > 0, channels > 0 else { return nil }
        var states: [[UInt8]] = []
        for _ in 0..<count {
            guard let s = try? r.data("state") else { return nil }
            states.append(s)
        }
        guard let arrival = try? r.data("arrival"), r.atEnd else { return nil }
        return SavedCheckpoint(sourceFrames: sourceFrames, restartFrames: restartFrames, blocks: blocks, streamBytes: Int64(stream),
                               channels: channels, states: states, arrival: arrival)
    }
}

/// Each transform's state as `CheckpointingTransform.save` writes it (empty for one that keeps
/// none). Called between two blocks, on the thread that runs them.
func savedStates<S: Sequence>(_ transforms: S) -> [[UInt8]] where S.Element == any Transform {
    transforms.map { t in
        var w = StateBytes.Writer()
        (t as? any CheckpointingTransform)?.save(into: &w)
        return w.bytes
    }
}

/// Runs `transforms` over `block`, saving their states after its first `offset` frames: the two
/// parts go through them one after the other and are joined again (a checkpointing transform gives
/// the same samples however the stream is cut into blocks). Returns the states, or nil when a
/// transform changed a part's frame count (the states would then not stand at `offset`). Called
/// once per checkpoint; `scratch` is reused.
func processSaving(_ transforms: [any Transform], _ block: inout AudioBlock, at offset: Int, scratch: inout AudioBlock) throws -> [[UInt8]]? {
    let n = block.frames
    precondition((0...n).contains(offset))
    scratch.reset(channels: block.channels, capacity: n - offset)
    let ch = block.channels
    for i in 0..<((n - offset) * ch) { scratch.samples[i] = block.samples[offset * ch + i] }
    scratch.frames = n - offset
    block.frames = offset
    if offset > 0 { for t in transforms { try t.process(&block) } }
    let states = savedStates(transforms)
    if scratch.frames > 0 { for t in transforms { try t.process(&scratch) } }
    let preserved = block.frames == offset && scratch.frames == n - offset
    let head = block.frames
    if scratch.frames > 0 {
        if head == 0 { block.channels = scratch.channels }
        block.reserve(frames: head + scratch.frames)
        let c = block.channels
        for i in 0..<(scratch.frames * c) { block.samples[head * c + i] = scratch.samples[i] }
        block.frames = head + scratch.frames
    }
    return preserved ? states : nil
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
///
/// A restarting transform in the lead (decision 0100, libsoxr's converter): the transforms before
/// it save their states at the grid point a warm-up before each checkpoint (`RestartGrid.start`),
/// splitting that block in two; a resume decodes from there, feeds the restarted transform up to
/// the checkpoint, discards what it made (the kept stream has it), checks it arrived, and goes on.
final class CheckpointingDecoder: AudioDecoder, TransformingDecoder {
    static let recordName = "checkpoint"
    static let streamName = "stream"

    private let inner: any ExactSeeking
    /// The lead: the checkpointing transforms, with a restarting one among them (at `restartIndex`).
    private let transforms: [any Transform]
    private let restarting: (any RestartingTransform)?
    private let restartIndex: Int
    private let plan: CheckpointPlan
    private let recording: String
    private let blockFrames: Int
    let info: SourceInfo
    private var stream: BlockSpool?
    private var saved: SavedCheckpoint?
    private var begun = false
    private var replaying = false
    private var sourceFrames = 0
    private var blocks = 0
    private let blocksPerCheckpoint: Int
    private var ownNotes: [String] = []
    /// The restarting transform's grid, once `begin` asked it (nil: it has none, or there is no such transform).
    private var grid: RestartGrid?
    /// States of the transforms this decoder runs before the restarting one, taken at the restart
    /// point of the checkpoint after block `key`.
    private var restartStates: [Int: [[UInt8]]] = [:]
    private var scratch = AudioBlock(channels: 1)

    /// The whole lead: the first `innerAhead` of them run in the read-ahead under it (split).
    var aheadCount: Int { transforms.count }
    /// How many of `transforms` the decoder under it runs (the split's first transforms).
    private var innerAhead: Int { (inner as? any TransformingDecoder)?.aheadCount ?? 0 }
    var notes: [String] { ownNotes + inner.notes }
    var salvage: SalvageReport? { inner.salvage }

    /// Reads the recording's checkpoint when there is one for `plan.key` (else clears the folder).
    /// `transforms` are the lead, each checkpointing or (one of them) restarting.
    init(_ inner: any ExactSeeking, transforms: [any Transform], plan: CheckpointPlan, recording: String, blockFrames: Int) {
        self.inner = inner
        self.transforms = transforms
        restartIndex = transforms.firstIndex { $0 is any RestartingTransform } ?? transforms.count
        restarting = restartIndex < transforms.count ? transforms[restartIndex] as? any RestartingTransform : nil
        self.plan = plan
        self.recording = recording
        self.blockFrames = blockFrames
        self.info = inner.info
        blocksPerCheckpoint = max(1, Int((plan.intervalSeconds * Double(max(1, inner.info.sampleRate)) / Double(blockFrames)).rounded(.up)))
        if let bytes = FileManager.default.contents(atPath: plan.folder + "/" + Self.recordName) {
            saved = SavedCheckpoint.decode(Array(bytes), key: plan.key, transforms: transforms.count)
            if saved == nil { plan.discard() }
        }
    }

    func close() {
        settle()
        inner.close()
    }
    /// Stops the read-ahead under it, when split.
    func stop() { (inner as? any TransformingDecoder)?.stop() }

    /// Where a resume restarts for the checkpoint after block `b`: the grid point a warm-up
    /// before it, or the checkpoint itself without a restarting transform.
    private func restartFrame(forCheckpointAfter b: Int) -> Int {
        grid?.start(before: b * blockFrames) ?? b * blockFrames
    }

    /// Called on the first read, after the chain started every transform.
    private func begin() throws {
        begun = true
        let prefetcher = inner as? PrefetchingDecoder
        if let restarting {
            grid = restarting.restartGrid(sourceRate: info.sampleRate)
            let interval = Double(blocksPerCheckpoint * blockFrames)
            if let g = grid, Double(g.period + g.warmUp) * 2 > interval { grid = nil }
            if grid == nil {
                stopped = true
                saved = nil
                plan.discard()
                ownNotes.append("no checkpoints: \(restarting.name) found no grid to start again on within \(SplitRule.duration(interval / 2 / Double(max(1, info.sampleRate)))) of a checkpoint, or does not see the source's frames one for one")
            }
        }
        guard let s = saved else {
            prefetcher?.keepAheadStates(every: stopped ? 0 : blocksPerCheckpoint, from: 0, grid: grid)
            return
        }
        saved = nil
        do {
            var st = stat()
            let path = plan.folder + "/" + Self.streamName
            guard stat(path, &st) == 0, Int64(st.st_size) >= s.streamBytes else { throw StateBytes.Mismatch("the kept stream is shorter than its checkpoint") }
            for (t, bytes) in zip(transforms, s.states) {
                guard let c = t as? any CheckpointingTransform else { continue }
                var r = StateBytes.Reader(bytes)
                try c.restore(from: &r)
                guard r.atEnd else { throw StateBytes.Mismatch("a transform's state is longer than it reads") }
            }
            if let restarting {
                guard let g = grid, s.restartFrames % g.period == 0 else {
                    throw StateBytes.Mismatch("\(restarting.name) cannot start at frame \(s.restartFrames)")
                }
                var r = StateBytes.Reader(s.arrival)
                try restarting.restart(at: s.restartFrames, arrival: &r)
                guard r.atEnd else { throw StateBytes.Mismatch("\(restarting.name)'s arrival is longer than it reads") }
                try inner.seek(toFrame: s.restartFrames)
                prefetcher?.keepAheadStates(every: blocksPerCheckpoint, from: s.restartFrames / blockFrames, grid: grid)
                try warmUp(from: s.restartFrames, to: s.sourceFrames, blocks: s.blocks)
                try restarting.checkArrival()
            } else {
                guard s.restartFrames == s.sourceFrames else { throw StateBytes.Mismatch("a restart frame without a transform that restarts") }
                try inner.seek(toFrame: s.sourceFrames)
                prefetcher?.keepAheadStates(every: blocksPerCheckpoint, from: s.blocks, grid: nil)
            }
            stream = try BlockSpool(path: path, channels: s.channels, recording: recording, keeping: s.streamBytes)
        } catch {
            // Nothing was handed out yet: the transforms were only restored (and warmed up), so start afresh.
            throw CheckpointUnusable(recording: recording, reason: "\(error)")
        }
        replayEnd = s.streamBytes
        replaying = true
        blocks = s.blocks
        let at = SplitRule.duration(Double(s.sourceFrames) / Double(max(1, info.sampleRate)))
        var line = "resumed at \(at) from its checkpoint: the first \(transforms.count == 1 ? "stage starts" : "\(transforms.count) stages start") there"
        let earlier = SplitRule.duration(Double(s.sourceFrames - s.restartFrames) / Double(max(1, info.sampleRate)))
        if let restarting, earlier != SplitRule.duration(0) {
            line += " (\(restarting.name) \(earlier) earlier)"
        }
        ownNotes.append(line + ", the rest of the chain replays the kept stream")
    }
    private var replayEnd: Int64 = 0

    /// Decodes source frames `from..<to` (the first read ending on the block grid, as the unbroken
    /// pass's did) through the lead up to and including the restarting transform, whose output is
    /// dropped: the kept stream holds it. Called by `begin` on a resume.
    private func warmUp(from: Int, to: Int, blocks arrival: Int) throws {
        var block = AudioBlock(channels: max(1, info.channels), capacity: blockFrames)
        var at = from
        var count = from / blockFrames
        while at < to {
            let want = min(to - at, blockFrames - at % blockFrames)
            let n = try inner.read(into: &block, maxFrames: want)
            guard n > 0, n <= want else { throw StateBytes.Mismatch("the source gave \(n) frames at frame \(at), not \(want)") }
            at += n
            if n == blockFrames - (at - n) % blockFrames { count += 1 }
            for t in transforms[innerAhead...restartIndex] { try t.process(&block) }
        }
        guard count == arrival else { throw StateBytes.Mismatch("\(count) blocks up to the checkpoint, not \(arrival)") }
    }

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
        let first = sourceFrames
        sourceFrames += n
        blocks += 1
        try process(&block, frames: first..<sourceFrames)
        keep(block)
        return n
    }

    /// Runs the lead's transforms this decoder owns over the block of source `frames`, saving the
    /// states of those before the restarting transform when the next checkpoint's restart frame
    /// falls in it.
    private func process(_ block: inout AudioBlock, frames: Range<Int>) throws {
        let own = innerAhead
        guard grid != nil, !stopped else {
            for t in transforms[own...] { try t.process(&block) }
            return
        }
        let next = (blocks + blocksPerCheckpoint - 1) / blocksPerCheckpoint * blocksPerCheckpoint
        let p = restartFrame(forCheckpointAfter: next)
        if frames.contains(p) && own < restartIndex {
            restartStates[next] = try processSaving(Array(transforms[own..<restartIndex]), &block, at: p - frames.lowerBound, scratch: &scratch)
        } else {
            for t in transforms[own..<restartIndex] { try t.process(&block) }
            if own == restartIndex && frames.contains(p) { restartStates[next] = [] }
        }
        // A transform before it that holds frames back (`pitch`) hands the restarting one a stream
        // that is not the source's frame for frame: its restart could not arrive (`CheckpointRule.lead`
        // says so before the run; this is the pass's own check).
        if block.frames != frames.count, let restarting {
            stopCheckpoints("no checkpoints: \(restarting.name) does not see the source's frames one for one")
        }
        for t in transforms[restartIndex...] { try t.process(&block) }
    }

    /// Ends checkpoints for this pass, which goes on without them: the folder is cleared and `note`
    /// is said once.
    private func stopCheckpoints(_ note: String) {
        (inner as? PrefetchingDecoder)?.stopKeepingStates()
        stopped = true
        _ = syncer.wait()
        stream = nil
        plan.discard()
        ownNotes.append(note)
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
                // The read-ahead saved its transforms' states when it made this block (or the block
                // holding its restart frame).
                guard let first = ahead == 0 ? [] : (inner as? PrefetchingDecoder)?.aheadStates(after: blocks) else { return }
                var restartFrames = sourceFrames
                var states: [[UInt8]]
                var arrival: [UInt8] = []
                if let restarting, grid != nil {
                    restartFrames = restartFrame(forCheckpointAfter: blocks)
                    for k in restartStates.keys where k < blocks { restartStates[k] = nil }
                    // A resume reaches the checkpoint in whole blocks only (not after a short last one).
                    guard let before = restartStates.removeValue(forKey: blocks), sourceFrames - restartFrames >= grid!.warmUp,
                          sourceFrames == blocks * blockFrames else { return }
                    states = first + before + savedStates(transforms[restartIndex...])
                    var w = StateBytes.Writer()
                    restarting.saveArrival(into: &w)
                    arrival = w.bytes
                } else {
                    states = first + savedStates(transforms.dropFirst(ahead))
                }
                // The last checkpoint is on the disk before this one is written (its failure stops them).
                if let failure = syncer.wait() { throw failure }
                let record = SavedCheckpoint(sourceFrames: sourceFrames, restartFrames: restartFrames, blocks: blocks,
                                             streamBytes: stream.offset, channels: stream.channels, states: states, arrival: arrival)
                let bytes = record.encoded(key: plan.key), folder = plan.folder
                let kept = Kept(stream: stream)  // open until the syncer is done with it
                syncer.start {
                    try kept.stream.sync()
                    try Self.writeRecord(bytes, folder: folder)
                }
            }
        } catch {
            stopCheckpoints("checkpoints stopped, the pass goes on without them: \(error)")
        }
    }
    private var stopped = false
    private let syncer = CheckpointSyncer()
    /// The kept stream, handed to the syncer's thread (which only syncs it while the worker appends).
    private struct Kept: @unchecked Sendable { let stream: BlockSpool }

    /// Waits until the last checkpoint is on the disk (or failed: the next run then resumes from
    /// the one before). Called once the pass is over, before the checkpoint folder is kept or
    /// removed, whether the pass ended, failed or was interrupted.
    func settle() {
        if let failure = syncer.wait(), !stopped {
            stopped = true
            ownNotes.append("checkpoints stopped, the pass goes on without them: \(failure)")
        }
    }

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
