import CAVFormat
import Glibc

// Packets decoded one by one, for salvage: segno finds the packets of a damaged Ogg (Vorbis,
// Opus) or ADTS (AAC) stream itself, drops the broken ones and places the rest in time; the
// helper only decodes what it is given and says how many frames each packet gave.
//   segno → helper:  'C'  UInt32 codec (1 AAC, 3 Vorbis, 4 Opus), UInt32 rate, UInt32 channels,
//                         then the codec's extradata (Vorbis: its three header packets, Xiph-laced;
//                         Opus: the OpusHead packet; AAC: none, the ADTS headers ride in the packets)
//   helper → segno:  'H'  UInt32 rate, UInt32 channels (the decoder opened)   or 'F' a reason
//   segno → helper:  'K'  UInt32 flags (1: a gap precedes these packets: the decoder is flushed
//                         first), UInt32 n, n × UInt32 packet lengths, the packets back to back
//   helper → segno:  'Q'  UInt32 rate, UInt32 channels (of the first frame decoded, 0 before),
//                         UInt32 n, n × Int32 frames each packet gave (−1: it did not decode,
//                         or gave another rate or channel count), then the interleaved Float32
//   segno → helper:  'E'  (empty): the end; the helper answers 'Q' with n = 1 and what the
//                         decoder still held, then waits for the next request.
// A packet that fails leaves the decoder usable: the next packet is tried as usual.

/// One 'C' session; throws `Failure` when the decoder cannot open.
final class PacketDecode {
    var codec: UnsafeMutablePointer<AVCodecContext>?
    var packet = av_packet_alloc()
    var frame = av_frame_alloc()
    /// The output format, fixed by the first frame decoded.
    var rate: Int32 = 0
    var channels: Int32 = 0
    /// The reply being built: counts, then samples (reused across requests).
    var counts: [Int32] = []
    var samples: [Float] = []
    /// Frames a request may return in all; more is refused (a bounded reply whatever the input).
    static let maxReplyFloats = 8 << 20

    init(codecID: UInt32, rate: Int32, channels: Int32, extradata: [UInt8]) throws {
        let id: AVCodecID
        switch codecID {
        case 1: id = AV_CODEC_ID_AAC
        case 3: id = AV_CODEC_ID_VORBIS
        case 4: id = AV_CODEC_ID_OPUS
        default: throw Failure(message: "segno-decode: unknown codec \(codecID)")
        }
        codec = try openDecoder(id, rate: rate, channels: channels, extradata: extradata)
    }

    deinit {
        avcodec_free_context(&codec)
        av_packet_free(&packet)
        av_frame_free(&frame)
    }

    /// Decodes one 'K' request's packets and sends the 'Q' reply.
    func serve(_ p: [UInt8]) {
        counts.removeAll(keepingCapacity: true)
        samples.removeAll(keepingCapacity: true)
        func u32(_ at: Int) -> Int { p.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: at, as: UInt32.self)) } }
        if p.count >= 8, let codec {
            if u32(0) & 1 != 0 { avcodec_flush_buffers(codec) }
            let n = u32(4)
            var at = 8 + 4 * n
            if n <= 1 << 16, at <= p.count {
                for i in 0..<n {
                    let length = u32(8 + 4 * i)
                    guard length <= p.count - at else { counts.append(-1); continue }
                    counts.append(decode(p, at, length))
                    at += length
                }
            }
        }
        reply()
    }

    /// The decoder's last frames (at 'E'): one count.
    func drain() {
        counts.removeAll(keepingCapacity: true)
        samples.removeAll(keepingCapacity: true)
        counts.append(decode(nil, 0, 0))
        reply()
    }

    /// Decodes `length` bytes of `p` at `at` as one packet (nil: drain); the frames it gave, −1 on failure.
    private func decode(_ p: [UInt8]?, _ at: Int, _ length: Int) -> Int32 {
        guard let codec, let packet, let frame else { return -1 }
        var r: Int32
        if let p {
            guard length > 0, av_new_packet(packet, Int32(length)) >= 0 else { return -1 }
            p.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress! + at, count: length) }
            r = avcodec_send_packet(codec, packet)
            av_packet_unref(packet)
        } else {
            r = avcodec_send_packet(codec, nil)
        }
        if r < 0 && r != segno_averror_eagain() && r != segno_averror_eof() { return -1 }
        let before = samples.count
        var failed = false
        while true {
            r = avcodec_receive_frame(codec, frame)
            if r == segno_averror_eagain() || r == segno_averror_eof() { break }
            if r < 0 { failed = true; break }
            defer { av_frame_unref(frame) }
            if !take(frame) { failed = true }
        }
        if failed {
            samples.removeSubrange(before...)
            return -1
        }
        return Int32((samples.count - before) / Int(max(channels, 1)))
    }

    /// Appends a frame's samples interleaved; false when its format is not the stream's or the reply is full.
    private func take(_ f: UnsafeMutablePointer<AVFrame>) -> Bool {
        let n = Int(f.pointee.nb_samples), ch = Int(f.pointee.ch_layout.nb_channels)
        guard n > 0 else { return true }
        if rate == 0 { rate = f.pointee.sample_rate; channels = Int32(ch) }
        guard f.pointee.sample_rate == rate, ch == Int(channels), ch > 0, samples.count + n * ch <= Self.maxReplyFloats else { return false }
        let fmt = f.pointee.format
        let base = samples.count
        samples.append(contentsOf: repeatElement(0, count: n * ch))
        return samples.withUnsafeMutableBufferPointer { out -> Bool in
            let o = out.baseAddress! + base
            switch fmt {
            case AV_SAMPLE_FMT_FLT.rawValue:
                o.update(from: UnsafeRawPointer(f.pointee.extended_data[0]!).assumingMemoryBound(to: Float.self), count: n * ch)
            case AV_SAMPLE_FMT_FLTP.rawValue:
                for c in 0..<ch {
                    let src = UnsafeRawPointer(f.pointee.extended_data[c]!).assumingMemoryBound(to: Float.self)
                    for i in 0..<n { o[i * ch + c] = src[i] }
                }
            case AV_SAMPLE_FMT_S16P.rawValue:
                for c in 0..<ch {
                    let src = UnsafeRawPointer(f.pointee.extended_data[c]!).assumingMemoryBound(to: Int16.self)
                    for i in 0..<n { o[i * ch + c] = Float(src[i]) / 32768 }
                }
            case AV_SAMPLE_FMT_S16.rawValue:
                let src = UnsafeRawPointer(f.pointee.extended_data[0]!).assumingMemoryBound(to: Int16.self)
                for i in 0..<(n * ch) { o[i] = Float(src[i]) / 32768 }
            default:
                return false
            }
            return true
        }
    }

    private func reply() {
        var head = bytes(of: UInt32(bitPattern: rate)) + bytes(of: UInt32(bitPattern: channels)) + bytes(of: UInt32(counts.count))
        counts.withUnsafeBytes { head += $0 }
        var msg = [UInt8](repeating: 0, count: 8)
        msg[0] = UInt8(ascii: "Q")
        let total = head.count + samples.count * 4
        withUnsafeBytes(of: UInt32(total)) { for i in 0..<4 { msg[4 + i] = $0[i] } }
        msg += head
        msg.withUnsafeBytes { writeFully($0.baseAddress!, $0.count) }
        samples.withUnsafeBytes { if $0.count > 0 { writeFully($0.baseAddress!, $0.count) } }
    }
}

/// Serves one 'C' session: opens the decoder, then answers 'K' requests until 'E'.
func servePackets(request p: [UInt8]) {
    func u32(_ at: Int) -> UInt32 { p.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) } }
    let session: PacketDecode
    do {
        guard p.count >= 12 else { throw Failure(message: "segno-decode: short packet request") }
        session = try PacketDecode(codecID: u32(0), rate: Int32(bitPattern: u32(4)), channels: Int32(bitPattern: u32(8)), extradata: Array(p[12...]))
    } catch {
        send(UInt8(ascii: "F"), Array(((error as? Failure)?.message ?? "\(error)").utf8))
        return
    }
    send(UInt8(ascii: "H"), bytes(of: u32(4)) + bytes(of: u32(8)))
    var head = [UInt8](repeating: 0, count: 8)
    while true {
        guard head.withUnsafeMutableBytes({ readFully($0.baseAddress!, 8) }) else { exit(0) }
        let length = head.withUnsafeBytes { Int($0.load(fromByteOffset: 4, as: UInt32.self)) }
        if head[0] == UInt8(ascii: "E") && length == 0 {
            session.drain()
            return
        }
        guard head[0] == UInt8(ascii: "K"), length <= 1 << 24 else {
            send(UInt8(ascii: "F"), Array("segno-decode: unexpected message in a packet decode".utf8))
            exit(2)
        }
        var payload = [UInt8](repeating: 0, count: length)
        guard length == 0 || payload.withUnsafeMutableBytes({ readFully($0.baseAddress!, length) }) else { exit(0) }
        session.serve(payload)
    }
}

/// A decoder context for `id`, single-threaded, given the stream's rate and channels (when
/// known, > 0) and its codec configuration (copied into libavcodec's padded buffer), opened.
/// Throws `Failure` naming the codec; frees the context it made when opening fails. Called
/// once per request by the packet decoder and the MP4 frame finder.
func openDecoder(_ id: AVCodecID, rate: Int32, channels: Int32, extradata: [UInt8]) throws -> UnsafeMutablePointer<AVCodecContext> {
    let name = String(cString: avcodec_get_name(id))
    guard let decoder = avcodec_find_decoder(id) else { throw Failure(message: "libavcodec has no \(name) decoder") }
    guard let codec = avcodec_alloc_context3(decoder) else { throw Failure(message: "out of memory") }
    codec.pointee.thread_count = 1
    if rate > 0 { codec.pointee.sample_rate = rate }
    if channels > 0 { av_channel_layout_default(&codec.pointee.ch_layout, channels) }
    if !extradata.isEmpty {
        let extra = av_mallocz(extradata.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))!.assumingMemoryBound(to: UInt8.self)
        extradata.withUnsafeBufferPointer { extra.update(from: $0.baseAddress!, count: extradata.count) }
        codec.pointee.extradata = extra
        codec.pointee.extradata_size = Int32(extradata.count)
    }
    let r = avcodec_open2(codec, decoder, nil)
    guard r >= 0 else {
        var owned: UnsafeMutablePointer<AVCodecContext>? = codec
        avcodec_free_context(&owned)
        throw Failure(message: "cannot open the \(name) decoder with this configuration: \(describe(r))")
    }
    return codec
}
