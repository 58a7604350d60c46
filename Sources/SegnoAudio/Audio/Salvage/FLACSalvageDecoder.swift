import CFLAC
import Foundation
import SegnoCore
import SegnoDSP

/// Decodes a damaged FLAC file through libFLAC's stream decoder, which finds the next frame
/// header after bytes that are not a frame (lost sync, a bad header) and goes on, as `flac -F`
/// does. Each frame's first sample (from its header) places it in time: a jump forward is a gap,
/// filled with silence of exactly that length so later audio keeps its time. libFLAC (1.4) fills
/// gaps of up to 5 s or 50 frames itself with frames of silence (a frame failing its checksum is
/// dropped and so becomes such a gap); longer gaps are filled here. The decoded samples
/// convert to Float32 as libsndfile converts them (÷ 2^(bits−1)), so a healthy stretch decodes
/// bit-identically to an ordinary decode.
///
/// Opened by `DecoderFactory` for FLAC when salvaging; one per recording, owned by one worker.
/// Memory: what one libFLAC step yields (a frame, or up to 50 frames of libFLAC's silence and a
/// frame), reused.
final package class FLACSalvageDecoder: AudioDecoder {
    private(set) package var info: SourceInfo
    private let path: String
    private var decoder: UnsafeMutablePointer<FLAC__StreamDecoder>?
    private var report = SalvageReport(method: "libFLAC resynchronised on the next frame header")

    /// The last decoded frame, interleaved Float32, and how much of it was handed out.
    private var pending: [Float] = []
    private var pendingFrames = 0
    private var pendingOffset = 0
    /// Frames of silence to hand out before `pending` (a gap before the frame just decoded).
    private var silence = 0
    /// The stream's next expected sample number (what the frames yielded so far cover).
    private var expected: Int64 = 0
    private var ended = false
    private var bits = 16
    private var scale: Float = 1.0 / 32768
    private var blockSize = 4096
    private var totalSamples: Int64 = 0
    /// The error libFLAC reported since the last frame (nil: none).
    private var lastError: FLAC__StreamDecoderErrorStatus?
    private var errors = 0

    /// Gaps longer than this (seconds) are not filled: a frame header that passed its CRC-8 by
    /// chance could claim any sample number; its frame is kept but no silence is made up.
    static package let maxGapSeconds = 600

    package var salvage: SalvageReport? { report.ifSalvaged }

    /// Opens `path` and reads its metadata. Throws `AudioError` when libFLAC cannot start or the
    /// file has no usable STREAMINFO. Called once per recording.
    package init(path: String) throws {
        self.path = path
        Glibc.close(try SndFileDecoder.openChecked(path))
        info = SourceInfo(container: "FLAC", codec: "PCM_16", sampleRate: 0, channels: 0, frames: 0, sampleKind: .integer)
        guard let d = FLAC__stream_decoder_new() else { throw AudioError.decodeFailed(path: path, detail: "libFLAC cannot start") }
        decoder = d
        _ = FLAC__stream_decoder_set_md5_checking(d, 0)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let status = FLAC__stream_decoder_init_file(d, path, { _, frame, buffer, client in
            guard let client, let frame, let buffer else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
            Unmanaged<FLACSalvageDecoder>.fromOpaque(client).takeUnretainedValue().take(frame, buffer)
            return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
        }, { _, metadata, client in
            guard let client, let metadata else { return }
            Unmanaged<FLACSalvageDecoder>.fromOpaque(client).takeUnretainedValue().meta(metadata)
        }, { _, status, client in
            guard let client else { return }
            let me = Unmanaged<FLACSalvageDecoder>.fromOpaque(client).takeUnretainedValue()
            me.lastError = status
            me.errors += 1
        }, me)
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else {
            close()
            throw AudioError.decodeFailed(path: path, detail: "libFLAC cannot open it (init status \(status.rawValue))")
        }
        guard FLAC__stream_decoder_process_until_end_of_metadata(d) != 0, info.sampleRate > 0, info.channels > 0 else {
            close()
            throw AudioError.decodeFailed(path: path, detail: "damaged FLAC header: no usable STREAMINFO")
        }
        report.declaredFrames = totalSamples > 0 ? Int(totalSamples) : nil
    }

    deinit { close() }

    /// Called by libFLAC for STREAMINFO (the other blocks are not asked for).
    private func meta(_ m: UnsafePointer<FLAC__StreamMetadata>) {
        guard m.pointee.type == FLAC__METADATA_TYPE_STREAMINFO else { return }
        let s = m.pointee.data.stream_info
        bits = Int(s.bits_per_sample)
        guard (4...32).contains(bits), s.channels >= 1, s.sample_rate >= 1 else { return }
        scale = 1 / Float(Int64(1) << (bits - 1))
        blockSize = Int(max(16, s.max_blocksize))
        totalSamples = Int64(s.total_samples)
        let codec = bits <= 8 ? "PCM_S8" : bits <= 16 ? "PCM_16" : bits <= 24 ? "PCM_24" : "PCM_32"
        info = SourceInfo(container: "FLAC", codec: codec, sampleRate: Int(s.sample_rate), channels: Int(s.channels),
                          frames: Int(totalSamples), sampleKind: .integer)
        pending = [Float](repeating: 0, count: blockSize * Int(s.channels))
    }

    /// Called by libFLAC for each decoded frame: places it in time and keeps its samples.
    private func take(_ frame: UnsafePointer<FLAC__Frame>, _ buffer: UnsafePointer<UnsafePointer<FLAC__int32>?>) {
        let h = frame.pointee.header
        let n = Int(h.blocksize)
        let ch = info.channels
        guard Int(h.channels) == ch, n > 0 else {
            note(.badFrame, frames: 0, filled: false, "a frame with \(h.channels) channels in a \(ch)-channel stream was dropped")
            return
        }
        let first: Int64 = h.number_type == FLAC__FRAME_NUMBER_TYPE_SAMPLE_NUMBER
            ? Int64(h.number.sample_number) : Int64(h.number.frame_number) * Int64(n)
        if lastError != nil, Self.isFill(frame) {
            // libFLAC's own silence for frames it lost: reported, kept (it keeps the time).
            note(lastError == FLAC__STREAM_DECODER_ERROR_STATUS_FRAME_CRC_MISMATCH ? .badFrame : .lostSync, frames: n, filled: true,
                 "frames unreadable from sample \(first) (\(Self.errorName(lastError))); filled with silence")
        } else {
            lastError = nil
        }
        var skip = 0
        let rate = Int64(info.sampleRate)
        if first > expected {
            let gap = first - expected
            if gap <= Int64(Self.maxGapSeconds) * rate && (totalSamples == 0 || first < totalSamples) {
                silence = Int(gap)
                note(.lostSync, frames: Int(gap), filled: true, "\(gap) frames unreadable before sample \(first); filled with silence")
                expected = first
            } else {
                note(.lostSync, frames: 0, filled: false, "a frame claims sample \(first) where \(expected) was due; kept in place")
            }
        } else if first < expected {
            skip = Int(min(Int64(n), expected - first))  // an overlap: the earlier audio stays
        }
        let keep = n - skip
        let base = pendingFrames * ch
        if pending.count < base + keep * ch { pending += [Float](repeating: 0, count: base + keep * ch - pending.count) }
        pending.withUnsafeMutableBufferPointer { out in
            for c in 0..<ch {
                guard let src = buffer[c] else { continue }
                for i in 0..<keep { out[base + i * ch + c] = Float(src[skip + i]) * scale }
            }
        }
        pendingFrames += keep
        expected += Int64(keep)
    }

    /// True for the frames of silence libFLAC makes up for lost ones: every subframe the constant
    /// 0 and no checksum.
    private static func isFill(_ frame: UnsafePointer<FLAC__Frame>) -> Bool {
        guard frame.pointee.footer.crc == 0 else { return false }
        return withUnsafeBytes(of: frame.pointee.subframes) { raw in
            let subframes = raw.bindMemory(to: FLAC__Subframe.self)
            return (0..<Int(frame.pointee.header.channels)).allSatisfy {
                subframes[$0].type == FLAC__SUBFRAME_TYPE_CONSTANT && subframes[$0].data.constant.value == 0
            }
        }
    }

    /// libFLAC's error status in words, for salvage reports and `repair`'s messages.
    static package func errorName(_ e: FLAC__StreamDecoderErrorStatus?) -> String {
        switch e {
        case FLAC__STREAM_DECODER_ERROR_STATUS_LOST_SYNC: return "lost sync"
        case FLAC__STREAM_DECODER_ERROR_STATUS_BAD_HEADER: return "bad frame header"
        case FLAC__STREAM_DECODER_ERROR_STATUS_FRAME_CRC_MISMATCH: return "frame checksum mismatch"
        case FLAC__STREAM_DECODER_ERROR_STATUS_UNPARSEABLE_STREAM: return "unparseable frame"
        default: return "decode error"
        }
    }

    private func note(_ cause: SalvageReport.Cause, frames: Int, filled: Bool, _ detail: String) {
        let at = Int(expected)
        // One line per place: consecutive notes of one cause at one place add up.
        if let last = report.losses.last, last.at + last.frames == at || (last.at == at && frames == 0), last.cause == cause, last.filled == filled {
            report.losses[report.losses.count - 1].frames += frames
            return
        }
        if report.losses.count < 1000 { report.add(at: at, frames: frames, filled: filled, cause: cause, detail) }
    }

    package func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        let ch = info.channels
        block.reset(channels: ch, capacity: maxFrames)
        var filled = 0
        block.samples.withUnsafeMutableBufferPointer { out in
            while filled < maxFrames {
                if silence > 0 {
                    let n = min(silence, maxFrames - filled)
                    (out.baseAddress! + filled * ch).update(repeating: 0, count: n * ch)
                    silence -= n
                    filled += n
                    continue
                }
                if pendingOffset < pendingFrames {
                    let n = min(maxFrames - filled, pendingFrames - pendingOffset)
                    pending.withUnsafeBufferPointer { src in
                        (out.baseAddress! + filled * ch).update(from: src.baseAddress! + pendingOffset * ch, count: n * ch)
                    }
                    pendingOffset += n
                    filled += n
                    continue
                }
                if ended { break }
                decodeNext()
            }
        }
        block.frames = filled
        report.framesYielded += filled
        return filled
    }

    /// Lets libFLAC decode the next frame (or skip junk to find one); sets `ended` at the end.
    private func decodeNext() {
        guard let d = decoder else { ended = true; return }
        pendingFrames = 0
        pendingOffset = 0
        let ok = FLAC__stream_decoder_process_single(d) != 0
        let state = FLAC__stream_decoder_get_state(d)
        if !ok || state == FLAC__STREAM_DECODER_END_OF_STREAM || state == FLAC__STREAM_DECODER_ABORTED {
            if pendingFrames == 0 { finish() }
        }
    }

    /// At the end: what the header declared beyond what was decoded is lost at the end.
    private func finish() {
        ended = true
        if totalSamples > expected {
            note(errors > 0 ? .cutFrame : .truncated, frames: Int(totalSamples - expected), filled: false,
                 "the stream ends \(totalSamples - expected) frames before the \(totalSamples) its header declares")
        }
    }

    package func close() {
        if let d = decoder {
            _ = FLAC__stream_decoder_finish(d)
            FLAC__stream_decoder_delete(d)
        }
        decoder = nil
        ended = true
    }
}
