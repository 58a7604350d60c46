import CAVFormat
import Glibc

// Frame boundaries of a raw AAC or ALAC stream whose index is lost (an MP4's `mdat` without its
// `moov`), found by trial decoding with libavcodec — the only way to know where such a frame
// ends, since neither codec marks frame starts.
//   segno → helper:  'B'  UInt32 codec (1 AAC, 2 ALAC), UInt32 rate, UInt32 channels,
//                         UInt64 offset, UInt64 length, UInt32 extradata length, the extradata
//                         (AudioSpecificConfig; ALAC's 36-byte cookie), then the path's bytes
//   helper → segno:  'H'  UInt32 rate, UInt32 channels (the decoder opened)
//                    'Z'… UInt32 pairs: a frame's offset from `offset`, its length in bytes
//                    'E'  UInt64 frames, UInt64 bytes skipped as unreadable, then one line saying
//                         why the stream ended before `length` (empty when it did not)
//                 or 'F'  a one-line reason
// AAC: a packet holding several frames is decoded in one go; libavcodec hands the decoder what
// is left after each frame and stamps each frame with that remaining size (`pkt_size`), so the
// differences are the frames' lengths. The last frame of a batch (whose end is not yet known)
// starts the next batch; where a batch yields fewer than two frames, the shortest packet that
// decodes to exactly one frame is looked for; where nothing decodes (damage), the next offset
// from which several frames decode is looked for, up to `resyncWindow` bytes on.
// ALAC: a packet decodes only when it holds the frame's END element, so the shortest packet that
// decodes (a binary search, about 16 decodes) is the frame, as the encoder wrote it.

/// Finds frame boundaries for one 'B' request; throws `Failure` with a one-line reason.
final class FrameFinder {
    let codecID: UInt32
    let rate: Int32
    let channels: Int32
    var codec: UnsafeMutablePointer<AVCodecContext>?
    var packet = av_packet_alloc()
    var frame = av_frame_alloc()
    let fd: Int32
    let start: Int64
    let end: Int64
    /// The bytes being tried (a window of the file) with libavcodec's zero padding after them.
    var buffer: UnsafeMutablePointer<UInt8>
    var bufferStart: Int64 = -1
    var bufferCount = 0
    static let windowBytes = 1 << 20
    static let batchBytes = 32 * 1024
    static let maxFrameBytes = 16 * 1024
    static let resyncWindow: Int64 = 256 * 1024
    /// Bytes tried at each resync offset: four AAC frames (at most 768 bytes per channel each) fit.
    static let resyncProbeBytes = 8 * 1024
    /// Frames found, sent in 'Z' messages of up to 4096 pairs.
    var pending: [UInt32] = []
    var frames: UInt64 = 0
    var skipped: UInt64 = 0
    /// Bytes handed to the decoder so far, and the most a request may hand it: linear in the
    /// data (issue 33: junk cost n^1.6 before, 77 s for 200 KB), so no file can hold a helper.
    var spent: Int64 = 0
    var budget: Int64 { Self.budgetPerByte * (end - start) + Self.budgetFloor }
    static let budgetPerByte: Int64 = 64
    static let budgetFloor: Int64 = 16 << 20
    var overBudget: Bool { spent > budget }
    /// Why the search ended at `at` with its budget spent.
    func budgetSpent(_ at: Int64) -> String {
        "trial decoding stopped after \(spent / (1 << 20)) MiB (at most \(Self.budgetPerByte) times the data); \(end - at) bytes from offset \(at - start) not searched"
    }

    init(codecID: UInt32, rate: Int32, channels: Int32, extradata: [UInt8], fd: Int32, start: Int64, end: Int64) throws {
        self.codecID = codecID
        self.rate = rate
        self.channels = channels
        self.fd = fd
        self.start = start
        self.end = end
        buffer = .allocate(capacity: Self.windowBytes + Int(AV_INPUT_BUFFER_PADDING_SIZE))
        codec = try openDecoder(codecID == 2 ? AV_CODEC_ID_ALAC : AV_CODEC_ID_AAC, rate: rate, channels: channels, extradata: extradata)
    }

    deinit {
        avcodec_free_context(&codec)
        av_packet_free(&packet)
        av_frame_free(&frame)
        buffer.deallocate()
    }

    /// Walks the stream from `start` to `end`, sending what it finds.
    func run() {
        var at = start
        var why = ""
        while at < end {
            if overBudget {
                why = budgetSpent(at)
                skipped += UInt64(end - at)
                break
            }
            let step = codecID == 2 ? alacFrame(at) : aacFrames(at)
            if step > 0 { at += step; continue }
            // Nothing decodes here: look for the place where the stream goes on.
            guard let next = resync(from: at) else {
                why = overBudget ? budgetSpent(at) : "\(end - at) bytes from offset \(at - start) do not decode"
                skipped += UInt64(end - at)
                break
            }
            skipped += UInt64(next - at)
            at = next
        }
        flushPending()
        send(UInt8(ascii: "E"), bytes(of: frames) + bytes(of: skipped) + Array(why.utf8))
    }

    // MARK: - AAC

    /// Frames found from `at` (sent); returns the bytes they cover, 0 when none decodes there.
    func aacFrames(_ at: Int64) -> Int64 {
        let w = Int(min(Int64(Self.batchBytes), end - at))
        let sizes = decodeAll(at, w)
        if sizes.count >= 2 {
            var offset: Int64 = 0
            for i in 0..<(sizes.count - 1) {
                let length = Int64(sizes[i] - sizes[i + 1])
                emit(at + offset, length)
                offset += length
            }
            return offset
        }
        // None: nothing starts here (resync looks on). One: the last frame before damage or the
        // end, whose length is the shortest packet that decodes to exactly one frame.
        guard sizes.count == 1 else { return 0 }
        for length in 1...min(Self.maxFrameBytes, Int(end - at)) where decodeAll(at, length).count == 1 && !lastFailed {
            emit(at, Int64(length))
            return Int64(length)
        }
        return 0
    }

    /// True when the last `decodeAll` ended in an error (rather than running out of packet).
    var lastFailed = false

    /// Decodes the `count` bytes at `at` as one packet; returns the remaining packet size each
    /// decoded frame was stamped with (its first frame's is `count`). Frames with another
    /// channel count end the list (a wrong configuration or garbage).
    func decodeAll(_ at: Int64, _ count: Int) -> [Int] {
        lastFailed = false
        spent += Int64(count)
        guard let codec, let packet, let frame, let data = bytesAt(at, count) else { lastFailed = true; return [] }
        avcodec_flush_buffers(codec)
        packet.pointee.data = data
        packet.pointee.size = Int32(count)
        var sizes: [Int] = []
        var r = avcodec_send_packet(codec, packet)
        av_packet_unref(packet)
        if r < 0 && r != segno_averror_eagain() { lastFailed = true; return sizes }
        while true {
            r = avcodec_receive_frame(codec, frame)
            if r == segno_averror_eagain() || r == segno_averror_eof() { break }
            if r < 0 { lastFailed = true; break }
            defer { av_frame_unref(frame) }
            if frame.pointee.ch_layout.nb_channels != channels || frame.pointee.nb_samples <= 0 { lastFailed = true; break }
            sizes.append(Int(frame.pointee.pkt_size))
        }
        return sizes
    }

    // MARK: - ALAC

    /// The ALAC frame at `at` (sent); returns its length, 0 when it does not decode.
    func alacFrame(_ at: Int64) -> Int64 {
        let w = Int(min(Int64(Self.maxFrameBytes * 4), end - at))
        guard alacDecodes(at, w) else { return 0 }
        // The shortest packet that still holds the END element is the frame (what the encoder
        // wrote: its bits up to END, to a whole byte); shorter ones lack END and fail.
        var low = 1, high = w
        while low < high {
            let mid = (low + high) / 2
            if alacDecodes(at, mid) { high = mid } else { low = mid + 1 }
        }
        emit(at, Int64(low))
        return Int64(low)
    }

    /// True when the `count` bytes at `at` decode as one whole ALAC frame of this stream.
    func alacDecodes(_ at: Int64, _ count: Int) -> Bool {
        spent += Int64(count)
        guard let codec, let packet, let frame, let data = bytesAt(at, count) else { return false }
        avcodec_flush_buffers(codec)
        packet.pointee.data = data
        packet.pointee.size = Int32(count)
        var r = avcodec_send_packet(codec, packet)
        av_packet_unref(packet)
        guard r >= 0 else { return false }
        r = avcodec_receive_frame(codec, frame)
        guard r >= 0 else { return false }
        defer { av_frame_unref(frame) }
        return frame.pointee.ch_layout.nb_channels == channels && frame.pointee.nb_samples > 0
    }

    // MARK: - Shared

    /// The next offset after `at` (within `resyncWindow`) from which the stream decodes again:
    /// three AAC frames in a row, or two ALAC frames.
    func resync(from at: Int64) -> Int64? {
        var probe = at + 1
        let limit = min(end, at + Self.resyncWindow)
        while probe < limit && !overBudget {
            if codecID == 2 {
                let saved = pending.count, savedFrames = frames
                let a = alacFrame(probe)
                if a > 0 && probe + a < end && alacFrame(probe + a) > 0 {
                    pending.removeSubrange(saved...)
                    frames = savedFrames
                    return probe
                }
                pending.removeSubrange(saved...)
                frames = savedFrames
            } else if decodeAll(probe, Int(min(Int64(Self.resyncProbeBytes), end - probe))).count >= 4 {
                return probe
            }
            probe += 1
        }
        return nil
    }

    /// `count` bytes at `at` followed by zero padding, valid until the next call; nil past the end.
    func bytesAt(_ at: Int64, _ count: Int) -> UnsafeMutablePointer<UInt8>? {
        guard count > 0, at >= start, at + Int64(count) <= end else { return nil }
        if at < bufferStart || at + Int64(count) > bufferStart + Int64(bufferCount) {
            let want = Int(min(Int64(Self.windowBytes), end - at))
            var got = 0
            while got < want {
                let n = pread(fd, buffer + got, want - got, off_t(at) + off_t(got))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                got += n
            }
            bufferStart = at
            bufferCount = got
            // libavcodec may read into the padding after a packet: zeros after the window's end.
            (buffer + got).update(repeating: 0, count: Int(AV_INPUT_BUFFER_PADDING_SIZE))
            guard got >= count else { return nil }
        }
        return buffer + Int(at - bufferStart)
    }

    func emit(_ at: Int64, _ length: Int64) {
        pending.append(UInt32(truncatingIfNeeded: at - start))
        pending.append(UInt32(truncatingIfNeeded: length))
        frames += 1
        if pending.count >= 8192 { flushPending() }
    }

    func flushPending() {
        guard !pending.isEmpty else { return }
        send(UInt8(ascii: "Z"), pending.withUnsafeBytes { Array($0) })
        pending.removeAll(keepingCapacity: true)
    }
}

/// Serves one 'B' request (payload as described at the top of this file).
func serveFrameBoundaries(request p: [UInt8]) {
    func u32(_ at: Int) -> UInt32 { p.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) } }
    func u64(_ at: Int) -> UInt64 { p.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt64.self) } }
    guard p.count >= 32 else { send(UInt8(ascii: "F"), Array("segno-decode: short frame request".utf8)); return }
    let extraCount = Int(u32(28))
    guard extraCount <= 1024, p.count >= 32 + extraCount else { send(UInt8(ascii: "F"), Array("segno-decode: bad frame request".utf8)); return }
    let extradata = Array(p[32..<(32 + extraCount)])
    let path = String(decoding: p[(32 + extraCount)...], as: UTF8.self)
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { send(UInt8(ascii: "F"), Array("\(path): \(String(cString: strerror(errno)))".utf8)); return }
    defer { close(fd) }
    let offset = Int64(bitPattern: u64(12)), length = Int64(bitPattern: u64(20))
    do {
        let finder = try FrameFinder(codecID: u32(0), rate: Int32(bitPattern: u32(4)), channels: Int32(bitPattern: u32(8)),
                                     extradata: extradata, fd: fd, start: offset, end: offset + length)
        send(UInt8(ascii: "H"), bytes(of: u32(4)) + bytes(of: u32(8)))
        finder.run()
    } catch {
        send(UInt8(ascii: "F"), Array(((error as? Failure)?.message ?? "\(error)").utf8))
    }
}
