/// The shape of a stream of audio: sample rate in Hz and channel count.
/// Handed from stage to stage when a chain starts (SoX passes its `signal` the same way).
public struct AudioFormat: Sendable, Hashable, CustomStringConvertible {
    /// Frames per second, in Hz.
    public var sampleRate: Int
    /// Interleaved channels per frame.
    public var channels: Int

    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// The Nyquist frequency in Hz (half the sample rate).
    public var nyquist: Double { Double(sampleRate) / 2 }

    public var description: String { "\(sampleRate) Hz, \(channels) ch" }
}

/// A block of interleaved Float32 frames, nominally in [-1, 1].
///
/// Blocks are owned by the chain and reused from one call to the next: `samples` keeps its
/// capacity, and `frames` says how many frames of it are valid. Resizing with `reserve(frames:)`
/// allocates only when the block must grow, so the steady state allocates nothing.
public struct AudioBlock: Sendable {
    /// Interleaved samples; only the first `frames * channels` are valid.
    public var samples: [Float]
    /// Valid frames in `samples`.
    public var frames: Int
    /// Channels per frame.
    public var channels: Int

    public init(channels: Int, capacity: Int = 0) {
        self.channels = channels
        self.frames = 0
        self.samples = [Float](repeating: 0, count: max(0, capacity) * channels)
    }

    /// Builds a block from interleaved samples (tests and generators).
    public init(interleaved: [Float], channels: Int) {
        precondition(channels > 0 && interleaved.count % channels == 0)
        self.samples = interleaved
        self.channels = channels
        self.frames = interleaved.count / channels
    }

    /// Frames the block can hold without reallocating.
    public var capacity: Int { channels == 0 ? 0 : samples.count / channels }

    /// Sets the channel count and makes room for at least `frames` frames; keeps `frames` at 0.
    /// Allocates only if the current storage is too small.
    public mutating func reset(channels: Int, capacity frames: Int) {
        self.channels = channels
        self.frames = 0
        let need = frames * channels
        if samples.count < need { samples = [Float](repeating: 0, count: need) }
    }

    /// Ensures room for `frames` frames without changing the content of the valid part.
    public mutating func reserve(frames: Int) {
        let need = frames * channels
        if samples.count < need {
            samples.append(contentsOf: repeatElement(0, count: need - samples.count))
        }
    }

    /// The valid samples, copied out (tests, small blocks only).
    public var validSamples: [Float] { Array(samples[0..<(frames * channels)]) }
}
