/// A first-in first-out buffer of planar (one array per channel) frames, addressed by
/// absolute frame index. The pitch shifter's stages pass audio to each other through it.
///
/// Frames `start ..< end` are held. Appending "at" an absolute index keeps the stream
/// aligned: frames before `end` are skipped (already held or deliberately dropped) and a
/// gap after `end` is filled with zeros. Storage grows only when a single append does not
/// fit; otherwise consumed frames are reclaimed by moving the valid part to the front.
struct PlanarFIFO: Sendable {
    /// Channels per frame.
    let channels: Int
    /// Frames each channel can hold.
    private(set) var capacity: Int
    /// Channel `c` lives at `storage[c * capacity ..< (c + 1) * capacity]`.
    var storage: [Float]
    /// Storage offset of the frame at `start`.
    private(set) var head: Int = 0
    /// Absolute index of the first frame held.
    private(set) var start: Int
    /// Frames held.
    private(set) var count: Int = 0

    /// One past the absolute index of the last frame held.
    var end: Int { start + count }

    /// An empty FIFO whose next frame will have absolute index `start`.
    init(channels: Int, capacity: Int, start: Int) {
        self.channels = channels
        self.capacity = max(capacity, 16)
        self.storage = [Float](repeating: 0, count: self.capacity * channels)
        self.start = start
    }

    /// Makes room for `frames` more frames after `end`.
    mutating func reserveFree(_ frames: Int) {
        if head + count + frames <= capacity { return }
        if count + frames <= capacity {
            let h = head, n = count, cap = capacity
            storage.withUnsafeMutableBufferPointer { s in
                for c in 0..<channels where n > 0 {
                    let base = s.baseAddress! + c * cap
                    base.update(from: base + h, count: n)
                }
            }
            head = 0
            return
        }
        let newCapacity = max(2 * capacity, count + frames)
        var grown = [Float](repeating: 0, count: newCapacity * channels)
        let h = head, n = count, cap = capacity
        storage.withUnsafeBufferPointer { s in
            grown.withUnsafeMutableBufferPointer { g in
                for c in 0..<channels where n > 0 {
                    (g.baseAddress! + c * newCapacity).update(from: s.baseAddress! + c * cap + h, count: n)
                }
            }
        }
        storage = grown
        capacity = newCapacity
        head = 0
    }

    /// Appends `frames` zero frames at `end`.
    mutating func appendZeros(_ frames: Int) {
        guard frames > 0 else { return }
        reserveFree(frames)
        let at = head + count, cap = capacity
        storage.withUnsafeMutableBufferPointer { s in
            for c in 0..<channels {
                (s.baseAddress! + c * cap + at).update(repeating: 0, count: frames)
            }
        }
        count += frames
    }

    /// Number of frames of a source starting at absolute `index` that `append` would skip,
    /// and the zero frames it would insert first.
    private func alignment(_ index: Int, _ frames: Int) -> (skip: Int, gap: Int) {
        let skip = min(frames, max(0, end - index))
        let gap = max(0, index - end)
        return (skip, gap)
    }

    /// Appends interleaved frames whose first one has absolute index `index`.
    mutating func appendInterleaved(_ source: UnsafePointer<Float>, frames: Int, at index: Int) {
        let (skip, gap) = alignment(index, frames)
        appendZeros(gap)
        let n = frames - skip
        guard n > 0 else { return }
        reserveFree(n)
        let at = head + count, cap = capacity, ch = channels
        storage.withUnsafeMutableBufferPointer { s in
            let src = source + skip * ch
            if ch == 1 {
                (s.baseAddress! + at).update(from: src, count: n)
            } else {
                for c in 0..<ch {
                    let dst = s.baseAddress! + c * cap + at
                    for i in 0..<n { dst[i] = src[i * ch + c] }
                }
            }
        }
        count += n
    }

    /// Appends planar frames: channel `c` starts at `source + c * stride`; the first frame
    /// has absolute index `index`.
    mutating func appendPlanar(_ source: UnsafePointer<Float>, stride: Int, frames: Int, at index: Int) {
        let (skip, gap) = alignment(index, frames)
        appendZeros(gap)
        let n = frames - skip
        guard n > 0 else { return }
        reserveFree(n)
        let at = head + count, cap = capacity
        storage.withUnsafeMutableBufferPointer { s in
            for c in 0..<channels {
                (s.baseAddress! + c * cap + at).update(from: source + c * stride + skip, count: n)
            }
        }
        count += n
    }

    /// Marks `frames` frames written directly into storage after `end` (following
    /// `reserveFree`) as held.
    mutating func commit(_ frames: Int) {
        count += frames
    }

    /// Drops every frame with an absolute index below `index`.
    mutating func discard(before index: Int) {
        let n = min(count, max(0, index - start))
        head += n
        start += n
        count -= n
        if count == 0 { head = 0 }
    }

    /// Copies up to `frames` frames from the front, interleaved, to `destination`, and drops them.
    mutating func popInterleaved(into destination: UnsafeMutablePointer<Float>, frames: Int) {
        let n = min(frames, count)
        let h = head, cap = capacity, ch = channels
        storage.withUnsafeBufferPointer { s in
            if ch == 1 {
                destination.update(from: s.baseAddress! + h, count: n)
            } else {
                for c in 0..<ch {
                    let src = s.baseAddress! + c * cap + h
                    for i in 0..<n { destination[i * ch + c] = src[i] }
                }
            }
        }
        discard(before: start + n)
    }

    /// Appends up to `limit` frames from the front to the end of `block` (interleaved) and
    /// drops them; returns how many moved. The pitch shifter and the resampler drain through it.
    mutating func pop(into block: inout AudioBlock, limit: Int) -> Int {
        let n = min(limit, count)
        guard n > 0 else { return 0 }
        let at = block.frames
        block.reserve(frames: at + n)
        let ch = channels
        block.samples.withUnsafeMutableBufferPointer { p in
            popInterleaved(into: p.baseAddress! + at * ch, frames: n)
        }
        block.frames = at + n
        return n
    }

    /// Writes the frames held and where they start (planar, from the front). For a checkpoint.
    func save(into w: inout StateBytes.Writer) {
        w.int(start)
        w.int(count)
        for c in 0..<channels { w.floats(storage[(c * capacity + head)..<(c * capacity + head + count)]) }
    }

    /// Replaces the contents with what `save` wrote from a FIFO of as many channels.
    mutating func restore(from r: inout StateBytes.Reader) throws(StateBytes.Mismatch) {
        let first = try r.int("queue start")
        let n = try r.int("queue length")
        guard n >= 0 else { throw StateBytes.Mismatch("queue length \(n)") }
        var planes: [[Float]] = []
        for _ in 0..<channels { planes.append(try r.floats("queued frames", count: n)) }
        self = PlanarFIFO(channels: channels, capacity: max(capacity, n), start: first)
        for (c, plane) in planes.enumerated() {
            for (i, v) in plane.enumerated() { storage[c * capacity + i] = v }
        }
        count = n
    }
}
