// segno-decode: a long-lived helper for segno that decodes files and makes fingerprints. It links
// FFmpeg's libraries (Debian's libavformat/libavcodec, built with GPL parts) and libchromaprint
// (whose Debian build links libavcodec too), which segno itself never links: segno starts it as a
// separate program and exchanges data with it over pipes only, like the `ffmpeg` program.
//
// Protocol 2 (both ends on one machine: integers and floats in native byte order). Every message
// is an 8-byte head — a type byte, three zero bytes, a UInt32 payload length — then the payload.
//   helper → segno, once at start:  'V'  "segno-decode <protocol> libavcodec <version> chromaprint <version>"
// Decoding a file:
//   segno → helper:                 'O'  UInt32 rate, UInt32 channels, the path's bytes
//   helper → segno:                 'H'  UInt32 rate, UInt32 channels (what the 'D's hold)
//                                   'D'… interleaved Float32, whole frames
//                                   'E'  UInt64 frames, then error-level log lines (UTF-8)
//                                or 'F'  a one-line reason (at any point after 'O')
// The output is the first audio stream at the rate and channel count asked for (converted with
// libswresample when the decoder's differ, as `ffmpeg -ar -ac` does).
// Fingerprinting a stream (as `fpcalc -raw`: libswresample converts it to chromaprint's 11025 Hz
// mono in fpcalc's mode, then libchromaprint; see Fingerprint.swift):
//   segno → helper:                 'P'  UInt32 rate, UInt32 channels, UInt32 algorithm (fpcalc's 1…5)
//   helper → segno:                 'H'  UInt32 rate, UInt32 channels (chromaprint started)
//                                or 'F'  why chromaprint refused (no samples follow)
//   segno → helper:                 'S'… interleaved Int16, whole frames (what chromaprint_feed takes)
//                                   'E'  (empty): the end of the samples
//   helper → segno:                 'R'  UInt64 frames, then the raw items (UInt32 each)
//                                or 'F'  a one-line reason
// Frame boundaries of a raw AAC/ALAC stream (an MP4 whose index is lost): request 'B', see
// FrameFinder.swift.
// Packets decoded one by one for salvage (Ogg Vorbis/Opus, ADTS AAC): request 'C', see PacketDecode.swift.
// MP3 decoded with libmad as audiowaveform 1.10.3 does (MadDecode.swift; for `segno waveform -i`):
//   segno → helper:                 'M'  UInt32 rate, UInt32 channels, the path's bytes
//   helper → segno:                 as for 'O' ('H', 'D'…, 'E' UInt64 frames, or 'F')
// Between 'H' and 'E' the helper only reads, so segno can write without ever reading. After
// 'E', 'F' or 'R' the helper waits for the next request; it exits at end of input. To abandon a
// file or a fingerprint, segno kills it.
import CAVFormat
import CLinux
import Glibc

let protocolVersion = 2
let blockBytes = 256 * 1024

// MARK: - Pipe I/O

/// Reads exactly `count` bytes from stdin; false at end of input.
func readFully(_ buffer: UnsafeMutableRawPointer, _ count: Int) -> Bool {
    var have = 0
    while have < count {
        let n = read(0, buffer + have, count - have)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return false }
        have += n
    }
    return true
}

/// Writes every byte to stdout; exits when segno is gone.
func writeFully(_ buffer: UnsafeRawPointer, _ count: Int) {
    var off = 0
    while off < count {
        let n = write(1, buffer + off, count - off)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { exit(3) }
        off += n
    }
}

/// Sends one message with `payload`.
func send(_ type: UInt8, _ payload: [UInt8]) {
    var msg = [UInt8](repeating: 0, count: 8 + payload.count)
    msg[0] = type
    withUnsafeBytes(of: UInt32(payload.count)) { for i in 0..<4 { msg[4 + i] = $0[i] } }
    msg.replaceSubrange(8..., with: payload)
    msg.withUnsafeBytes { writeFully($0.baseAddress!, $0.count) }
}

func bytes<T>(of value: T) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }

/// libav's message for an error code.
func describe(_ code: Int32) -> String {
    var buf = [CChar](repeating: 0, count: 256)
    av_strerror(code, &buf, buf.count)
    return buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

// MARK: - One file

struct Failure: Error { let message: String }

/// Decodes one file and streams it; throws `Failure` with a one-line reason.
final class FileDecode {
    let rate: Int32
    let channels: Int32
    var format: UnsafeMutablePointer<AVFormatContext>?
    var codec: UnsafeMutablePointer<AVCodecContext>?
    var swr: OpaquePointer?
    /// The swr context's input: format, rate, layout (rebuilt when a frame differs).
    var swrFrom: (format: Int32, rate: Int32, layout: AVChannelLayout)?
    var packet = av_packet_alloc()
    var frame = av_frame_alloc()
    /// The samples on their way to segno.
    let messages = DataMessages()
    /// The converter's output, kept across frames (grown when a frame needs more): no allocation per frame.
    var converted = [Float]()
    var frames: UInt64 = 0

    init(rate: Int32, channels: Int32) {
        self.rate = rate
        self.channels = channels
    }

    deinit {
        avformat_close_input(&format)
        avcodec_free_context(&codec)
        swr_free(&swr)
        if var l = swrFrom?.layout { av_channel_layout_uninit(&l) }
        av_packet_free(&packet)
        av_frame_free(&frame)
    }

    /// `path` is the file's bytes as segno sent them (no terminating NUL).
    func run(path: [UInt8]) throws {
        // The `file:` protocol, as segno gives the ffmpeg program: a name holding ':' is never
        // read as another protocol.
        let url = "file:" + String(decoding: path, as: UTF8.self)
        let cURL = Array("file:".utf8CString.dropLast()) + path.map { CChar(bitPattern: $0) } + [0]
        var r = avformat_open_input(&format, cURL, nil, nil)
        guard r >= 0, let format else { throw Failure(message: "\(url): \(describe(r))") }
        r = avformat_find_stream_info(format, nil)
        guard r >= 0 else { throw Failure(message: "\(url): could not find stream parameters: \(describe(r))") }
        var index: Int32 = -1
        for i in 0..<Int(format.pointee.nb_streams) {
            let st = format.pointee.streams[i]!
            if index < 0 && st.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO { index = Int32(i) } else {
                st.pointee.discard = AVDISCARD_ALL
            }
        }
        guard index >= 0 else { throw Failure(message: "\(url): no audio stream") }
        let stream = format.pointee.streams[Int(index)]!
        let par = stream.pointee.codecpar!
        guard let decoder = avcodec_find_decoder(par.pointee.codec_id) else {
            throw Failure(message: "\(url): no decoder for \(String(cString: avcodec_get_name(par.pointee.codec_id)))")
        }
        codec = avcodec_alloc_context3(decoder)
        guard let codec else { throw Failure(message: "out of memory") }
        r = avcodec_parameters_to_context(codec, par)
        guard r >= 0 else { throw Failure(message: "\(url): \(describe(r))") }
        codec.pointee.pkt_timebase = stream.pointee.time_base
        codec.pointee.thread_count = 1
        r = avcodec_open2(codec, decoder, nil)
        guard r >= 0 else { throw Failure(message: "\(url): cannot open the \(String(cString: decoder.pointee.name)) decoder: \(describe(r))") }
        send(UInt8(ascii: "H"), bytes(of: UInt32(rate)) + bytes(of: UInt32(channels)))

        let eof = segno_averror_eof(), again = segno_averror_eagain()
        var ended = false
        while !ended {
            r = av_read_frame(format, packet)
            if r == eof {
                ended = true
                r = avcodec_send_packet(codec, nil)
            } else if r < 0 {
                throw Failure(message: "\(url): \(describe(r))")
            } else {
                defer { av_packet_unref(packet) }
                if packet!.pointee.stream_index != index { continue }
                // As `ffmpeg -xerror` does: a packet the demuxer marks corrupt (cut short by the
                // end of the file) stops the decode before it is decoded.
                if packet!.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 {
                    throw Failure(message: "\(url): corrupt input packet in stream \(index)")
                }
                r = avcodec_send_packet(codec, packet)
            }
            if r < 0 && r != again && r != eof {
                throw Failure(message: "Error while decoding stream #0:\(index): \(describe(r))")
            }
            while true {
                r = avcodec_receive_frame(codec, frame)
                if r == again || r == eof { break }
                if r < 0 { throw Failure(message: "Error while decoding stream #0:\(index): \(describe(r))") }
                defer { av_frame_unref(frame) }
                try emit(frame!)
            }
        }
        try drainResampler()
        flush()
    }

    /// Appends a decoded frame's samples, converted to interleaved Float32 at the asked format.
    func emit(_ f: UnsafeMutablePointer<AVFrame>) throws {
        let n = Int(f.pointee.nb_samples)
        guard n > 0 else { return }
        let fmt = f.pointee.format
        let ch = f.pointee.ch_layout.nb_channels
        let direct = f.pointee.sample_rate == rate && ch == channels && swr == nil
            && (fmt == AV_SAMPLE_FMT_FLT.rawValue || (fmt == AV_SAMPLE_FMT_FLTP.rawValue && ch == 1))
        if direct {
            append(UnsafeRawPointer(f.pointee.extended_data[0]!), bytes: n * Int(ch) * 4)
            return
        }
        try prepareResampler(for: f)
        // Room for the converted frame plus what the resampler holds back.
        let maxOut = Int(swr_get_out_samples(swr, Int32(n))) + 16
        if converted.count < maxOut * Int(channels) { converted = [Float](repeating: 0, count: maxOut * Int(channels)) }
        let got = converted.withUnsafeMutableBytes { raw -> Int32 in
            var outPlane: UnsafeMutablePointer<UInt8>? = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            return withUnsafeMutablePointer(to: &outPlane) { planes in
                f.pointee.extended_data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: Int(ch)) { input in
                    swr_convert(swr, planes, Int32(maxOut), input, Int32(n))
                }
            }
        }
        guard got >= 0 else { throw Failure(message: "converting the samples: \(describe(got))") }
        converted.withUnsafeBytes { append($0.baseAddress!, bytes: Int(got) * Int(channels) * 4) }
    }

    /// (Re)builds the converter when the decoder's format, rate or layout is new.
    func prepareResampler(for f: UnsafeMutablePointer<AVFrame>) throws {
        var layout = AVChannelLayout()
        if f.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC {
            av_channel_layout_default(&layout, f.pointee.ch_layout.nb_channels)
        } else {
            av_channel_layout_copy(&layout, &f.pointee.ch_layout)
        }
        if var from = swrFrom, from.format == f.pointee.format, from.rate == f.pointee.sample_rate,
           av_channel_layout_compare(&from.layout, &layout) == 0 {
            av_channel_layout_uninit(&layout)
            return
        }
        if swr != nil { try drainResampler() }
        swr_free(&swr)
        if var l = swrFrom?.layout { av_channel_layout_uninit(&l) }
        swrFrom = (f.pointee.format, f.pointee.sample_rate, layout)
        var outLayout = AVChannelLayout()
        av_channel_layout_default(&outLayout, channels)
        defer { av_channel_layout_uninit(&outLayout) }
        var r = swr_alloc_set_opts2(&swr, &outLayout, AV_SAMPLE_FMT_FLT, rate,
                                    &layout, AVSampleFormat(f.pointee.format), f.pointee.sample_rate, 0, nil)
        if r >= 0 { r = swr_init(swr) }
        guard r >= 0 else { throw Failure(message: "cannot convert the decoder's output: \(describe(r))") }
    }

    /// Emits what a resampler still holds (the tail of a rate conversion).
    func drainResampler() throws {
        guard swr != nil else { return }
        var buf = [Float](repeating: 0, count: 4096 * Int(channels))
        while true {
            let got = buf.withUnsafeMutableBytes { raw -> Int32 in
                var outPlane: UnsafeMutablePointer<UInt8>? = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
                return swr_convert(swr, &outPlane, 4096, nil, 0)
            }
            guard got >= 0 else { throw Failure(message: "converting the samples: \(describe(got))") }
            if got == 0 { return }
            buf.withUnsafeBytes { append($0.baseAddress!, bytes: Int(got) * Int(channels) * 4) }
        }
    }

    /// Copies samples into the pending 'D' message, sending it whenever it is full.
    func append(_ p: UnsafeRawPointer, bytes count: Int) {
        frames += UInt64(count / (4 * Int(channels)))
        messages.append(p, count)
    }

    /// Sends the pending 'D' message, if any.
    func flush() { messages.flush() }
}

// MARK: - Dying with segno

/// Exits as soon as the process that started this helper ends, however it ends (`kill -9`
/// included): a helper busy on a hostile file (trial decoding, no output to fail on) must not
/// burn a core for minutes after segno is gone. A thread waits on a pidfd of the parent
/// process. Not `PR_SET_PDEATHSIG`: that fires when the *thread* that started the helper ends,
/// and segno's workers start helpers that outlive them in its pool. Without pidfds (an old kernel,
/// a seccomp filter) the thread checks the parent's pid twice a second instead. `--parent PID`
/// (segno passes its own) says which parent to expect: one that ended before the watch began
/// left this helper with another parent already.
func exitWithParent() {
    let args = CommandLine.arguments
    let expected = args.firstIndex(of: "--parent").flatMap { $0 + 1 < args.count ? pid_t(args[$0 + 1]) : nil }
    let parent = getppid()
    if let expected, expected != parent { _exit(1) }
    let pidfd = pidfd_open(parent, 0)
    if getppid() != parent { _exit(1) }
    var thread = pthread_t()
    let started = pthread_create(&thread, nil, { arg in
        let packed = Int(bitPattern: arg)
        let fd = Int32(truncatingIfNeeded: packed >> 32), parent = pid_t(truncatingIfNeeded: packed & 0xFFFF_FFFF)
        if fd >= 0 {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while poll(&p, 1, -1) < 0 && errno == EINTR {}
        } else {
            while getppid() == parent { usleep(500_000) }
        }
        _exit(1)
    }, UnsafeMutableRawPointer(bitPattern: (Int(pidfd) << 32) | Int(parent)))
    if started == 0 { pthread_detach(thread) }
}

// MARK: - Main loop

exitWithParent()
signal(SIGPIPE, SIG_DFL)
segno_log_install()
send(UInt8(ascii: "V"), Array("segno-decode \(protocolVersion) libavcodec \(String(cString: av_version_info())) chromaprint \(chromaprintVersion())".utf8))

var head = [UInt8](repeating: 0, count: 8)
while head.withUnsafeMutableBytes({ readFully($0.baseAddress!, 8) }) {
    let length = head.withUnsafeBytes { Int($0.load(fromByteOffset: 4, as: UInt32.self)) }
    guard [UInt8(ascii: "O"), UInt8(ascii: "P"), UInt8(ascii: "M"), UInt8(ascii: "B"), UInt8(ascii: "C")].contains(head[0]), length >= 8, length < 1 << 20 else {
        send(UInt8(ascii: "F"), Array("segno-decode: unknown request".utf8))
        exit(2)
    }
    var payload = [UInt8](repeating: 0, count: length)
    guard payload.withUnsafeMutableBytes({ readFully($0.baseAddress!, length) }) else { exit(0) }
    if head[0] == UInt8(ascii: "P") {
        serveFingerprint(request: payload)
        continue
    }
    if head[0] == UInt8(ascii: "C") {
        segno_log_clear()
        servePackets(request: payload)
        continue
    }
    if head[0] == UInt8(ascii: "B") {
        segno_log_clear()
        serveFrameBoundaries(request: payload)
        continue
    }
    let rate = payload.withUnsafeBytes { Int32(bitPattern: $0.load(fromByteOffset: 0, as: UInt32.self)) }
    let channels = payload.withUnsafeBytes { Int32(bitPattern: $0.load(fromByteOffset: 4, as: UInt32.self)) }
    let path = Array(payload[8...])
    segno_log_clear()
    if head[0] == UInt8(ascii: "M") {
        let job = MadDecode()
        do {
            try job.run(path: path, rate: rate, channels: channels)
            send(UInt8(ascii: "E"), bytes(of: job.frames))
        } catch {
            job.flush()
            send(UInt8(ascii: "F"), Array(((error as? Failure)?.message ?? "\(error)").utf8))
        }
        continue
    }
    let job = FileDecode(rate: rate, channels: channels)
    do {
        guard rate > 0, channels > 0 else { throw Failure(message: "asked for \(channels) channels at \(rate) Hz") }
        try job.run(path: path)
        // libav's error-level lines, which segno reads as it reads ffmpeg's stderr.
        send(UInt8(ascii: "E"), bytes(of: job.frames) + Array(String(cString: segno_log_lines()).utf8))
    } catch {
        job.flush()
        let reason = (error as? Failure)?.message ?? "\(error)"
        send(UInt8(ascii: "F"), Array((String(cString: segno_log_lines()) + reason).utf8))
    }
}
exit(0)
