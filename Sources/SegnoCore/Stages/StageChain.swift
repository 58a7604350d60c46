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
        var finished = Array(repeating: false, count: elements.count)
        do {
            var format = decoder.info.format
            var channelsAfter: [Int] = []
            for el in elements {
                switch el {
                case .transform(let t): format = try t.start(format)
                case .tap(let t): try t.start(format)
                }
                channelsAfter.append(format.channels)
            }
            var block = AudioBlock(channels: decoder.info.channels, capacity: blockFrames)
            var total = 0
            while true {
                if isCancelled() { throw Interrupted() }
                let n = try decoder.read(into: &block, maxFrames: blockFrames)
                if n == 0 { break }
                total += n
                try push(&block, from: 0)
                progress(total)
            }
            // Drain in order: element i's tail flows through i+1…; a tap finishes once
            // everything upstream of it has been flushed.
            var produced: [[ProducedFile]] = []
            for i in elements.indices {
                switch elements[i] {
                case .transform(let t):
                    var tail = AudioBlock(channels: channelsAfter[i], capacity: 0)
                    try t.finish(&tail)
                    if tail.frames > 0 { try push(&tail, from: i + 1) }
                case .tap(let t):
                    produced.append(try t.finish())
                    finished[i] = true
                }
            }
            return produced
        } catch {
            for (i, el) in elements.enumerated() where !finished[i] {
                if case .tap(let t) = el { t.abandon() }
            }
            throw error
        }
    }

    private func push(_ block: inout AudioBlock, from start: Int) throws {
        var i = start
        while i < elements.count {
            switch elements[i] {
            case .transform(let t): try t.process(&block)
            case .tap(let t): if block.frames > 0 { try t.observe(block) }
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
    public init(items: [Item]) { self.items = items }

    /// Runs all passes. `open` opens the source (called once per pass); `progress` sees the
    /// frames of the last pass. Returns each tap's files, one list per tap in order.
    public func run(open: () throws -> any AudioDecoder, context: RecordingContext,
                    isCancelled: () -> Bool, progress: (Int) -> Void) throws -> [[ProducedFile]] {
        // Instantiate once; analysing transforms keep their measurement for the real pass.
        var instances: [ChainElement] = []
        for item in items {
            switch item {
            case .transform(let t): instances.append(.transform(try t.makeTransform()))
            case .tap(let t, let paths): instances.append(.tap(try t.makeTap(paths: paths, context: context)))
            }
        }
        for (k, el) in instances.enumerated() {
            guard case .transform(let t) = el, let analysing = t as? AnalysingTransform else { continue }
            // Pass over fresh upstream transforms (earlier analysing ones are already measured).
            var pass: [ChainElement] = []
            for j in 0..<k {
                guard case .transform(let up) = instances[j] else { continue }
                if up is AnalysingTransform { pass.append(.transform(up)) }
                else if case .transform(let cfg) = items[j] { pass.append(.transform(try cfg.makeTransform())) }
            }
            pass.append(.tap(AnalysisTap(target: analysing)))
            let decoder = try open()
            defer { decoder.close() }
            _ = try StageChain(elements: pass).run(decoder: decoder, isCancelled: isCancelled)
        }
        let decoder = try open()
        defer { decoder.close() }
        return try StageChain(elements: instances).run(decoder: decoder, isCancelled: isCancelled, progress: progress)
    }
}

/// Feeds a measurement pass into an analysing transform.
final class AnalysisTap: Tap {
    let target: AnalysingTransform
    init(target: AnalysingTransform) { self.target = target }
    func start(_ format: AudioFormat) throws { try target.startAnalysis(format) }
    func observe(_ block: AudioBlock) throws { try target.analyse(block) }
    func finish() throws -> [ProducedFile] { try target.endAnalysis(); return [] }
    func abandon() {}
}
