import SegnoDSP

/// One element of a recording's chain, ready to run.
public enum ChainElement {
    case transform(any Transform)
    case tap(any Tap)
}

/// Thrown when a run is interrupted (SIGINT/SIGTERM, `--max-time`) in the middle of a recording.
public struct Interrupted: Error, Sendable, CustomStringConvertible {
    public init() {}
    public var description: String { "interrupted" }
}

/// Runs one recording through its elements in a single streaming pass: the decoder is the
/// source, transforms rewrite the block in place, taps observe it. Owned by one worker; the
/// block is reused, so the steady state allocates nothing.
public final class StageChain {
    private var elements: [ChainElement]
    /// Frames per block read from the decoder.
    public let blockFrames: Int

    /// Frames per block unless a chain says otherwise.
    public static let standardBlockFrames = 4096

    public init(elements: [ChainElement], blockFrames: Int = StageChain.standardBlockFrames) {
        self.elements = elements
        self.blockFrames = blockFrames
    }

    /// Streams the whole recording. `isCancelled` is polled once per block; `progress` gets the
    /// source frames read so far. On any error every tap is abandoned (no files left behind)
    /// and the error is rethrown; on success each tap's files are returned, one list per tap in chain order.
    public func run(decoder: any AudioDecoder,
                    isCancelled: () -> Bool = { false },
                    progress: (Int) -> Void = { _ in }) throws -> [[ProducedFile]] {
        try runEach(decoder: decoder, isolatingTaps: false, isCancelled: isCancelled, progress: progress).map { try $0.get() }
    }

    /// Streams the whole recording like `run`, but a tap that fails (in start, observe or finish)
    /// is abandoned alone: the other taps go on and finish, and its error is its result. A
    /// failing transform, the decoder or `Interrupted` still fail the whole pass (thrown, every
    /// tap abandoned). Returns one result per tap, in chain order. Analysing transforms are run as
    /// plain transforms here (no measurement); `ChainRecipe` measures them.
    public func runEach(decoder: any AudioDecoder,
                        isolatingTaps: Bool = true,
                        isCancelled: () -> Bool = { false },
                        progress: (Int) -> Void = { _ in }) throws -> [Result<[ProducedFile], any Error>] {
        try runEach(decoder: decoder, isolatingTaps: isolatingTaps, measuring: nil, isCancelled: isCancelled, progress: progress)
    }

    /// How `ChainRecipe` has the analysing transforms measured (decision 0052): where their spools go,
    /// the recording named in errors, and who hears of passes and notes.
    package struct Measuring {
        package var spoolFolder: String
        package var recording: String
        package var onPass: ((_ pass: Int, _ passes: Int) -> Void)?
        package var notes: ((String) -> Void)?
        package init(spoolFolder: String, recording: String, onPass: ((Int, Int) -> Void)?, notes: ((String) -> Void)?) {
            self.spoolFolder = spoolFolder
            self.recording = recording
            self.onPass = onPass
            self.notes = notes
        }
    }

    /// Streams the whole recording, each element once. With `measuring`, the analysing transforms
    /// cut the chain into segments: the first segment streams the decoded source, and the stream
    /// where it ends (at the first analysing transform) is spooled (`BlockSpool`) while the
    /// transform measures it; limiter trials read the spool; the next segment, from that transform
    /// on, streams the spool, and so on. Taps finish together after the last segment, in chain order
    /// except that a tap using what others find finishes after them (`findingsFinishOrder`).
    /// Passes (each segment's, each trial) are announced to `measuring.onPass`; `progress` sees
    /// every pass's source frames when `onPass` is set, else the last pass's only.
    package func runEach(decoder: any AudioDecoder, isolatingTaps: Bool, measuring: Measuring?,
                         isCancelled: () -> Bool, progress: (Int) -> Void) throws -> [Result<[ProducedFile], any Error>] {
        var finished = Array(repeating: false, count: elements.count)
        failed = [:]
        isolating = isolatingTaps
        let cuts = measuring == nil ? [] : elements.indices.filter {
            if case .transform(let t) = elements[$0] { return t is AnalysingTransform }; return false
        }
        let bounds = [0] + cuts + [elements.count]  // segment k: bounds[k]..<bounds[k + 1]
        let taps = elements.indices.filter { if case .tap = elements[$0] { return true }; return false }
        let allFailed = { !taps.isEmpty && self.failed.count == taps.count }
        do {
            var format = decoder.info.format
            channelsAfter = Array(repeating: 0, count: elements.count)
            var spool: BlockSpool? = nil  // the stream where the current segment begins (nil: the decoder)
            var pass = 0
            var passes = bounds.count - 1
            var lastStart = 0
            for k in 0..<(bounds.count - 1) where !allFailed() {
                let range = bounds[k]..<bounds[k + 1]
                lastStart = range.lowerBound
                for i in range {
                    switch elements[i] {
                    case .transform(let t): format = try t.start(format)
                    case .tap(let t):
                        if let user = t as? any TimelineUsing {
                            let movers = elements[..<i].compactMap { e -> (any TimelineChanging)? in
                                if case .transform(let x) = e { return x as? any TimelineChanging }
                                return nil
                            }
                            user.useTimeline { movers.map(\.timeMap) }
                        }
                        do { try t.start(format) } catch { try fail(i, t, error) }
                    }
                    channelsAfter[i] = format.channels
                }
                let everyPass = measuring?.onPass != nil
                guard let measuring, range.upperBound < elements.count, case .transform(let t) = elements[range.upperBound],
                      let analysing = t as? AnalysingTransform else {
                    // The last segment: to the end of the chain; the tails and the taps follow below.
                    measuring?.onPass?(pass, passes)
                    if spool == nil, let source = decoder as? any Int16Decoding, source.readsExactInt16, let int16Taps = int16Taps() {
                        try pushInt16(from: source, to: int16Taps, isCancelled: isCancelled, progress: progress)
                    } else {
                        try stream(range, from: spool, decoder: decoder, drainingTo: nil, isCancelled: isCancelled, reporting: true, progress: progress)
                    }
                    break
                }
                // The stream at the analysing transform: spooled and measured as it goes by.
                let next = try BlockSpool(folder: measuring.spoolFolder, channels: format.channels, recording: measuring.recording)
                try analysing.startAnalysis(format)
                measuring.onPass?(pass, passes)
                pass += 1
                try stream(range, from: spool, decoder: decoder, drainingTo: { block, sourceFrames in
                    try next.write(block, sourceFrames: sourceFrames)
                    if block.frames > 0 { try analysing.analyse(block) }
                }, isCancelled: isCancelled, reporting: everyPass, progress: progress)
                if allFailed() { break }
                try analysing.endAnalysis()
                // Limiter trials: the spooled stream again, measured alone.
                while analysing.wantsAnotherPass {
                    passes += 1
                    measuring.onPass?(pass, passes)
                    pass += 1
                    try next.rewind()
                    try analysing.startAnalysis(format)
                    try stream(range.upperBound..<range.upperBound, from: next, decoder: decoder, drainingTo: { block, _ in
                        if block.frames > 0 { try analysing.analyse(block) }
                    }, isCancelled: isCancelled, reporting: everyPass, progress: progress)
                    try analysing.endAnalysis()
                }
                if let note = analysing.note { measuring.notes?(note) }
                try next.rewind()
                spool = next
            }
            if let report = decoder.salvage {
                for case .tap(let t) in elements { t.sourceSalvaged(report, sampleRate: decoder.info.sampleRate) }
            }
            // Drain in order: element i's tail flows through i+1…, so once every transform is
            // drained each tap has seen its whole stream (earlier segments drained in their passes).
            for i in elements.indices where !allFailed() && i >= lastStart {
                guard case .transform(let t) = elements[i] else { continue }
                var tail = AudioBlock(channels: channelsAfter[i], capacity: 0)
                try t.finish(&tail)
                if tail.frames > 0 { try push(&tail, from: i + 1) }
            }
            // Then the taps finish: in chain order, except that a tap using what others find
            // (`FindingsUsingTap`) finishes after the taps that find it.
            var results: [Int: Result<[ProducedFile], any Error>] = [:]
            var finishedFiles: [ProducedFile] = []
            var found = Findings()
            let order = findingsFinishOrder(taps.map { i -> any Tap in
                guard case .tap(let t) = elements[i] else { preconditionFailure("not a tap") }
                return t
            }).map { taps[$0] }
            for i in order {
                guard case .tap(let t) = elements[i] else { continue }
                if failed[i] == nil {
                    if let g = t as? any GatheringTap {
                        g.gather(finishedFiles.compactMap { f in f.measures.map { (f.stage, $0) } })
                    }
                    if let u = t as? any FindingsUsingTap { u.use(found) }
                    do {
                        let files = try t.finish()
                        results[i] = .success(files)
                        finishedFiles += files
                        if let f = t as? any FindingTap { found.add(f.findings) }
                    } catch { try fail(i, t, error) }
                }
                if let e = failed[i] { results[i] = .failure(e) }
                finished[i] = true
            }
            let produced = taps.map { results[$0]! }
            return produced
        } catch {
            for (i, el) in elements.enumerated() where !finished[i] && (failed[i] == nil || !isolating) {
                if case .tap(let t) = el { t.abandon() }
            }
            throw error
        }
    }

    /// One pass through the elements of `range`: blocks from `spool`, or from the decoder when it is
    /// nil. With `sink` the range's transforms are drained too, and every block leaving the range
    /// goes to `sink` with the source frames read when it was made; without, the caller drains.
    /// Stops early once every tap has failed. When `reporting`, `progress` sees the source frames as they grow.
    private func stream(_ range: Range<Int>, from spool: BlockSpool?, decoder: any AudioDecoder,
                        drainingTo sink: ((AudioBlock, Int) throws -> Void)?,
                        isCancelled: () -> Bool, reporting: Bool, progress: (Int) -> Void) throws {
        let tapCount = elements.reduce(0) { if case .tap = $1 { return $0 + 1 }; return $0 }
        var block = AudioBlock(channels: spool?.channels ?? decoder.info.channels, capacity: blockFrames)
        var total = 0
        // A split pass's decoder ran the chain's first transforms on its thread (`ChainPipeline`), a
        // checkpointed pass's its leading checkpointing transforms (`CheckpointingDecoder`).
        let prefetcher = spool == nil ? decoder as? any TransformingDecoder : nil
        let from = range.lowerBound + (prefetcher?.aheadCount ?? 0)
        while tapCount == 0 || failed.count < tapCount {
            if isCancelled() { throw Interrupted() }
            let made: Int
            if let spool {
                guard let n = try spool.read(into: &block) else { break }
                made = n
            } else {
                let n = try decoder.read(into: &block, maxFrames: blockFrames)
                if n == 0 { break }
                made = total + n
            }
            try push(&block, from: from, to: range.upperBound)
            try sink?(block, made)
            // A replay reports what the decoding pass reported: once per source block, rising.
            if made > total {
                total = made
                if reporting { progress(total) }
            }
        }
        // Its thread ended before the transforms it ran are drained here or by the caller (it
        // still reads ahead when every tap failed).
        prefetcher?.stop()
        guard let sink else { return }
        for i in range {
            guard case .transform(let t) = elements[i] else { continue }
            var tail = AudioBlock(channels: channelsAfter[i], capacity: 0)
            try t.finish(&tail)
            if tail.frames > 0 {
                try push(&tail, from: i + 1, to: range.upperBound)
                try sink(tail, total)
            }
        }
    }

    /// Taps that failed in the current pass, by element index.
    private var failed: [Int: any Error] = [:]
    /// Channels after each element, once started (a tail block's format).
    private var channelsAfter: [Int] = []
    /// False: the first failing tap fails the whole pass (`run`).
    private var isolating = true

    /// A tap failed: abandoned alone when isolating, else the error fails the pass.
    private func fail(_ i: Int, _ tap: any Tap, _ error: any Error) throws {
        if error is Interrupted || !isolating { throw error }
        tap.abandon()
        failed[i] = error
    }

    /// Samples per int16 block (interleaved): 64 k stereo frames, 256 KiB, fewer frames for
    /// more channels. Large reads keep libsndfile's per-call cost out of the profile.
    static package let int16BlockSamples = 1 << 17

    /// The chain's taps, when the chain is nothing but started taps that all take int16
    /// (a waveform-only chain); nil otherwise. Called after every tap's `start`.
    private func int16Taps() -> [(Int, any Int16Tap)]? {
        var out: [(Int, any Int16Tap)] = []
        for (i, el) in elements.enumerated() {
            guard case .tap(let t) = el, let t16 = t as? any Int16Tap else { return nil }
            if failed[i] == nil && !t16.acceptsInt16 { return nil }
            out.append((i, t16))
        }
        return out.isEmpty ? nil : out
    }

    /// Streams the whole recording to `taps` as int16 blocks (the decoder reads exact int16).
    /// One buffer per recording; a failing tap is handled as in the Float32 loop.
    private func pushInt16(from source: any Int16Decoding, to taps: [(Int, any Int16Tap)],
                           isCancelled: () -> Bool, progress: (Int) -> Void) throws {
        let channels = source.info.channels
        let frames = max(1, Self.int16BlockSamples / channels)
        var buffer = [Int16](repeating: 0, count: frames * channels)
        var total = 0
        try buffer.withUnsafeMutableBufferPointer { buf in
            while failed.count < taps.count {
                if isCancelled() { throw Interrupted() }
                let n = try source.readInt16(into: buf, maxFrames: frames)
                if n == 0 { break }
                total += n
                let view = UnsafeBufferPointer(rebasing: buf[0..<(n * channels)])
                for (i, t) in taps where failed[i] == nil {
                    do { try t.observe(int16: view, frames: n) } catch { try fail(i, t, error) }
                }
                progress(total)
            }
        }
    }

    /// Pushes `block` through the elements from `start` up to (not including) `end`.
    private func push(_ block: inout AudioBlock, from start: Int, to end: Int? = nil) throws {
        var i = start
        while i < (end ?? elements.count) {
            switch elements[i] {
            case .transform(let t): try t.process(&block)
            case .tap(let t):
                if block.frames > 0 && failed[i] == nil {
                    do { try t.observe(block) } catch { try fail(i, t, error) }
                }
            }
            i += 1
        }
    }
}

/// A recording's stages before they are instantiated: transforms and the taps that must run
/// (with their resolved paths). Builds the chain and runs it, each stage once: the source is
/// decoded once, and analysing transforms measure the stream at their place from a spool
/// (`StageChain.runEach(decoder:isolatingTaps:measuring:…)`). Used by the runner and by `convert`.
public struct ChainRecipe {
    public enum Item {
        case transform(any TransformConfig)
        case tap(any TapConfig, paths: [String])
    }
    public var items: [Item]
    /// Sees each analysing transform's `note` once its measurement is done, and the decoder's
    /// `notes` after the real pass (warnings).
    public var notes: ((String) -> Void)?
    /// Told before each pass over the recording: its number (0-based) and how many passes it
    /// needs as far as known now (one per analysing transform — the decoding pass, then one over
    /// each spool — then the last pass; a limiter trial adds one). `progress` then sees that
    /// pass's frames, in source frames also when the pass reads a spool.
    public var onPass: ((_ pass: Int, _ passes: Int) -> Void)?
    /// The folder for the spools of analysing transforms (`BlockSpool`: files without a name, about
    /// 4 bytes per sample at that place); nil for the recording's output root.
    public var spoolFolder: String?
    /// True when the runner split this recording (`SplitRule`): a chain with a transform then runs
    /// on three threads (`ChainPipeline`), with byte-identical outputs. False: one thread.
    public var pipelined = false
    /// Where the recording keeps checkpoints (`CheckpointRule`, decision 0095): nil for none. Used
    /// when the source seeks exactly and the chain begins with a checkpointing transform.
    public var checkpoints: CheckpointPlan?
    public init(items: [Item]) { self.items = items }

    /// Runs all passes. `open` opens the source (called once: later passes read spools); `progress` sees the
    /// frames of the last pass (of every pass when `onPass` is set, counted from 0 in each).
    /// Returns each tap's files, one list per tap in order; the first failing tap fails the whole run.
    public func run(open: () throws -> any AudioDecoder, context: RecordingContext,
                    isCancelled: () -> Bool, progress: (Int) -> Void) throws -> [[ProducedFile]] {
        try runEach(open: open, context: context, isolatingTaps: false, isCancelled: isCancelled, progress: progress).map { try $0.get() }
    }

    /// Runs all passes like `run`, but a tap that cannot be made or fails in the pass fails alone
    /// (`StageChain.runEach`): one result per tap, in order.
    public func runEach(open: () throws -> any AudioDecoder, context: RecordingContext, isolatingTaps: Bool = true,
                        isCancelled: () -> Bool, progress: (Int) -> Void) throws -> [Result<[ProducedFile], any Error>] {
        do {
            let results = try runOnce(open: open, context: context, isolatingTaps: isolatingTaps, isCancelled: isCancelled, progress: progress)
            checkpoints?.discard()
            return results
        } catch let e as CheckpointUnusable {
            // Found but not usable (its stream cut short): nothing was read yet; from the start.
            checkpoints?.discard()
            notes?(e.reason.isEmpty ? "checkpoint not used" : "checkpoint not used: \(e.reason)")
            var again = self
            again.checkpoints = nil
            return try again.runEach(open: open, context: context, isolatingTaps: isolatingTaps, isCancelled: isCancelled, progress: progress)
        } catch let e as Interrupted {
            throw e  // the checkpoint stays for the next run
        } catch {
            checkpoints?.discard()
            throw error
        }
    }

    /// The transforms a checkpoint keeps (decision 0095): the chain's leading transforms, when
    /// every transform before its first analysing one (or its end) is among them and saves its
    /// state, or (one of them) can be restarted (`RestartingTransform`, decision 0100). Otherwise
    /// none: a stage that cannot save its state, after the kept stream, would run again in full on
    /// a resume, so the stream would cost its disk for little.
    static func checkpointLead(_ elements: [ChainElement]) -> [any Transform] {
        var lead: [any Transform] = []
        var leading = true
        var restarts = 0
        for e in elements {
            guard case .transform(let t) = e else { leading = false; continue }
            if t is any AnalysingTransform { break }
            if t is any RestartingTransform { restarts += 1 }
            guard leading, t is any CheckpointingTransform || (t is any RestartingTransform && restarts == 1) else { return [] }
            lead.append(t)
        }
        return lead
    }

    private func runOnce(open: () throws -> any AudioDecoder, context: RecordingContext, isolatingTaps: Bool,
                         isCancelled: () -> Bool, progress: (Int) -> Void) throws -> [Result<[ProducedFile], any Error>] {
        // Instantiate once; analysing transforms keep their measurement for the real pass.
        // A tap that cannot be made (a name too long, a format the stream does not fit) fails alone.
        var instances: [ChainElement] = []
        var unmade: [Int: any Error] = [:]       // tap ordinal → why it could not be made
        var tapCount = 0
        for item in items {
            switch item {
            case .transform(let t):
                instances.append(.transform(try t.makeTransform()))
            case .tap(let t, let paths):
                do { instances.append(.tap(try t.makeTap(paths: paths, context: context))) } catch {
                    if !isolatingTaps { throw error }
                    unmade[tapCount] = error
                }
                tapCount += 1
            }
        }
        if tapCount > 0 && unmade.count == tapCount { return (0..<tapCount).map { .failure(unmade[$0]!) } }
        // One decoding pass; analysing transforms measure the stream as it reaches them, spooled
        // for their trials and for what follows them (decision 0052).
        let decoder = try open()
        defer { decoder.close() }
        let measuring = StageChain.Measuring(spoolFolder: spoolFolder ?? context.outputRoot, recording: context.relativePath,
                                             onPass: onPass, notes: notes)
        // Split (decision 0085): the same chain, its decoder read ahead and its taps on threads of their own.
        // Checkpoints (decision 0095): the chain's leading checkpointing transforms run in the
        // decoder, which keeps what they make and their states.
        // Split, the first of them (up to a restarting one) may ride with the decoder (`ChainPipeline`),
        // which saves their states for the record.
        let leading = checkpoints != nil && (decoder as? any ExactSeeking)?.seeksExactly == true ? Self.checkpointLead(instances) : []
        let pipeline = pipelined && instances.contains(where: { if case .transform = $0 { true } else { false } }) ? ChainPipeline() : nil
        defer { pipeline?.shutdown() }
        let restartsAt = leading.firstIndex { $0 is any RestartingTransform } ?? leading.count
        let chain = StageChain(elements: pipeline?.elements(instances, aheadAtMost: leading.isEmpty ? .max : restartsAt) ?? instances)
        var source: any AudioDecoder = pipeline?.decoder(decoder, blockFrames: chain.blockFrames) ?? decoder
        var checkpointing: CheckpointingDecoder? = nil
        if let plan = checkpoints, !leading.isEmpty, let seekable = source as? any ExactSeeking {
            checkpointing = CheckpointingDecoder(seekable, transforms: leading, plan: plan, recording: context.relativePath, blockFrames: chain.blockFrames)
            source = checkpointing!
        }
        // Its last checkpoint is on the disk (or failed) before the folder is kept or removed.
        defer { checkpointing?.settle() }
        var made = try chain.runEach(decoder: source, isolatingTaps: isolatingTaps,
                                     measuring: measuring, isCancelled: isCancelled, progress: progress)[...]
        checkpointing?.settle()  // before its notes are read
        pipeline?.shutdown()
        source.notes.forEach { notes?($0) }
        for case .tap(let tap) in instances { tap.notes.forEach { notes?($0) } }
        var results: [Result<[ProducedFile], any Error>] = []
        for k in 0..<tapCount {
            if let e = unmade[k] { results.append(.failure(e)) } else { results.append(made.removeFirst()) }
        }
        return results
    }
}
