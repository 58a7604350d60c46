import Foundation
import SegnoCore
import SegnoDSP

/// Decodes a damaged AAC stream in ADTS framing (.aac). Frames are found by their headers: a
/// 0xFFF syncword whose fixed fields (MPEG version, layer 0, profile, sampling rate, channel
/// configuration) are the stream's and whose frame length leads to the next such header (or the
/// end of the file); bytes that are not such a frame are skipped to the next one. The frames are
/// decoded in the `segno-decode` helper (`HelperPacketDecoder`, libavcodec); the frames lost in
/// a run of skipped bytes are estimated from its length and the stream's mean frame size and
/// become silence of that many frames, and a frame that does not decode becomes one frame of
/// silence, so later audio keeps its time. The ADTS CRC, when present, is not checked (libavcodec
/// does not check it either); the header chain and the decoder reject damaged frames.
///
/// Opened by `SalvageOpener` for ADTS when salvaging; one per recording, owned by one worker.
/// Memory: a 256 KiB window of the file and one batch of frames and their samples.
final package class ADTSSalvageDecoder: AudioDecoder {
    private(set) package var info: SourceInfo
    private let path: String
    private let reader: ADTSFrameReader
    private var decoder: HelperPacketDecoder?
    private var report = SalvageReport(method: "ADTS frames resynchronised on the next consistent header")
    private var queue: SalvageQueue
    private var batch = HelperPacketDecoder.Batch()
    private var packetBytes: [UInt8] = []
    private var lengths: [Int] = []
    private var blocks: [Int] = []
    /// A frame read after a gap, held for the next batch (a batch stops at a gap).
    private var held: ADTSFrameReader.Frame?
    private var ended = false
    /// Frames yielded to the queue so far (the output's time).
    private var time = 0
    /// Frames each raw data block decodes to (1024; 2048 with SBR), learnt from the decoder.
    private var perBlock = 1024
    private var framesSeen = 0
    private var bytesSeen: Int64 = 0
    private var pendingGap: (bytes: Int64, at: Int64)?
    static package let batchFrames = 64

    package var salvage: SalvageReport? { report.ifSalvaged }

    /// Opens `path`: locks on the first consistent headers, decodes the first frames to learn the
    /// output format. Throws `AudioError` when no ADTS stream is found or no helper can decode.
    /// Called once per recording.
    package init(path: String, pool: DecodeHelperPool) throws {
        self.path = path
        reader = try ADTSFrameReader(path: path)
        info = SourceInfo(container: "AAC (ADTS)", codec: "AAC", sampleRate: 0, channels: 0, frames: 0, sampleKind: .float)
        queue = SalvageQueue(channels: 1)
        do {
            guard let skipped = reader.lock() else {
                throw AudioError.decodeFailed(path: path, detail: "damaged AAC (ADTS): no two consecutive frame headers agree")
            }
            if skipped > 0 { pendingGap = (skipped, reader.position - skipped) }
            decoder = try HelperPacketDecoder(path: path, codec: .aac, rate: reader.rate, channels: reader.channelConfiguration,
                                              extradata: [], pool: pool)
            try nextBatch()
            guard batch.rate > 0, batch.channels > 0 else {
                throw AudioError.decodeFailed(path: path, detail: "damaged AAC (ADTS): its first frames do not decode")
            }
            info = SourceInfo(container: "AAC (ADTS)", codec: "AAC", sampleRate: batch.rate, channels: batch.channels, frames: 0, sampleKind: .float)
            queue = SalvageQueue(channels: batch.channels)
            placeBatch()
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    package func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        block.reset(channels: info.channels, capacity: maxFrames)
        var filled = 0
        while filled < maxFrames {
            if !queue.isEmpty {
                filled += block.samples.withUnsafeMutableBufferPointer { queue.drain(into: $0, at: filled, max: maxFrames - filled) }
                continue
            }
            if ended { break }
            try nextBatch()
            placeBatch()
        }
        block.frames = filled
        report.framesYielded += filled
        return filled
    }

    /// Collects up to `batchFrames` consecutive frames (stopping at a gap) and decodes them.
    private func nextBatch() throws {
        packetBytes.removeAll(keepingCapacity: true)
        lengths.removeAll(keepingCapacity: true)
        blocks.removeAll(keepingCapacity: true)
        batch.counts = []
        batch.samples.removeAll(keepingCapacity: true)
        guard let decoder else { ended = true; return }
        while lengths.count < Self.batchFrames, let f = held ?? reader.next() {
            held = nil
            if f.skippedBefore > 0 {
                if !lengths.isEmpty { held = f; break }   // a gap: decode what came before it first
                pendingGap = (f.skippedBefore + (pendingGap?.bytes ?? 0), f.offset - f.skippedBefore)
            }
            reader.append(f, to: &packetBytes)
            lengths.append(f.length)
            blocks.append(f.blocks)
            framesSeen += 1
            bytesSeen += Int64(f.length)
        }
        if lengths.isEmpty {
            try finish()
            return
        }
        // A gap before these frames (they stop at the next one): the decoder starts afresh.
        try decoder.decode(packetBytes[...], lengths: lengths, flush: pendingGap != nil, into: &batch)
    }

    /// Queues the last batch's samples, silence for a gap before it and for frames that failed.
    private func placeBatch() {
        guard !lengths.isEmpty || !batch.samples.isEmpty else { return }
        let ch = info.channels
        if let gap = pendingGap, !lengths.isEmpty {
            pendingGap = nil
            let mean = framesSeen > 0 ? Double(bytesSeen) / Double(framesSeen) : 0
            let lost = mean > 0 ? Int((Double(gap.bytes) / mean).rounded()) : 0
            let frames = lost * perBlock
            if frames > 0 && frames <= 600 * max(info.sampleRate, 1) {
                queue.silence(frames)
                note(.lostSync, frames: frames, filled: true, "\(gap.bytes) bytes at byte \(gap.at) are not ADTS frames (about \(lost) frames lost); filled with silence")
            } else {
                note(.lostSync, frames: 0, filled: false, "\(gap.bytes) bytes at byte \(gap.at) are not ADTS frames")
            }
            time += max(frames, 0)
        }
        guard batch.channels == ch || batch.channels == 0 else {
            note(.badFrame, frames: 0, filled: false, "frames decoded to \(batch.channels) channels, not \(ch); dropped")
            return
        }
        var offset = 0
        for (i, c) in batch.counts.enumerated() {
            if c < 0 {
                let n = perBlock * (i < blocks.count ? blocks[i] : 1)
                queue.silence(n)
                note(.badFrame, frames: n, filled: true, "a frame does not decode; filled with silence")
                time += n
                continue
            }
            if c > 0, i < blocks.count { perBlock = c / blocks[i] }
            queue.append(batch.samples[(offset * ch)..<((offset + c) * ch)])
            offset += c
            time += c
        }
    }

    /// At the end: what the decoder holds; a cut last frame.
    private func finish() throws {
        guard !ended else { return }
        ended = true
        if let decoder {
            try decoder.finish(into: &batch)
            if batch.channels == info.channels, info.channels > 0, !batch.samples.isEmpty {
                queue.append(batch.samples[...])
                time += batch.samples.count / info.channels
            }
            batch.samples.removeAll()
            batch.counts = []
        }
        decoder = nil
        if reader.tailBytes > 0 {
            note(.cutFrame, frames: 0, filled: false, "the last \(reader.tailBytes) bytes are not a whole frame")
        }
    }

    private func note(_ cause: SalvageReport.Cause, frames: Int, filled: Bool, _ detail: String) {
        report.addOrExtend(at: time, frames: frames, filled: filled, cause: cause, detail)
    }

    package func close() {
        decoder?.close()
        decoder = nil
        ended = true
        reader.close()
    }
}
