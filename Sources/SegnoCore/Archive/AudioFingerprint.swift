import CChromaprint
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
    /// there are no items or libchromaprint cannot be loaded.
    public var compressed: String {
        guard !items.isEmpty, let lib = try? ChromaprintLibrary.get() else { return "" }
        var out: UnsafeMutablePointer<CChar>? = nil
        var size: Int32 = 0
        let ok = items.withUnsafeBufferPointer { b in
            lib.encodeFingerprint(b.baseAddress, Int32(b.count), Int32(algorithm - 1), &out, &size, 1)
        }
        guard ok == 1, let out else { return "" }
        defer { lib.dealloc(out) }
        return String(cString: out)
    }
}

/// Computes a fingerprint from a stream of blocks with libchromaprint, exactly as `fpcalc` does:
/// the stream's own rate and channels are given to chromaprint (which mixes down and resamples to
/// 11025 Hz itself), samples rounded to 16 bits (`lrintf(x · 32768)`, as ffmpeg converts). Not
/// thread-safe; one per recording.
public final class Chromaprinter {
    private var context: OpaquePointer?
    private let lib: ChromaprintLibrary
    private let channels: Int
    private let rate: Int
    private var remaining: Int
    private var buffer: [Int16] = []
    private(set) var frames = 0
    public let algorithm: Int

    /// Algorithms fpcalc knows (its `-algorithm`).
    public static let algorithms = 1...5

    /// Starts a fingerprint of a stream of `format`; `length` seconds at most (nil: all of it).
    public init(algorithm: Int = 2, format: AudioFormat, length: Double? = nil) throws {
        guard Self.algorithms.contains(algorithm) else { throw FingerprintError.badAlgorithm(algorithm) }
        guard format.sampleRate > 0, format.channels > 0 else { throw FingerprintError.start("no audio format") }
        self.algorithm = algorithm
        channels = format.channels
        rate = format.sampleRate
        remaining = length.map { Int($0 * Double(format.sampleRate)) } ?? Int.max
        lib = try ChromaprintLibrary.get()
        guard let ctx = lib.new(Int32(algorithm - 1)) else { throw FingerprintError.start("chromaprint_new failed") }
        context = ctx
        guard lib.start(ctx, Int32(format.sampleRate), Int32(format.channels)) == 1 else {
            lib.free(ctx)
            context = nil
            throw FingerprintError.start("chromaprint cannot take \(format.sampleRate) Hz, \(format.channels) channels")
        }
    }

    deinit { if let context { lib.free(context) } }

    /// Feeds one block (its first `frames` frames); frames past `length` are ignored.
    public func feed(_ block: AudioBlock) throws {
        let n = min(block.frames, remaining)
        guard n > 0, let context else { return }
        remaining -= n
        frames += n
        let count = n * channels
        if buffer.count < count { buffer = [Int16](repeating: 0, count: count) }
        block.samples.withUnsafeBufferPointer { src in
            buffer.withUnsafeMutableBufferPointer { dst in
                // Clamp, then round half to even by adding and taking away 1.5 · 2^23 (exact for
                // |v| < 2^22): what lrintf does, in a loop the compiler vectorises.
                for i in 0..<count {
                    let v = min(max(src[i] * 32768, -32768), 32767)
                    dst[i] = Int16((v + 12_582_912) - 12_582_912)
                }
            }
        }
        let ok = buffer.withUnsafeBufferPointer { lib.feed(context, $0.baseAddress, Int32(count)) }
        guard ok == 1 else { throw FingerprintError.feed }
    }

    /// True once `length` seconds were fed: the caller may stop feeding.
    public var isFull: Bool { remaining == 0 }

    /// Ends the stream and returns the fingerprint (empty for audio shorter than ~3 s).
    public func finish() throws -> AudioFingerprint {
        guard let context else { throw FingerprintError.feed }
        guard lib.finish(context) == 1 else { throw FingerprintError.feed }
        var raw: UnsafeMutablePointer<UInt32>? = nil
        var size: Int32 = 0
        guard lib.getRawFingerprint(context, &raw, &size) == 1 else { throw FingerprintError.feed }
        defer { if let raw { lib.dealloc(raw) } }
        let items = raw.map { Array(UnsafeBufferPointer(start: $0, count: Int(size))) } ?? []
        return AudioFingerprint(algorithm: algorithm, items: items, duration: Double(frames) / Double(rate))
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
    /// chromaprint refused to start.
    case start(String)
    /// chromaprint failed while taking or ending the stream.
    case feed

    public var description: String {
        switch self {
        case .badAlgorithm(let a): return "algorithm \(a) is not one of 1…5"
        case .start(let m): return "fingerprint: \(m)"
        case .feed: return "fingerprint: chromaprint failed on the stream"
        }
    }
}
