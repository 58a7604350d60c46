import Foundation
import SegnoCore
import SegnoDSP

/// Computes a fingerprint from a stream of blocks, exactly as `fpcalc` does: samples rounded to
/// 16 bits here (`lrintf(x · 32768)`, as ffmpeg converts), then mixed down and resampled to
/// chromaprint's 11025 Hz mono by libswresample in the mode fpcalc sets, and fingerprinted by
/// libchromaprint. Both run in the `segno-decode` helper (never in segno's process: Debian's build links libavcodec):
/// the samples go there over its stdin in 128 KiB messages, built in one buffer this object
/// owns, and only the items come back. The helper is taken from a pool at `init` and given back
/// by `finish`; a printer dropped before `finish` kills its helper. Not thread-safe; one per recording.
public final class Chromaprinter {
    private let helper: DecodeHelper
    private let pool: DecodeHelperPool
    private let channels: Int
    private let rate: Int
    private var remaining: Int
    private(set) package var frames = 0
    public let algorithm: Int
    /// The pending 'S' message: an 8-byte head, then up to `capacity` Int16 samples.
    private let message: UnsafeMutableRawPointer
    /// Samples per message: whole frames, at most 64 Ki samples (128 KiB).
    private let capacity: Int
    /// Samples in the pending message.
    private var pending = 0
    /// Set once the helper was given back or killed.
    private var ended = false

    /// Algorithms fpcalc knows (its `-algorithm`).
    public static let algorithms = 1...5

    /// Starts a fingerprint of a stream of `format`; `length` seconds at most (nil: all of it),
    /// with a helper of `helpers`. Throws `FingerprintError`: `.helperMissing` when there is no
    /// usable `segno-decode`, `.start` when chromaprint refuses the format.
    public init(algorithm: Int = 2, format: AudioFormat, length: Double? = nil,
                helpers: DecodeHelperPool) throws {
        guard Self.algorithms.contains(algorithm) else { throw FingerprintError.badAlgorithm(algorithm) }
        guard format.sampleRate > 0, format.channels > 0 else { throw FingerprintError.start("no audio format") }
        self.algorithm = algorithm
        channels = format.channels
        rate = format.sampleRate
        remaining = length.map { Int($0 * Double(format.sampleRate)) } ?? Int.max
        capacity = max(1, 65_536 / format.channels) * format.channels
        pool = helpers
        helper = try helpers.startFingerprint(rate: format.sampleRate, channels: format.channels, algorithm: algorithm)
        message = UnsafeMutableRawPointer.allocate(byteCount: 8 + capacity * 2, alignment: 16)
    }

    deinit {
        if !ended { helper.kill() }
        message.deallocate()
    }

    /// Feeds one block (its first `frames` frames); frames past `length` are ignored. Throws
    /// `FingerprintError.helperFailed` when the helper is gone.
    public func feed(_ block: AudioBlock) throws {
        let n = min(block.frames, remaining)
        guard n > 0, !ended else { return }
        remaining -= n
        frames += n
        let count = n * channels
        try block.samples.withUnsafeBufferPointer { all in
            var src = all.baseAddress!
            var left = count
            while left > 0 {
                let take = min(left, capacity - pending)
                let dst = (message + 8).assumingMemoryBound(to: Int16.self) + pending
                // Clamp, then round half to even by adding 1.5 · 2^23 (exact for |v| < 2^22): what
                // lrintf does. The sum's low 16 mantissa bits are then the rounded value in two's
                // complement (the sum lies in [2^23, 2^24), one unit per step), so they are taken
                // as they are: the same numbers as converting `sum − 1.5 · 2^23`, without the
                // checked Float → Int16 conversion that kept this loop from being vectorised.
                for i in 0..<take {
                    let v = min(max(src[i] * 32768, -32768), 32767)
                    dst[i] = Int16(truncatingIfNeeded: (v + 12_582_912).bitPattern)
                }
                pending += take
                src += take
                left -= take
                if pending == capacity { try flush() }
            }
        }
    }

    /// Sends the pending samples as one 'S' message.
    private func flush() throws {
        guard pending > 0 else { return }
        message.storeBytes(of: UInt32(DecodeHelper.Message.samples.rawValue), as: UInt32.self)
        (message + 4).storeBytes(of: UInt32(pending * 2), as: UInt32.self)
        let bytes = UnsafeRawBufferPointer(start: message, count: 8 + pending * 2)
        pending = 0
        do { try DecodeHelper.withoutSIGPIPE { try helper.child.writeStdin(bytes) } } catch { throw died("\(error)") }
    }

    /// Kills the helper and says why it failed (`error`, then its last stderr lines).
    private func died(_ error: String) -> FingerprintError {
        ended = true
        helper.kill()
        let why = helper.child.stderrSummary()
        return .helperFailed("\(helper.child.executable) stopped taking samples (\(error))" + (why.isEmpty ? "" : ": \(why)"))
    }

    /// The helper's process id (tests kill it).
    package var helperProcessID: pid_t { helper.child.pid }

    /// True once `length` seconds were fed: the caller may stop feeding.
    public var isFull: Bool { remaining == 0 }

    /// Ends the stream and returns the fingerprint (empty for audio shorter than ~3 s); the
    /// helper goes back to its pool.
    public func finish() throws -> AudioFingerprint {
        guard !ended else { throw FingerprintError.feed }
        try flush()
        do { try helper.send(.end) } catch { throw died("\(error)") }
        let head: (DecodeHelper.Message, Int)?
        let payload: [UInt8]?
        do {
            head = try DecodeHelper.readHead(helper.child)
            payload = try head.flatMap { try DecodeHelper.readPayload(helper.child, length: $0.1) }
        } catch { throw died("\(error)") }
        guard let (type, _) = head, let payload else {
            ended = true
            let status = helper.child.wait()
            let why = helper.child.stderrSummary()
            throw FingerprintError.helperFailed("\(helper.child.executable) ended (\(status))" + (why.isEmpty ? "" : ": \(why)"))
        }
        switch type {
        case .result where payload.count >= 8 && payload.count % 4 == 0:
            let got = payload.withUnsafeBytes { Int($0.load(as: UInt64.self)) }
            guard got == frames else { throw died("it took \(got) frames of \(frames)") }
            ended = true
            pool.checkIn(helper)
            let items = payload.withUnsafeBytes { raw in
                (0..<(raw.count / 4 - 2)).map { raw.loadUnaligned(fromByteOffset: 8 + $0 * 4, as: UInt32.self) }
            }
            return AudioFingerprint(algorithm: algorithm, items: items, duration: Double(frames) / Double(rate))
        case .failed:
            ended = true
            pool.checkIn(helper)
            throw FingerprintError.helperFailed(HelperStream.oneLine(payload))
        default:
            throw died("unexpected message \(type)")
        }
    }

    /// Fingerprints a whole file with segno's decoder (`segno info --fingerprint`).
    public static func fingerprint(path: String, tools: AudioTools, algorithm: Int = 2, length: Double? = nil) throws -> AudioFingerprint {
        let decoder = try DecoderFactory.open(path: path, tools: tools)
        defer { decoder.close() }
        let printer = try Chromaprinter(algorithm: algorithm, format: decoder.info.format, length: length, helpers: tools.fingerprintHelpers)
        var block = AudioBlock(channels: decoder.info.channels, capacity: 4096)
        while !printer.isFull {
            let n = try decoder.read(into: &block, maxFrames: 4096)
            if n == 0 { break }
            try printer.feed(block)
        }
        return try printer.finish()
    }
}

