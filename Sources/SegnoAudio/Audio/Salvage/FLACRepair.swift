import CFLAC
import Crypto
import Foundation
import SegnoCore

/// `segno repair` for a FLAC file cut short (decision 0069): libFLAC walks its frames; the
/// metadata and every whole frame up to the first one that does not decode are copied as they
/// are, and STREAMINFO gets the truth about them — total samples, smallest and largest frame,
/// and the MD5 of the decoded samples, so `flac -t` verifies the result. Seek points past the
/// kept audio become placeholders. Nothing is re-encoded; the damaged file is only read.
final package class FLACRepair {
    private let path: String
    private var bits = 16
    private var channels = 0
    /// Byte offset of the end of each frame kept, and the samples (per channel) it holds.
    private var ends: [UInt64] = []
    private var samples: UInt64 = 0
    private var declared: UInt64 = 0
    private var firstFrame: UInt64 = 0
    private var failed = false
    private var errorText = ""
    private var md5 = Insecure.MD5()
    private var scratch: [UInt8] = []
    private var decoder: UnsafeMutablePointer<FLAC__StreamDecoder>?

    private init(path: String) { self.path = path }

    /// Repairs `input` into `output`. Throws `RepairError`.
    static package func repair(input: String, output: String) throws -> StreamRepair.Outcome {
        let walk = FLACRepair(path: input)
        try walk.run()
        guard let source = ByteSource(path: input) else { throw RepairError.damaged(input, "cannot be read") }
        let kept = walk.ends.last ?? walk.firstFrame
        if !walk.failed, kept == UInt64(source.size), walk.samples == walk.declared {
            throw RepairError.damaged(input, "every frame decodes and STREAMINFO counts them; nothing to repair")
        }
        guard !walk.ends.isEmpty else { throw RepairError.damaged(input, "no whole FLAC frame after its metadata") }
        guard var head = source.bytes(0, Int(walk.firstFrame)), let magic = Self.magic(head) else {
            throw RepairError.damaged(input, "its metadata cannot be read")
        }
        walk.patch(&head, magic: magic)
        try StreamRepair.write(output) { out in
            try out.write(head)
            guard let h = FileHandle(forReadingAtPath: input) else { throw AudioError.unreadable(path: input, reason: "cannot open") }
            defer { try? h.close() }
            try h.seek(toOffset: walk.firstFrame)
            var left = Int64(kept - walk.firstFrame)
            while left > 0, let chunk = try h.read(upToCount: Int(min(left, 1 << 20))), !chunk.isEmpty {
                try out.write(chunk)
                left -= Int64(chunk.count)
            }
            if left > 0 { throw AudioError.unreadable(path: input, reason: "it ended while being read") }
        }
        let dropped = source.size - Int64(kept)
        let claim = walk.declared > 0 ? "STREAMINFO claimed \(walk.declared) samples" : "STREAMINFO left the length unwritten"
        return StreamRepair.Outcome(output: output, frames: walk.ends.count, bytesKept: Int64(kept - walk.firstFrame), bytesDropped: dropped,
                                    what: walk.failed ? "from the first frame that does not decode (\(walk.errorText)) to the end" : "bytes after the last frame",
                                    note: "STREAMINFO set to the \(walk.samples) samples kept (\(claim)), with their MD5")
    }

    /// Where "fLaC" starts: 0, or after an ID3v2 tag.
    private static func magic(_ b: [UInt8]) -> Int? {
        var at = 0
        if b.count >= 10, b[0] == 0x49, b[1] == 0x44, b[2] == 0x33 {
            at = 10 + (Int(b[6] & 0x7F) << 21 | Int(b[7] & 0x7F) << 14 | Int(b[8] & 0x7F) << 7 | Int(b[9] & 0x7F))
        }
        guard at + 42 <= b.count, Array(b[at..<(at + 4)]) == Array("fLaC".utf8), b[at + 4] & 0x7F == 0 else { return nil }
        return at
    }

    /// Decodes every frame, keeping the end of each until the first error.
    private func run() throws {
        guard let d = FLAC__stream_decoder_new() else { throw RepairError.damaged(path, "libFLAC cannot start") }
        decoder = d
        defer { FLAC__stream_decoder_delete(d) }
        _ = FLAC__stream_decoder_set_md5_checking(d, 0)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let status = FileNameBytes.withCPath(path) { p in
            FLAC__stream_decoder_init_file(d, p, { _, frame, buffer, client in
                guard let client, let frame, let buffer else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
                return Unmanaged<FLACRepair>.fromOpaque(client).takeUnretainedValue().take(frame, buffer)
            }, { _, metadata, client in
                guard let client, let metadata, metadata.pointee.type == FLAC__METADATA_TYPE_STREAMINFO else { return }
                let me = Unmanaged<FLACRepair>.fromOpaque(client).takeUnretainedValue()
                let s = metadata.pointee.data.stream_info
                me.bits = Int(s.bits_per_sample)
                me.channels = Int(s.channels)
                me.declared = s.total_samples
            }, { _, status, client in
                guard let client else { return }
                let me = Unmanaged<FLACRepair>.fromOpaque(client).takeUnretainedValue()
                if !me.failed { me.errorText = FLACSalvageDecoder.errorName(status) }
                me.failed = true
            }, me)
        }
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else { throw RepairError.damaged(path, "libFLAC cannot open it (init status \(status.rawValue))") }
        guard FLAC__stream_decoder_process_until_end_of_metadata(d) != 0, channels > 0, (4...32).contains(bits) else {
            throw RepairError.damaged(path, "damaged FLAC header: no usable STREAMINFO")
        }
        var position: UInt64 = 0
        guard FLAC__stream_decoder_get_decode_position(d, &position) != 0 else { throw RepairError.damaged(path, "libFLAC cannot tell where its frames start") }
        firstFrame = position
        while !failed {
            guard FLAC__stream_decoder_process_single(d) != 0 else { break }
            let state = FLAC__stream_decoder_get_state(d)
            if state == FLAC__STREAM_DECODER_END_OF_STREAM || state == FLAC__STREAM_DECODER_ABORTED { break }
        }
        _ = FLAC__stream_decoder_finish(d)
    }

    /// Keeps a frame decoded before any error: where it ends, and its samples in the MD5.
    private func take(_ frame: UnsafePointer<FLAC__Frame>, _ buffer: UnsafePointer<UnsafePointer<FLAC__int32>?>) -> FLAC__StreamDecoderWriteStatus {
        guard !failed, let d = decoder else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
        let n = Int(frame.pointee.header.blocksize)
        guard Int(frame.pointee.header.channels) == channels else { failed = true; errorText = "a frame with another channel count"; return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
        var end: UInt64 = 0
        guard FLAC__stream_decoder_get_decode_position(d, &end) != 0 else { failed = true; return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
        // The MD5 STREAMINFO holds: samples interleaved, little-endian, in whole bytes.
        let width = (bits + 7) / 8
        if scratch.count < n * channels * width { scratch = [UInt8](repeating: 0, count: n * channels * width) }
        var k = 0
        for i in 0..<n {
            for c in 0..<channels {
                let v = UInt32(bitPattern: buffer[c]![i])
                for byte in 0..<width { scratch[k] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(byte))); k += 1 }
            }
        }
        scratch.withUnsafeBytes { md5.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<k])) }
        ends.append(end)
        samples += UInt64(n)
        return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
    }

    /// Sets STREAMINFO's frame sizes, total samples and MD5, and makes seek points past the kept
    /// audio placeholders.
    private func patch(_ head: inout [UInt8], magic: Int) {
        var sizes: [UInt64] = []
        var previous = firstFrame
        for e in ends { sizes.append(e - previous); previous = e }
        let info = magic + 8
        func put(_ value: UInt64, at: Int, bytes: Int) {
            for i in 0..<bytes { head[at + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(bytes - 1 - i))) }
        }
        put(sizes.min() ?? 0, at: info + 4, bytes: 3)
        put(sizes.max() ?? 0, at: info + 7, bytes: 3)
        var packed = (10..<18).reduce(UInt64(0)) { $0 << 8 | UInt64(head[info + $1]) }
        packed = packed & ~((UInt64(1) << 36) - 1) | samples & ((UInt64(1) << 36) - 1)
        put(packed, at: info + 10, bytes: 8)
        let digest = Array(md5.finalize())
        for i in 0..<16 { head[info + 18 + i] = digest[i] }
        // Seek points that name samples or bytes no longer there become placeholders.
        var at = magic + 4
        let audioBytes = (ends.last ?? firstFrame) - firstFrame
        for _ in 0..<128 {
            guard at + 4 <= head.count else { break }
            let last = head[at] & 0x80 != 0, type = head[at] & 0x7F
            let length = Int(head[at + 1]) << 16 | Int(head[at + 2]) << 8 | Int(head[at + 3])
            if type == 3 {
                var p = at + 4
                while p + 18 <= min(at + 4 + length, head.count) {
                    let sample = (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(head[p + $1]) }
                    let offset = (8..<16).reduce(UInt64(0)) { $0 << 8 | UInt64(head[p + $1]) }
                    if sample != UInt64.max, sample >= samples || offset >= audioBytes {
                        put(UInt64.max, at: p, bytes: 8)
                        put(0, at: p + 8, bytes: 8)
                        put(0, at: p + 16, bytes: 2)
                    }
                    p += 18
                }
            }
            if last { break }
            at += 4 + length
        }
    }
}
