import Foundation
import SegnoDSP

/// A recording's raw Chromaprint fingerprint: one 32-bit item per ~0.124 s of audio (algorithm 2:
/// 1365 samples at 11025 Hz). Stored in the state database (`fingerprint.items`) so that
/// `segno duplicates` never decodes audio again.
public struct AudioFingerprint: Sendable, Equatable, Codable {
    /// fpcalc's numbering: 1…5, chromaprint's default is 2.
    public var algorithm: Int
    /// The items, as `fpcalc -raw` prints them (unsigned).
    public var items: [UInt32]
    /// Seconds of audio fingerprinted (the stream at the tap, cut at `length`).
    public var duration: Double

    public init(algorithm: Int, items: [UInt32], duration: Double) {
        self.algorithm = algorithm
        self.items = items
        self.duration = duration
    }

    /// Seconds of audio one item advances by: 1365 / 11025 for every algorithm chromaprint 1.5 has.
    public static let itemSeconds = 1365.0 / 11025.0

    /// The items as a BLOB: 4 bytes each, little-endian (the `fingerprint.items` column).
    public var blob: Data {
        var d = Data(count: items.count * 4)
        d.withUnsafeMutableBytes { raw in
            for (i, v) in items.enumerated() { raw.storeBytes(of: v.littleEndian, toByteOffset: i * 4, as: UInt32.self) }
        }
        return d
    }

    /// Items from a BLOB written by `blob`; a trailing partial item is ignored.
    public static func items(blob: Data) -> [UInt32] {
        blob.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self)) }
        }
    }

    /// fpcalc's default (compressed, URL-safe base64) form, as AcoustID takes it; empty when
    /// there are no items. Made here, not by libchromaprint (which segno does not load), in
    /// chromaprint 1.5's format: a byte with chromaprint's algorithm number (fpcalc's − 1), the
    /// item count in 3 bytes big-endian, then for each item XORed with the one before, the
    /// distances between its set bits (lowest first; 1-based; 0 ends the item) packed 3 bits
    /// each, least significant first, a distance of 7 or more written as 7 with the rest packed
    /// after all of those in 5 bits each; base64 with `-` and `_`, no padding.
    public var compressed: String {
        guard !items.isEmpty else { return "" }
        var normal: [UInt8] = []
        var exceptional: [UInt8] = []
        normal.reserveCapacity(items.count * 4)
        var previous: UInt32 = 0
        for item in items {
            var x = item ^ previous
            previous = item
            var last = 0
            while x != 0 {
                let bit = x.trailingZeroBitCount + 1
                let distance = bit - last
                if distance >= 7 {
                    normal.append(7)
                    exceptional.append(UInt8(distance - 7))
                } else {
                    normal.append(UInt8(distance))
                }
                last = bit
                x &= x - 1
            }
            normal.append(0)
        }
        let n = items.count
        var bytes: [UInt8] = [UInt8(truncatingIfNeeded: algorithm - 1), UInt8(truncatingIfNeeded: n >> 16),
                              UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
        Self.pack(normal, bits: 3, into: &bytes)
        Self.pack(exceptional, bits: 5, into: &bytes)
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Appends `values` (each below 2^`bits`) packed least significant bit first, the last byte
    /// filled with zeros.
    private static func pack(_ values: [UInt8], bits: Int, into out: inout [UInt8]) {
        var acc: UInt32 = 0
        var have = 0
        for v in values {
            acc |= UInt32(v) << UInt32(have)
            have += bits
            while have >= 8 {
                out.append(UInt8(truncatingIfNeeded: acc))
                acc >>= 8
                have -= 8
            }
        }
        if have > 0 { out.append(UInt8(truncatingIfNeeded: acc)) }
    }
}

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
    private(set) var frames = 0
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
                helpers: DecodeHelperPool = .forFingerprints) throws {
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
    var helperProcessID: pid_t { helper.child.pid }

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
    public static func fingerprint(path: String, algorithm: Int = 2, length: Double? = nil) throws -> AudioFingerprint {
        let decoder = try DecoderFactory.open(path: path)
        defer { decoder.close() }
        let printer = try Chromaprinter(algorithm: algorithm, format: decoder.info.format, length: length)
        var block = AudioBlock(channels: decoder.info.channels, capacity: 4096)
        while !printer.isFull {
            let n = try decoder.read(into: &block, maxFrames: 4096)
            if n == 0 { break }
            try printer.feed(block)
        }
        return try printer.finish()
    }
}

/// Why a fingerprint could not be made.
public enum FingerprintError: Error, Sendable, CustomStringConvertible {
    /// An algorithm number fpcalc does not know.
    case badAlgorithm(Int)
    /// chromaprint refused to start (a format it cannot take).
    case start(String)
    /// chromaprint failed while taking or ending the stream.
    case feed
    /// There is no usable `segno-decode` helper (none found, or one of another protocol).
    case helperMissing(String)
    /// The helper failed or died while making the fingerprint.
    case helperFailed(String)

    public var description: String {
        switch self {
        case .badAlgorithm(let a): return "algorithm \(a) is not one of 1…5"
        case .start(let m): return "fingerprint: \(m)"
        case .feed: return "fingerprint: chromaprint failed on the stream"
        case .helperMissing(let why): return "segno-decode is missing or too old for fingerprints; reinstall (make install): \(why)"
        case .helperFailed(let why): return "fingerprint: \(why)"
        }
    }

    /// A format chromaprint refuses is the spec's (the stream at the tap); anything about the
    /// helper program is the environment's, retried by the next plain run.
    public var failureClass: FailureClass {
        switch self {
        case .badAlgorithm, .start: return .spec
        case .feed, .helperMissing, .helperFailed: return .environment
        }
    }
}
