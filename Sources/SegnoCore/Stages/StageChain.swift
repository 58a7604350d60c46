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

    public init(elements: [ChainElement], blockFrames: Int = 4096) {
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
    /// tap abandoned). Returns one result per tap, in chain order.
    public func runEach(decoder: any AudioDecoder,
                        isolatingTaps: Bool = true,
                        isCancelled: () -> Bool = { false },
                        progress: (Int) -> Void = { _ in }) throws -> [Result<[ProducedFile], any Error>] {
        var finished = Array(repeating: false, count: elements.count)
        failed = [:]
        isolating = isolatingTaps
        do {
            var format = decoder.info.format
            var channelsAfter: [Int] = []
            for (i, el) in elements.enumerated() {
                switch el {
                case .transform(let t): format = try t.start(format)
                case .tap(let t):
                    do { try t.start(format) } catch { try fail(i, t, error) }
                }
                channelsAfter.append(format.channels)
            }
            let taps = elements.indices.filter { if case .tap = elements[$0] { return true }; return false }
            if let source = decoder as? any Int16Decoding, source.readsExactInt16, let int16Taps = int16Taps() {
                try pushInt16(from: source, to: int16Taps, isCancelled: isCancelled, progress: progress)
            } else {
                var block = AudioBlock(channels: decoder.info.channels, capacity: blockFrames)
                var total = 0
                // Stop decoding once every tap has failed: nothing would be written.
                while taps.isEmpty || failed.count < taps.count {
                    if isCancelled() { throw Interrupted() }
                    let n = try decoder.read(into: &block, maxFrames: blockFrames)
                    if n == 0 { break }
                    total += n
                    try push(&block, from: 0)
                    progress(total)
                }
            }
            if let report = decoder.salvage {
                for case .tap(let t) in elements { t.sourceSalvaged(report, sampleRate: decoder.info.sampleRate) }
            }
            // Drain in order: element i's tail flows through i+1…; a tap finishes once
            // everything upstream of it has been flushed.
            var produced: [Result<[ProducedFile], any Error>] = []
            for i in elements.indices {
                switch elements[i] {
                case .transform(let t):
                    if !taps.isEmpty && failed.count == taps.count { continue }
                    var tail = AudioBlock(channels: channelsAfter[i], capacity: 0)
                    try t.finish(&tail)
                    if tail.frames > 0 { try push(&tail, from: i + 1) }
                case .tap(let t):
                    if failed[i] == nil {
                        do { produced.append(.success(try t.finish())) } catch { try fail(i, t, error) }
                    }
                    if let e = failed[i] { produced.append(.failure(e)) }
                    finished[i] = true
                }
            }
            return produced
        } catch {
            for (i, el) in elements.enumerated() where !finished[i] && (failed[i] == nil || !isolating) {
                if case .tap(let t) = el { t.abandon() }
            }
            throw error
        }
    }

    /// Taps that failed in the current pass, by element index.
    private var failed: [Int: any Error] = [:]
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

    private func push(_ block: inout AudioBlock, from start: Int) throws {
        var i = start
        while i < elements.count {
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
/// (with their resolved paths). Builds the chain, runs the analysis passes that analysing
/// transforms need, then the real pass. Used by the runner and by `convert`.
public struct ChainRecipe {
    public enum Item {
        case transform(any TransformConfig)
        case tap(any TapConfig, paths: [String])
    }
    public var items: [Item]
    /// Sees each analysing transform's `note` once its measurement is done, and the decoder's
    /// `notes` after the real pass (warnings).
    public var notes: ((String) -> Void)?
    /// Told before each pass over the source: its number (0-based) and how many passes the
    /// recording needs as far as known now (the analysis passes of analysing transforms, then
    /// the real pass; a limiter trial adds one). `progress` then sees that pass's frames.
    public var onPass: ((_ pass: Int, _ passes: Int) -> Void)?
    public init(items: [Item]) { self.items = items }

    /// Runs all passes. `open` opens the source (called once per pass); `progress` sees the
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
        // Instantiate once; analysing transforms keep their measurement for the real pass.
        // A tap that cannot be made (a name too long, a format the stream does not fit) fails alone.
        var instances: [ChainElement] = []
        var configs: [any TransformConfig] = []  // parallel to the transforms in `instances`
        var unmade: [Int: any Error] = [:]       // tap ordinal → why it could not be made
        var tapCount = 0
        for item in items {
            switch item {
            case .transform(let t):
                instances.append(.transform(try t.makeTransform()))
                configs.append(t)
            case .tap(let t, let paths):
                do { instances.append(.tap(try t.makeTap(paths: paths, context: context))) } catch {
                    if !isolatingTaps { throw error }
                    unmade[tapCount] = error
                }
                tapCount += 1
            }
        }
        if tapCount > 0 && unmade.count == tapCount { return (0..<tapCount).map { .failure(unmade[$0]!) } }
        var passes = 1 + instances.filter { if case .transform(let t) = $0 { return t is AnalysingTransform }; return false }.count
        var passNumber = 0
        var transformNumber = 0
        for el in instances {
            guard case .transform(let t) = el else { continue }
            defer { transformNumber += 1 }
            guard let analysing = t as? AnalysingTransform else { continue }
            repeat {
                // Pass over fresh upstream transforms (earlier analysing ones are already measured).
                var pass: [ChainElement] = []
                var j = 0
                for up in instances {
                    guard case .transform(let u) = up else { continue }
                    if j == transformNumber { break }
                    pass.append(.transform(u is AnalysingTransform ? u : try configs[j].makeTransform()))
                    j += 1
                }
                pass.append(.tap(AnalysisTap(target: analysing)))
                let decoder = try open()
                defer { decoder.close() }
                onPass?(passNumber, passes)
                _ = try StageChain(elements: pass).run(decoder: decoder, isCancelled: isCancelled,
                                                       progress: onPass == nil ? { _ in } : progress)
                passNumber += 1
                if analysing.wantsAnotherPass { passes += 1 }
            } while analysing.wantsAnotherPass
            if let note = analysing.note { notes?(note) }
        }
        let decoder = try open()
        defer { decoder.close() }
        onPass?(passNumber, passes)
        var made = try StageChain(elements: instances).runEach(decoder: decoder, isolatingTaps: isolatingTaps,
                                                               isCancelled: isCancelled, progress: progress)[...]
        decoder.notes.forEach { notes?($0) }
        for case .tap(let tap) in instances { tap.notes.forEach { notes?($0) } }
        var results: [Result<[ProducedFile], any Error>] = []
        for k in 0..<tapCount {
            if let e = unmade[k] { results.append(.failure(e)) } else { results.append(made.removeFirst()) }
        }
        return results
    }
}

/// Feeds a measurement pass into an analysing transform.
final package class AnalysisTap: Tap {
    package let target: AnalysingTransform
    package init(target: AnalysingTransform) { self.target = target }
    package func start(_ format: AudioFormat) throws { try target.startAnalysis(format) }
    package func observe(_ block: AudioBlock) throws { try target.analyse(block) }
    package func finish() throws -> [ProducedFile] { try target.endAnalysis(); return [] }
    package func abandon() {}
}
