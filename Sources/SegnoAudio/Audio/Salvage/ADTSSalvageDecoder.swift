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
    private var fd: Int32
    private let fileSize: Int64
    private var window: [UInt8]
    private var windowStart: Int64 = 0
    private var windowCount = 0
    private var position: Int64 = 0
    /// The stream's fixed header bits (the first 28 bits of a header, less the protection bit is kept).
    private var fixed: UInt32 = 0
    private var decoder: HelperPacketDecoder?
    private var report = SalvageReport(method: "ADTS frames resynchronised on the next consistent header")
    private var queue: SalvageQueue
    private var batch = HelperPacketDecoder.Batch()
    private var packetBytes: [UInt8] = []
    private var lengths: [Int] = []
    private var blocks: [Int] = []
    private var ended = false
    /// Frames yielded to the queue so far (the output's time).
    private var time = 0
    /// Frames each raw data block decodes to (1024; 2048 with SBR), learnt from the decoder.
    private var perBlock = 1024
    private var framesSeen = 0
    private var bytesSeen: Int64 = 0
    private var pendingGap: (bytes: Int64, at: Int64)?
    static package let windowBytes = 256 * 1024
    static package let batchFrames = 64
    static package let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    package var salvage: SalvageReport? { report }

    /// Opens `path`: locks on the first two consecutive consistent headers, decodes the first
    /// frames to learn the output format. Throws `AudioError` when no ADTS stream is found or no
    /// helper can decode. Called once per recording.
    package init(path: String, pool: DecodeHelperPool) throws {
        self.path = path
        fd = try SndFileDecoder.openChecked(path)
        var st = stat()
        fileSize = fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
        window = [UInt8](repeating: 0, count: Self.windowBytes)
        info = SourceInfo(container: "AAC (ADTS)", codec: "AAC", sampleRate: 0, channels: 0, frames: 0, sampleKind: .float)
        queue = SalvageQueue(channels: 1)
        do {
            position = id3Size()
            var skipped: Int64 = 0
            while true {
                guard let h = header(at: position, expecting: nil) else {
                    guard position < fileSize else {
                        throw AudioError.decodeFailed(path: path, detail: "damaged AAC (ADTS): no two consecutive frame headers agree")
                    }
                    position += 1; skipped += 1; continue
                }
                let next = position + Int64(h.length)
                if let n = header(at: next, expecting: h.fixed), let _ = header(at: next + Int64(n.length), expecting: h.fixed) ?? (next + Int64(n.length) >= fileSize ? n : nil) {
                    fixed = h.fixed
                    break
                }
                position += 1; skipped += 1
            }
            if skipped > 0 { pendingGap = (skipped, position) }
            let channels = Int((fixed >> 8) & 1) << 2 | Int((fixed >> 6) & 3)
            let rate = Self.rates[Int((fixed >> 10) & 0xF)]
            decoder = try HelperPacketDecoder(path: path, codec: .aac, rate: rate, channels: max(channels, 0), extradata: [], pool: pool)
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

    /// The size of an ID3v2 tag at the start of the file (0 when there is none).
    private func id3Size() -> Int64 {
        guard ensure(0, 10), window[0] == 0x49, window[1] == 0x44, window[2] == 0x33 else { return 0 }
        let s = (Int64(window[6] & 0x7F) << 21) | (Int64(window[7] & 0x7F) << 14) | (Int64(window[8] & 0x7F) << 7) | Int64(window[9] & 0x7F)
        return min(fileSize, 10 + s + (window[5] & 0x10 != 0 ? 10 : 0))
    }

    private func ensure(_ at: Int64, _ count: Int) -> Bool {
        if at >= windowStart && at + Int64(count) <= windowStart + Int64(windowCount) { return true }
        guard at >= 0, at + Int64(count) <= fileSize else { return false }
        windowStart = at
        windowCount = 0
        let want = Int(min(Int64(window.count), fileSize - at))
        window.withUnsafeMutableBytes { raw in
            while windowCount < want {
                let n = pread(fd, raw.baseAddress! + windowCount, want - windowCount, off_t(at) + off_t(windowCount))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                windowCount += n
            }
        }
        return windowCount >= count
    }

    /// The ADTS header at `at` when it is valid (and has the stream's fixed fields, when given),
    /// with the frame fully inside the file (unless `cut` allows it to run past the end).
    private func header(at: Int64, expecting: UInt32?, cut: Bool = false) -> (fixed: UInt32, length: Int, blocks: Int)? {
        guard ensure(at, 7) else { return nil }
        let i = Int(at - windowStart)
        let b0 = window[i], b1 = window[i + 1], b2 = window[i + 2], b3 = window[i + 3], b4 = window[i + 4], b5 = window[i + 5], b6 = window[i + 6]
        guard b0 == 0xFF, b1 & 0xF6 == 0xF0 else { return nil }             // syncword, layer 0
        let sf = Int((b2 >> 2) & 0xF)
        guard sf < 13 else { return nil }
        // ID, protection, profile, sampling index, channel configuration (private bit ignored).
        let fixed = UInt32(b1 & 0x09) << 16 | UInt32(b2 & 0xFD) << 8 | UInt32(b3 & 0xC0)
        if let expecting, fixed != expecting { return nil }
        let length = Int(b3 & 0x03) << 11 | Int(b4) << 3 | Int(b5 >> 5)
        let headerBytes = b1 & 1 == 0 ? 9 : 7
        guard length > headerBytes, cut || at + Int64(length) <= fileSize else { return nil }
        return (fixed, length, Int(b6 & 3) + 1)
    }

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
        while lengths.count < Self.batchFrames {
            guard position < fileSize else { break }
            if let h = header(at: position, expecting: fixed), chained(position + Int64(h.length)) {
                guard ensure(position, h.length) else { break }
                let i = Int(position - windowStart)
                packetBytes += window[i..<(i + h.length)]
                lengths.append(h.length)
                blocks.append(h.blocks)
                framesSeen += 1
                bytesSeen += Int64(h.length)
                position += Int64(h.length)
                continue
            }
            if !lengths.isEmpty { break }   // a gap: decode what came before it first
            // Not a frame: skip to the next consistent header.
            let from = position
            position += 1
            while position < fileSize, !(header(at: position, expecting: fixed).map { chained(position + Int64($0.length)) } ?? false) {
                position += 1
            }
            let skipped = position - from
            pendingGap = (skipped + (pendingGap?.bytes ?? 0), from)
            if position >= fileSize { break }
        }
        if lengths.isEmpty {
            try finish()
            return
        }
        // A gap before these frames (they stop at the next one): the decoder starts afresh.
        try decoder.decode(packetBytes[...], lengths: lengths, flush: pendingGap != nil, into: &batch)
    }

    /// True when `next` starts a frame of the stream (perhaps one cut by the end of the file) or
    /// is the end of the file.
    private func chained(_ next: Int64) -> Bool {
        next >= fileSize || header(at: next, expecting: fixed, cut: true) != nil
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
        if let gap = pendingGap {
            pendingGap = nil
            note(.cutFrame, frames: 0, filled: false, "the last \(gap.bytes) bytes (from byte \(gap.at)) are not a whole frame")
        }
    }

    private func note(_ cause: SalvageReport.Cause, frames: Int, filled: Bool, _ detail: String) {
        if let last = report.losses.last, last.cause == cause, last.filled == filled, last.at + last.frames == time, frames > 0 {
            report.losses[report.losses.count - 1].frames += frames
            return
        }
        if report.losses.count < 1000 { report.add(at: time, frames: frames, filled: filled, cause: cause, detail) }
    }

    package func close() {
        decoder?.close()
        decoder = nil
        ended = true
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }
}
