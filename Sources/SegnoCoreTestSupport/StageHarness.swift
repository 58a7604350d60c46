import Foundation
import SegnoCore
import SegnoDSP

// MARK: - In-memory chain ends

/// A decoder that yields a fixed interleaved signal (for stage and chain tests without files).
/// Optionally throws after `failAfter` frames, like a file damaged in the middle.
package final class MemoryDecoder: ExactSeeking {
    package let info: SourceInfo
    package let samples: [Float]
    package let failAfter: Int?
    private var position = 0
    private(set) package var closed = false
    /// Sees the position after each read and the frames it read.
    package var onRead: ((_ position: Int, _ frames: Int) -> Void)?
    package var seeksExactly: Bool { true }

    package init(_ samples: [Float], channels: Int, rate: Int, failAfter: Int? = nil) {
        self.samples = samples
        self.failAfter = failAfter
        info = SourceInfo(container: "memory", codec: "FLOAT", sampleRate: rate, channels: channels,
                          frames: samples.count / channels, sampleKind: .float)
    }

    package func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        let ch = info.channels
        if let failAfter, position >= failAfter {
            throw AudioError.decodeFailed(path: "memory", detail: "failure injected after \(position) frames")
        }
        var n = min(maxFrames, info.frames - position)
        if let failAfter { n = min(n, failAfter - position) }
        block.reset(channels: ch, capacity: maxFrames)
        if n > 0 {
            for i in 0..<(n * ch) { block.samples[i] = samples[position * ch + i] }
        }
        block.frames = max(0, n)
        position += block.frames
        onRead?(position, block.frames)
        return block.frames
    }

    package func seek(toFrame frame: Int) throws { position = min(frame, info.frames) }

    package func close() { closed = true }
}

/// A tap that records what it sees and how it was driven.
package final class CollectTap: Tap {
    package let name: String
    private(set) package var format: AudioFormat?
    private(set) package var samples: [Float] = []
    private(set) package var blocks = 0
    private(set) package var finished = false
    private(set) package var abandoned = false
    /// When set, `start` throws (a tap whose output cannot be created).
    package var failOnStart = false

    package init(name: String = "collect") { self.name = name }

    package func start(_ format: AudioFormat) throws {
        if failOnStart { throw AudioError.unsupportedOutput(path: name, detail: "refused to start") }
        self.format = format
    }
    package func observe(_ block: AudioBlock) throws {
        precondition(block.frames * block.channels <= block.samples.count, "block claims more samples than it holds")
        samples.append(contentsOf: block.samples[0..<(block.frames * block.channels)])
        blocks += 1
    }
    package func finish() throws -> [ProducedFile] { finished = true; return [ProducedFile(stage: name, path: "/dev/null/\(name)")] }
    package func abandon() { abandoned = true }

    /// Frames seen, in the tap's format.
    package var frames: Int { samples.count / max(1, format?.channels ?? 1) }
}

/// Runs `samples` through `configs` with a `StageChain` reading `blockFrames` at a time and
/// returns what a tap at the end of the chain saw.
package func runChain(_ samples: [Float], channels: Int, rate: Int, _ configs: [any TransformConfig],
                     blockFrames: Int = 4096) throws -> CollectTap {
    let tap = CollectTap()
    var elements: [ChainElement] = try configs.map { .transform(try $0.makeTransform()) }
    elements.append(.tap(tap))
    _ = try StageChain(elements: elements, blockFrames: blockFrames)
        .run(decoder: MemoryDecoder(samples, channels: channels, rate: rate))
    return tap
}

/// Largest absolute difference between two sample arrays of the same length (∞ when their
/// lengths differ, so a test fails rather than stops).
package func maxAbsDifference(_ a: [Float], _ b: [Float]) -> Float {
    guard a.count == b.count else { return .infinity }
    var m: Float = 0
    for i in a.indices { m = max(m, abs(a[i] - b[i])) }
    return m
}

/// Samples of channel `c` of an interleaved array.
package func channel(_ c: Int, of x: [Float], channels: Int) -> [Float] {
    stride(from: c, to: x.count, by: channels).map { x[$0] }
}

/// Feeds transforms the same signal in blocks of 1, 7 and 4096 frames: a transform's output
/// must not depend on how its input was cut (the decoders hand out blocks of any size, and the
/// last block of a file is short).
package enum StageHarness {
    /// One frame (every block boundary), an odd prime (boundaries inside any internal frame of a
    /// stage), and the runner's own block size.
    package static let blockSizes = [1, 7, 4096]

    /// Runs `samples` through `configs` once per size of `blockSizes`; the taps, in that order.
    package static func runAtEveryBlockSize(_ samples: [Float], channels: Int, rate: Int,
                                            _ configs: [any TransformConfig]) throws -> [CollectTap] {
        try blockSizes.map { try runChain(samples, channels: channels, rate: rate, configs, blockFrames: $0) }
    }

    /// How far the outputs at the different block sizes are apart: nil when their formats or
    /// lengths differ, else the largest absolute sample difference from the 4096-frame run.
    package static func blockSizeDifference(_ samples: [Float], channels: Int, rate: Int,
                                            _ configs: [any TransformConfig]) throws -> Float? {
        let taps = try runAtEveryBlockSize(samples, channels: channels, rate: rate, configs)
        let reference = taps.last!
        var worst: Float = 0
        for t in taps.dropLast() {
            guard t.format == reference.format, t.samples.count == reference.samples.count else { return nil }
            worst = max(worst, maxAbsDifference(t.samples, reference.samples))
        }
        return worst
    }
}
