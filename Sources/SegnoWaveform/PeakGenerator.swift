import SegnoDSP

/// Whether the peaks describe the channels mixed to one, or each channel on its own.
public enum WaveformChannels: Sendable, Hashable {
    /// One output channel: per frame, the int16 sum of the channels divided by the channel count,
    /// truncating toward zero (C integer division), as audiowaveform does by default.
    /// (1, −2) → 0, (−3, −4) → −3. Any channel count ≥ 1.
    case mix
    /// One output channel per input channel (audiowaveform's `--split-channels`), 1–24 channels.
    case split
}

/// Computes audiowaveform-compatible peaks (min and max per point) from a stream of audio, at one
/// or several zoom levels in a single pass.
///
/// Lifecycle, once per recording: `init` when the stream's format is known (it validates
/// everything), `process` for each block of interleaved frames, `finish(bits:)` at the end.
/// Each sample is converted to int16 (see `Int16Conversion`), mixed or kept per channel, and
/// point i of a zoom covers frames [i·spp, (i+1)·spp); the last, partial point is included, so
/// `length = ⌈frames / spp⌉` and an empty stream gives length 0.
///
/// Every zoom reads the same int16 stream, so each zoom of a multi-zoom run is byte for byte the
/// run of that zoom alone; and the output does not depend on how the stream is cut into blocks.
///
/// The steady state allocates nothing: samples are converted a chunk at a time into a scratch
/// buffer made once, then each zoom reduces the chunk with a vectorised min/max loop. Only the
/// output arrays grow (reserved up front when the frame count is known).
public struct PeakGenerator: Sendable {
    /// The stream's sample rate and channel count.
    public let format: AudioFormat
    /// Mixed or split channels.
    public let channelMode: WaveformChannels
    /// How Float samples become int16.
    public let conversion: Int16Conversion
    /// Frames per point of each zoom, in the order given to `init`.
    public let samplesPerPixel: [Int]
    /// Frames consumed so far.
    public private(set) var framesProcessed: Int = 0

    /// Output channels: 1 when mixed, `format.channels` when split.
    public var outputChannels: Int { channelMode == .mix ? 1 : format.channels }

    /// The most channels a stream may have to be mixed (libsndfile's own limit).
    public static let maxMixedChannels = 1024

    /// Frames converted per chunk; the scratch buffer holds this many frames per output channel.
    static let chunkFrames = 4096

    private var scratch: [Int16]
    private var zooms: [ZoomAccumulator]

    /// Starts a generator for a stream of `format` at the given zooms (frames per point, each ≥ 2).
    /// `expectedFrames`, when the source knows it, only reserves the output arrays.
    /// Called once per recording, when the stream starts.
    public init(
        format: AudioFormat,
        samplesPerPixel: [Int],
        channels: WaveformChannels = .mix,
        conversion: Int16Conversion = .integerPCM,
        expectedFrames: Int? = nil
    ) throws(WaveformError) {
        guard format.sampleRate >= 1, format.sampleRate <= Int(Int32.max) else { throw .invalidSampleRate(format.sampleRate) }
        guard format.channels >= 1, format.channels <= Self.maxMixedChannels else {
            throw .invalidChannelCount(format.channels)
        }
        if channels == .split && format.channels > WaveformData.maxChannels {
            throw .invalidChannelCount(format.channels)
        }
        guard !samplesPerPixel.isEmpty else { throw .noZoomLevels }
        for spp in samplesPerPixel where spp < 2 || spp > Int(Int32.max) {
            throw .invalidSamplesPerPixel(spp)
        }
        self.format = format
        self.channelMode = channels
        self.conversion = conversion
        self.samplesPerPixel = samplesPerPixel
        let out = channels == .mix ? 1 : format.channels
        self.scratch = [Int16](repeating: 0, count: Self.chunkFrames * out)
        self.zooms = samplesPerPixel.map { spp in
            var reserve = 0
            if let frames = expectedFrames, frames > 0 {
                // Cap the reservation: a header may claim anything.
                reserve = Swift.min((frames / spp + 1) * out * 2, 1 << 24)
            }
            return ZoomAccumulator(samplesPerPixel: spp, channels: out, reserve: reserve)
        }
    }

    /// Starts a generator from resolutions as the user gave them (`pixelsPerSecond` and `points`
    /// are turned into samples per pixel with `format.sampleRate` and `expectedFrames`).
    public init(
        format: AudioFormat,
        resolutions: [WaveformResolution],
        channels: WaveformChannels = .mix,
        conversion: Int16Conversion = .integerPCM,
        expectedFrames: Int? = nil
    ) throws(WaveformError) {
        var spps: [Int] = []
        for r in resolutions {
            spps.append(try r.samplesPerPixel(sampleRate: format.sampleRate, frames: expectedFrames))
        }
        try self.init(format: format, samplesPerPixel: spps, channels: channels,
                      conversion: conversion, expectedFrames: expectedFrames)
    }

    /// Feeds one block from the chain (its valid frames). Called once per block.
    public mutating func process(_ block: AudioBlock) throws(WaveformError) {
        guard block.channels == format.channels else {
            throw .blockChannelMismatch(expected: format.channels, got: block.channels)
        }
        block.samples.withUnsafeBufferPointer { process($0, frames: block.frames) }
    }

    /// Feeds `frames` interleaved Float32 frames (`frames × format.channels` samples).
    public mutating func process(_ samples: UnsafeBufferPointer<Float>, frames: Int) {
        switch conversion {
        case .integerPCM: run(samples, frames: frames, IntegerPCMConverter.self)
        case .floatingPoint: run(samples, frames: frames, FloatingPointConverter.self)
        case .lossyCodec: run(samples, frames: frames, LossyCodecConverter.self)
        }
    }

    /// Feeds `frames` interleaved int16 frames, used as they are (`conversion` is ignored): for
    /// sources decoded with libsndfile's `sf_readf_short`, exactly what audiowaveform reads.
    /// Mono streams are reduced where they lie and stereo mixes are made 8 frames per vector op
    /// (the common cases); other layouts go through the generic conversion loops.
    public mutating func process(int16 samples: UnsafeBufferPointer<Int16>, frames: Int) {
        let channels = format.channels
        guard channels <= 2, channelMode == .mix || channels == 1 else {
            run(samples, frames: frames, Int16Identity.self)
            return
        }
        precondition(frames >= 0 && samples.count >= frames * channels,
                     "block holds fewer than frames × channels samples")
        guard frames > 0, let src = samples.baseAddress else { return }
        var zs: [ZoomAccumulator] = []
        swap(&zs, &zooms)  // take ownership while the scratch buffer is borrowed
        if channels == 1 {
            for z in zs.indices { zs[z].consume(src, frames: frames, planeStride: 0) }
        } else {
            let chunk = Self.chunkFrames
            scratch.withUnsafeMutableBufferPointer { buf in
                let dst = buf.baseAddress!
                var done = 0
                while done < frames {
                    let n = Swift.min(chunk, frames - done)
                    mixStereoInt16(src + 2 * done, dst, n)
                    for z in zs.indices { zs[z].consume(UnsafePointer(dst), frames: n, planeStride: chunk) }
                    done += n
                }
            }
        }
        swap(&zs, &zooms)
        framesProcessed += frames
    }

    /// The peaks, one `WaveformData` per zoom in `samplesPerPixel` order, with the last partial
    /// point included. Called once, at the end of the stream: the points move out of the
    /// generator without a copy, and it is left empty. (To look at the peaks mid-stream, finish
    /// a copy: `var peek = generator; try peek.finish()`; the copy shares nothing it mutates.)
    /// `bits` is 8 or 16; 8-bit values are int16 / 256 truncating toward zero.
    public mutating func finish(bits: Int = 16) throws(WaveformError) -> [WaveformData] {
        guard bits == 8 || bits == 16 else { throw .invalidBits(bits) }
        var out: [WaveformData] = []
        out.reserveCapacity(zooms.count)
        for z in zooms.indices {
            let data = zooms[z].takeData(bits: bits)
            out.append(WaveformData(unchecked: outputChannels, format.sampleRate, zooms[z].samplesPerPixel,
                                    bits, data))
        }
        return out
    }

    private mutating func run<K: Int16Converter>(
        _ samples: UnsafeBufferPointer<K.Sample>, frames: Int, _ k: K.Type
    ) {
        let channels = format.channels
        precondition(frames >= 0 && samples.count >= frames * channels,
                     "block holds fewer than frames × channels samples")
        guard frames > 0, let src = samples.baseAddress else { return }
        let chunk = Self.chunkFrames
        let mix = channelMode == .mix
        var zs: [ZoomAccumulator] = []
        swap(&zs, &zooms)  // take ownership while the scratch buffer is borrowed
        scratch.withUnsafeMutableBufferPointer { buf in
            let dst = buf.baseAddress!
            var done = 0
            while done < frames {
                let n = Swift.min(chunk, frames - done)
                let from = src + done * channels
                if mix {
                    switch channels {
                    case 1: convertMono(from, dst, n, k)
                    case 2: convertStereoMix(from, dst, n, k)
                    default: convertMix(from, dst, n, channels, k)
                    }
                } else {
                    convertSplit(from, dst, n, channels, chunk, k)
                }
                let planes = UnsafePointer(dst)
                for z in zs.indices {
                    zs[z].consume(planes, frames: n, planeStride: chunk)
                }
                done += n
            }
        }
        swap(&zs, &zooms)
        framesProcessed += frames
    }
}

// MARK: - Sample loops (specialised per converter, branch-free, vectorised by the compiler)

@inline(__always)
private func convertMono<K: Int16Converter>(
    _ src: UnsafePointer<K.Sample>, _ dst: UnsafeMutablePointer<Int16>, _ n: Int, _: K.Type
) {
    for f in 0..<n {
        dst[f] = Int16(truncatingIfNeeded: K.convert(src[f]))
    }
}

@inline(__always)
private func convertStereoMix<K: Int16Converter>(
    _ src: UnsafePointer<K.Sample>, _ dst: UnsafeMutablePointer<Int16>, _ n: Int, _: K.Type
) {
    for f in 0..<n {
        let s = K.convert(src[2 * f]) &+ K.convert(src[2 * f + 1])
        dst[f] = Int16(truncatingIfNeeded: s / 2)  // truncates toward zero, like C
    }
}

@inline(__always)
private func convertMix<K: Int16Converter>(
    _ src: UnsafePointer<K.Sample>, _ dst: UnsafeMutablePointer<Int16>, _ n: Int, _ channels: Int,
    _: K.Type
) {
    let divisor = Int32(channels)
    for f in 0..<n {
        var s: Int32 = 0
        let frame = src + f * channels
        for c in 0..<channels { s &+= K.convert(frame[c]) }
        // |s / channels| ≤ 32768, and only −32768 reaches the bottom: no clamp needed; with at
        // most 1024 channels the Int32 sum cannot overflow.
        dst[f] = Int16(truncatingIfNeeded: s / divisor)
    }
}

@inline(__always)
private func convertSplit<K: Int16Converter>(
    _ src: UnsafePointer<K.Sample>, _ dst: UnsafeMutablePointer<Int16>, _ n: Int, _ channels: Int,
    _ planeStride: Int, _: K.Type
) {
    if channels == 2 {
        let right = dst + planeStride
        for f in 0..<n {
            dst[f] = Int16(truncatingIfNeeded: K.convert(src[2 * f]))
            right[f] = Int16(truncatingIfNeeded: K.convert(src[2 * f + 1]))
        }
        return
    }
    for c in 0..<channels {
        let plane = dst + c * planeStride
        for f in 0..<n {
            plane[f] = Int16(truncatingIfNeeded: K.convert(src[f * channels + c]))
        }
    }
}

/// Mixes `n` interleaved stereo int16 frames to mono: (L + R) / 2 truncated toward zero, the
/// same values as `convertStereoMix`, eight frames per step with SSE2-sized vector operations.
@inline(__always)
private func mixStereoInt16(_ src: UnsafePointer<Int16>, _ dst: UnsafeMutablePointer<Int16>, _ n: Int) {
    var f = 0
    #if _endian(little)
    let raw = UnsafeRawPointer(src)
    while f + 8 <= n {
        // One frame per Int32 lane: L in the low half, R in the high half.
        let x = raw.loadUnaligned(fromByteOffset: 4 * f, as: SIMD8<Int32>.self)
        let sum = ((x &<< 16) &>> 16) &+ (x &>> 16)
        let mixed = (sum &- (sum &>> 31)) &>> 1  // toward zero
        UnsafeMutableRawPointer(dst + f).storeBytes(of: SIMD8<Int16>(truncatingIfNeeded: mixed), as: SIMD8<Int16>.self)
        f += 8
    }
    #endif
    while f < n {
        let s = Int32(src[2 * f]) + Int32(src[2 * f + 1])
        dst[f] = Int16(truncatingIfNeeded: s / 2)
        f += 1
    }
}

/// int16 input used as it is.
enum Int16Identity: Int16Converter {
    @inline(__always)
    static func convert(_ x: Int16) -> Int32 { Int32(x) }
}

// MARK: - One zoom level

/// The running min and max of one zoom level, and the points finished so far.
struct ZoomAccumulator: Sendable {
    let samplesPerPixel: Int
    let channels: Int
    /// Frames in the current, unfinished point.
    private var count = 0
    private var lo: [Int16]
    private var hi: [Int16]
    /// Output storage; only the first `used` values are points. Grown by doubling, written
    /// through a pointer so a point costs two stores, not two checked appends.
    private var data: [Int16]
    private var used = 0

    init(samplesPerPixel: Int, channels: Int, reserve: Int) {
        self.samplesPerPixel = samplesPerPixel
        self.channels = channels
        lo = [Int16](repeating: .max, count: channels)
        hi = [Int16](repeating: .min, count: channels)
        data = []
        grow(to: reserve)
    }

    /// Makes `data` hold at least `size` values, keeping the first `used`. The new tail is left
    /// uninitialised (Int16 is trivial, and only written values are ever read), so no time goes
    /// into zero-filling an output that can reach tens of MB.
    private mutating func grow(to size: Int) {
        guard data.count < size else { return }
        let keep = used
        data = [Int16](unsafeUninitializedCapacity: size) { buf, initialized in
            data.withUnsafeBufferPointer { old in
                if keep > 0 { buf.baseAddress!.update(from: old.baseAddress!, count: keep) }
            }
            initialized = size
        }
    }

    /// Takes `frames` int16 frames laid out as `channels` planes `planeStride` apart.
    mutating func consume(_ planes: UnsafePointer<Int16>, frames: Int, planeStride: Int) {
        // Points this call can finish: ⌊(count + frames) / spp⌋; one more for `takeData`'s partial point.
        let need = used + ((count + frames) / samplesPerPixel + 1) * channels * 2
        if data.count < need { grow(to: Swift.max(need, 2 * data.count)) }
        var out: [Int16] = []
        swap(&out, &data)  // own the storage while writing through its pointer
        out.withUnsafeMutableBufferPointer { buf in
            if channels == 1 {
                consumeMono(planes, frames, buf.baseAddress!)
            } else {
                consumeSplit(planes, frames, planeStride, buf.baseAddress!)
            }
        }
        swap(&out, &data)
    }

    private mutating func consumeMono(_ p: UnsafePointer<Int16>, _ frames: Int, _ o: UnsafeMutablePointer<Int16>) {
        let spp = samplesPerPixel
        var l = lo[0], h = hi[0], cnt = count, u = used, i = 0
        var smallZoomDone = spp > 16
        while i < frames {
            if cnt == 0 && !smallZoomDone {
                // Small zooms: whole points in a plain loop (the vector loop's set-up would dominate).
                smallZoomDone = true
                let whole = (frames - i) / spp
                for px in 0..<whole {
                    let q = p + i + px * spp
                    var a = q[0], b = q[0]
                    for k in 1..<spp {
                        let v = q[k]
                        a = v < a ? v : a
                        b = v > b ? v : b
                    }
                    o[u] = a
                    o[u + 1] = b
                    u += 2
                }
                i += whole * spp
                continue
            }
            let take = Swift.min(spp - cnt, frames - i)
            (l, h) = minMax(p + i, take, l, h)
            cnt += take
            i += take
            if cnt == spp {
                o[u] = l
                o[u + 1] = h
                u += 2
                l = .max
                h = .min
                cnt = 0
            }
        }
        lo[0] = l
        hi[0] = h
        count = cnt
        used = u
    }

    private mutating func consumeSplit(
        _ planes: UnsafePointer<Int16>, _ frames: Int, _ planeStride: Int, _ o: UnsafeMutablePointer<Int16>
    ) {
        var i = 0
        while i < frames {
            let take = Swift.min(samplesPerPixel - count, frames - i)
            for c in 0..<channels {
                (lo[c], hi[c]) = minMax(planes + c * planeStride + i, take, lo[c], hi[c])
            }
            count += take
            i += take
            if count == samplesPerPixel {
                for c in 0..<channels {
                    o[used] = lo[c]
                    o[used + 1] = hi[c]
                    used += 2
                    lo[c] = .max
                    hi[c] = .min
                }
                count = 0
            }
        }
    }

    /// Moves out the finished points plus the partial one (if any frames are in it), converted
    /// to `bits` in place, and leaves the accumulator empty.
    mutating func takeData(bits: Int) -> [Int16] {
        var out: [Int16] = []
        swap(&out, &data)
        out.removeSubrange(used...)
        if count > 0 {
            for c in 0..<channels {
                out.append(lo[c])
                out.append(hi[c])
            }
        }
        if bits == 8 {
            out.withUnsafeMutableBufferPointer { b in
                for k in b.indices { b[k] /= 256 }  // truncates toward zero, like C
            }
        }
        used = 0
        count = 0
        for c in 0..<channels {
            lo[c] = .max
            hi[c] = .min
        }
        return out
    }
}

/// Min and max of `n` values starting at `p`, folded into `lo` and `hi`.
/// A plain loop: LLVM vectorises it into SSE2 `pminsw`/`pmaxsw` (an explicit SIMD16 version
/// was slower: `pointwiseMin` stayed an out-of-line call).
@inline(__always)
private func minMax(_ p: UnsafePointer<Int16>, _ n: Int, _ lo: Int16, _ hi: Int16) -> (Int16, Int16) {
    var l = lo, h = hi
    for k in 0..<n {
        let v = p[k]
        l = v < l ? v : l
        h = v > h ? v : h
    }
    return (l, h)
}
