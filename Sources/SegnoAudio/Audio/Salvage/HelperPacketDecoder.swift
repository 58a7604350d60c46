import Foundation
import SegnoCore

/// Packets of a damaged Ogg (Vorbis, Opus) or ADTS (AAC) stream decoded one by one in the
/// `segno-decode` helper (libavcodec never enters segno's process): segno finds the packets,
/// drops the broken ones and places the rest in time; the helper says how many frames each packet
/// gave (request 'C', see `Sources/segno-decode/PacketDecode.swift`). Owned by one salvaging
/// decoder; the helper goes back to its pool when the stream ended cleanly, and is killed otherwise.
final package class HelperPacketDecoder {
    package enum Codec: UInt32 {
        case aac = 1, vorbis = 3, opus = 4
    }

    /// What one request gave: the output format (0 before the first decoded frame), the frames of
    /// each packet (−1: it did not decode), and the interleaved samples of all of them.
    package struct Batch {
        package var rate = 0
        package var channels = 0
        package var counts: [Int] = []
        package var samples: [Float] = []
    }

    private let path: String
    private let pool: DecodeHelperPool
    private var helper: DecodeHelper?
    /// The request being built (reused).
    private var request: [UInt8] = []
    private var head: [UInt8] = []

    /// Opens a decoder for `codec` with `extradata` in a helper from `pool`. Throws
    /// `AudioError.missingDecoder` when there is no usable helper, `.decodeFailed` when libavcodec
    /// refuses the configuration. Called once per damaged recording.
    package init(path: String, codec: Codec, rate: Int, channels: Int, extradata: [UInt8], pool: DecodeHelperPool) throws {
        self.path = path
        self.pool = pool
        let helper: DecodeHelper
        do { helper = try pool.take().helper } catch {
            throw AudioError.missingDecoder(path: path, detail: "salvaging \(codec) needs the segno-decode helper: \(error)")
        }
        var payload = [UInt8]()
        for v in [codec.rawValue, UInt32(rate), UInt32(channels)] { withUnsafeBytes(of: v) { payload += $0 } }
        payload += extradata
        do {
            try helper.send(.codecOpen, payload)
            guard let (type, n) = try DecodeHelper.readHead(helper.child), let p = try DecodeHelper.readPayload(helper.child, length: n) else {
                throw AudioError.decodeFailed(path: path, detail: "\(helper.child.executable) ended while opening a decoder")
            }
            guard type == .header else {
                if type == .failed { pool.checkIn(helper) } else { helper.kill() }
                throw AudioError.decodeFailed(path: path, detail: type == .failed ? HelperStream.oneLine(p) : "unexpected message \(type) from the helper")
            }
        } catch let e as AudioError {
            throw e
        } catch {
            helper.kill()
            throw AudioError.decodeFailed(path: path, detail: "the segno-decode helper: \(error)")
        }
        self.helper = helper
    }

    deinit { close() }

    /// Decodes the packets whose bytes lie back to back in `bytes` with `lengths`; `flush` resets
    /// the decoder first (a gap precedes them). Fills `batch`. Throws `AudioError` when the helper dies.
    package func decode(_ bytes: ArraySlice<UInt8>, lengths: [Int], flush: Bool, into batch: inout Batch) throws {
        request.removeAll(keepingCapacity: true)
        for v in [UInt32(flush ? 1 : 0), UInt32(lengths.count)] { withUnsafeBytes(of: v) { request += $0 } }
        for l in lengths { withUnsafeBytes(of: UInt32(l)) { request += $0 } }
        request += bytes
        try exchange(.packets, request, into: &batch)
    }

    /// What the decoder still holds at the end of the stream (one count), then gives the helper back.
    package func finish(into batch: inout Batch) throws {
        try exchange(.end, [], into: &batch)
        if let helper { pool.checkIn(helper) }
        helper = nil
    }

    private func exchange(_ type: DecodeHelper.Message, _ payload: [UInt8], into batch: inout Batch) throws {
        guard let helper else { throw AudioError.decodeFailed(path: path, detail: "the packet decoder is closed") }
        do {
            try helper.send(type, payload)
            guard let (reply, n) = try DecodeHelper.readHead(helper.child), reply == .decoded, n >= 12 else {
                throw AudioError.decodeFailed(path: path, detail: "the segno-decode helper stopped answering")
            }
            head = [UInt8](repeating: 0, count: 12)
            try read(&head)
            let (rate, channels, count) = head.withUnsafeBytes {
                (Int($0.load(as: UInt32.self)), Int($0.load(fromByteOffset: 4, as: UInt32.self)), Int($0.load(fromByteOffset: 8, as: UInt32.self)))
            }
            guard 12 + count * 4 <= n, (n - 12 - count * 4) % 4 == 0 else { throw AudioError.decodeFailed(path: path, detail: "a bad reply from the helper") }
            var counts = [Int32](repeating: 0, count: count)
            try counts.withUnsafeMutableBytes { try readRaw($0) }
            batch.rate = rate
            batch.channels = channels
            batch.counts = counts.map(Int.init)
            let floats = (n - 12 - count * 4) / 4
            if batch.samples.count != floats { batch.samples = [Float](repeating: 0, count: floats) }
            try batch.samples.withUnsafeMutableBytes { try readRaw($0) }
        } catch let e as AudioError {
            close()
            throw e
        } catch {
            close()
            throw AudioError.decodeFailed(path: path, detail: "the segno-decode helper: \(error)")
        }
    }

    private func read(_ bytes: inout [UInt8]) throws { try bytes.withUnsafeMutableBytes { try readRaw($0) } }

    private func readRaw(_ raw: UnsafeMutableRawBufferPointer) throws {
        guard let helper else { return }
        var have = 0
        while have < raw.count {
            let n = try helper.child.readStdout(into: UnsafeMutableRawBufferPointer(rebasing: raw[have...]))
            if n == 0 { throw AudioError.decodeFailed(path: path, detail: "the segno-decode helper ended mid-reply") }
            have += n
        }
    }

    /// Kills a helper still in a session (it would be waiting for packets). Safe to call twice.
    package func close() {
        helper?.kill()
        helper = nil
    }
}

/// What a salvaging packet decoder hands out next: silence for a gap, then decoded samples,
/// in order. Holds one batch's samples at a time (bounded by the helper's reply limit).
package struct SalvageQueue {
    private var parts: [(silence: Int, samples: [Float])] = []
    private var offset = 0
    package let channels: Int

    package init(channels: Int) { self.channels = channels }

    package var isEmpty: Bool { parts.isEmpty }

    /// Queues `frames` frames of silence.
    mutating package func silence(_ frames: Int) {
        guard frames > 0 else { return }
        parts.append((frames, []))
    }

    /// Queues the interleaved samples `s` (whole frames).
    mutating package func append(_ s: ArraySlice<Float>) {
        guard !s.isEmpty else { return }
        parts.append((0, Array(s)))
    }

    /// Moves up to `max` frames into `out` from frame `at`; returns how many.
    mutating package func drain(into out: UnsafeMutableBufferPointer<Float>, at: Int, max: Int) -> Int {
        var filled = 0
        while filled < max, !parts.isEmpty {
            let dst = out.baseAddress! + (at + filled) * channels
            if parts[0].silence > 0 {
                let n = min(parts[0].silence, max - filled)
                dst.update(repeating: 0, count: n * channels)
                parts[0].silence -= n
                filled += n
                if parts[0].silence == 0 { parts.removeFirst() }
                continue
            }
            let total = parts[0].samples.count / channels
            let n = min(total - offset, max - filled)
            parts[0].samples.withUnsafeBufferPointer { dst.update(from: $0.baseAddress! + offset * channels, count: n * channels) }
            offset += n
            filled += n
            if offset == total { parts.removeFirst(); offset = 0 }
        }
        return filled
    }
}
