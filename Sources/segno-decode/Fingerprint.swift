// The helper's fingerprint request: segno streams a tap's samples here and libchromaprint (linked
// into this program only) turns them into a fingerprint. See the protocol in main.swift.
import CAVFormat
import CChromaprint
import Glibc

/// What fpcalc does before chromaprint: the 16-bit stream mixed down and resampled to
/// chromaprint's own rate and channels (11025 Hz mono) by libswresample, with the options
/// chromaprint's reader sets to match chromaprint's built-in resampler (16 taps, phase shift 8,
/// linear interpolation, cutoff 0.8, 16-bit planar inside). Faster than that built-in resampler
/// and the same samples fpcalc fingerprints.
final class FpcalcConverter {
    private var swr: OpaquePointer?
    /// Output room, in samples (mono); grows to the largest block.
    private var capacity = 0
    private(set) var out: UnsafeMutablePointer<Int16>
    let inChannels: Int32

    /// nil when `swr_init` fails.
    init?(rate: Int32, channels: Int32, toRate: Int32, toChannels: Int32) {
        inChannels = channels
        var inLayout = AVChannelLayout(), outLayout = AVChannelLayout()
        av_channel_layout_default(&inLayout, channels)
        av_channel_layout_default(&outLayout, toChannels)
        defer { av_channel_layout_uninit(&inLayout); av_channel_layout_uninit(&outLayout) }
        out = UnsafeMutablePointer<Int16>.allocate(capacity: 1)
        guard swr_alloc_set_opts2(&swr, &outLayout, AV_SAMPLE_FMT_S16, toRate, &inLayout, AV_SAMPLE_FMT_S16, rate, 0, nil) >= 0,
              let swr else { return nil }
        let o = UnsafeMutableRawPointer(swr)
        av_opt_set_int(o, "resampler", Int64(SWR_ENGINE_SWR.rawValue), 0)
        av_opt_set_int(o, "filter_size", 16, 0)
        av_opt_set_int(o, "phase_shift", 8, 0)
        av_opt_set_int(o, "linear_interp", 1, 0)
        av_opt_set_int(o, "tsf", Int64(AV_SAMPLE_FMT_S16P.rawValue), 0)
        av_opt_set_double(o, "cutoff", 0.8, 0)
        guard swr_init(swr) >= 0 else { return nil }
    }

    deinit {
        swr_free(&swr)
        out.deallocate()
    }

    /// Converts `frames` interleaved frames at `input` (nil: flush what the filter holds);
    /// returns the output frames now in `out`, or a negative libav error.
    func convert(_ input: UnsafeRawPointer?, frames: Int) -> Int32 {
        let room = Int(swr_get_out_samples(swr, Int32(frames))) + 16
        if room > capacity {
            out.deallocate()
            out = UnsafeMutablePointer<Int16>.allocate(capacity: room)
            capacity = room
        }
        var outPlane: UnsafeMutablePointer<UInt8>? = UnsafeMutableRawPointer(out).assumingMemoryBound(to: UInt8.self)
        var inPlane: UnsafePointer<UInt8>? = input?.assumingMemoryBound(to: UInt8.self)
        return withUnsafeMutablePointer(to: &outPlane) { o in
            input == nil ? swr_convert(swr, o, Int32(capacity), nil, 0)
                         : withUnsafeMutablePointer(to: &inPlane) { i in swr_convert(swr, o, Int32(capacity), i, Int32(frames)) }
        }
    }
}

/// Serves one 'P' request: starts chromaprint and answers 'H' (or 'F' and returns), then reads
/// 'S' messages until 'E' and answers 'R' (frames, items) or 'F'. Reads nothing past the 'E'.
/// Exits when segno is gone (end of input) or breaks the protocol.
func serveFingerprint(request payload: [UInt8]) {
    guard payload.count == 12 else {
        send(UInt8(ascii: "F"), Array("segno-decode: bad fingerprint request".utf8))
        exit(2)
    }
    let rate = payload.withUnsafeBytes { Int32(bitPattern: $0.load(fromByteOffset: 0, as: UInt32.self)) }
    let channels = payload.withUnsafeBytes { Int32(bitPattern: $0.load(fromByteOffset: 4, as: UInt32.self)) }
    let algorithm = payload.withUnsafeBytes { Int32(bitPattern: $0.load(fromByteOffset: 8, as: UInt32.self)) }
    // fpcalc's numbering 1…5 is chromaprint's 0…4.
    guard (1...5).contains(algorithm), rate > 0, channels > 0,
          let context = chromaprint_new(algorithm - 1) else {
        send(UInt8(ascii: "F"), Array("chromaprint cannot take algorithm \(algorithm), \(rate) Hz, \(channels) channels".utf8))
        return
    }
    defer { chromaprint_free(context) }
    // As fpcalc: chromaprint gets its own rate and channels, converted by libswresample.
    let ownRate = chromaprint_get_sample_rate(context), ownChannels = chromaprint_get_num_channels(context)
    var converter: FpcalcConverter?
    if rate != ownRate || channels != ownChannels {
        converter = FpcalcConverter(rate: rate, channels: channels, toRate: ownRate, toChannels: ownChannels)
        if converter == nil {
            send(UInt8(ascii: "F"), Array("libswresample cannot convert \(rate) Hz, \(channels) channels for chromaprint".utf8))
            return
        }
    }
    // Rates of 1000 Hz or less stay refused, as chromaprint's own resampler refused them.
    guard rate > 1000, chromaprint_start(context, ownRate, ownChannels) == 1 else {
        send(UInt8(ascii: "F"), Array("chromaprint cannot take \(rate) Hz, \(channels) channels".utf8))
        return
    }
    send(UInt8(ascii: "H"), bytes(of: UInt32(rate)) + bytes(of: UInt32(channels)))

    // The samples, block after block into one buffer that grows to the largest 'S' (segno's are
    // 128 KiB): chromaprint keeps only its own state, never the audio.
    var buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 17, alignment: 16)
    var capacity = 1 << 17
    defer { buffer.deallocate() }
    var samples: UInt64 = 0
    var failure: String?
    var head = [UInt8](repeating: 0, count: 8)
    while true {
        guard head.withUnsafeMutableBytes({ readFully($0.baseAddress!, 8) }) else { exit(0) }
        let length = head.withUnsafeBytes { Int($0.load(fromByteOffset: 4, as: UInt32.self)) }
        if head[0] == UInt8(ascii: "E") && length == 0 { break }
        guard head[0] == UInt8(ascii: "S"), length % 2 == 0, length <= 1 << 24 else {
            send(UInt8(ascii: "F"), Array("segno-decode: unexpected message in a fingerprint".utf8))
            exit(2)
        }
        if length > capacity {
            buffer.deallocate()
            buffer = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 16)
            capacity = length
        }
        guard readFully(buffer, length) else { exit(0) }
        // After a failure the rest is read and dropped, so segno, which only writes until 'E',
        // never blocks on a helper that stopped reading.
        guard failure == nil else { continue }
        let count = length / 2
        samples += UInt64(count)
        if let converter {
            let got = converter.convert(buffer, frames: count / Int(channels))
            if got < 0 { failure = "libswresample failed on the stream: \(describe(got))"; continue }
            if chromaprint_feed(context, converter.out, got * ownChannels) != 1 { failure = "chromaprint failed on the stream" }
        } else if chromaprint_feed(context, buffer.assumingMemoryBound(to: Int16.self), Int32(count)) != 1 {
            failure = "chromaprint failed on the stream"
        }
    }
    // The converter's tail (what its filter holds back), as fpcalc flushes it.
    while failure == nil, let converter {
        let got = converter.convert(nil, frames: 0)
        if got < 0 { failure = "libswresample failed on the stream: \(describe(got))" }
        if got <= 0 { break }
        if chromaprint_feed(context, converter.out, got * ownChannels) != 1 { failure = "chromaprint failed on the stream" }
    }
    if failure == nil && chromaprint_finish(context) != 1 { failure = "chromaprint failed at the end of the stream" }
    var raw: UnsafeMutablePointer<UInt32>? = nil
    var size: Int32 = 0
    if failure == nil && chromaprint_get_raw_fingerprint(context, &raw, &size) != 1 { failure = "chromaprint has no fingerprint" }
    defer { if let raw { chromaprint_dealloc(raw) } }
    if let failure {
        send(UInt8(ascii: "F"), Array(failure.utf8))
        return
    }
    // 'R': UInt64 frames, then the items.
    let items = Int(max(size, 0))
    var reply = [UInt8](repeating: 0, count: 8 + items * 4)
    reply.withUnsafeMutableBytes { r in
        r.storeBytes(of: samples / UInt64(channels), as: UInt64.self)
        if let raw, items > 0 { (r.baseAddress! + 8).copyMemory(from: raw, byteCount: items * 4) }
    }
    send(UInt8(ascii: "R"), reply)
}

/// chromaprint's version, for the greeting.
func chromaprintVersion() -> String { String(cString: chromaprint_get_version()) }
