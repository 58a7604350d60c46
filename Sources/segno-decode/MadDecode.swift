// MP3 decoded with libmad as audiowaveform 1.10.3 decodes it (request 'M'), for the audiowaveform
// form of `segno waveform`: an ID3v2 tag at the start is skipped; a first frame carrying a
// Xing/Info header is not output, and when it carries a LAME/Lavc tag its encoder delay plus
// libmad's 529 samples are dropped from the start (the padding at the end is kept); each sample
// is clipped to ±(1 − 2⁻²⁸) → ±32767 and otherwise shifted right 13 bits (libmad's 28
// fractional bits to 15), so −1 becomes −32767, not −32768. Samples are sent as Float32 s / 32768,
// which holds every Int16 exactly. libmad is GPL-2: it is linked here, never into segno.
import CMad
import Glibc

/// One MP3 through libmad; streams 'H' after the first frame, then 'D' messages.
final class MadDecode {
    static let inputSize = 5 * 8192
    /// The samples on their way to segno.
    let messages = DataMessages()
    var frames: UInt64 = 0
    var channels = 0
    /// The pending samples of one synthesized frame (at most 1152 × 2), reused.
    var block = [Float](repeating: 0, count: 1152 * 2)

    /// libmad's fixed point to audiowaveform's 16-bit value.
    @inline(__always) static func short(_ fixed: Int32) -> Int16 {
        if fixed >= 0x1000_0000 { return Int16.max }
        if fixed <= -0x1000_0000 { return -Int16.max }
        return Int16(truncatingIfNeeded: fixed >> 13)
    }

    /// Size of an ID3v2 tag at the start of `bytes` (header, body and footer), 0 when none.
    static func id3v2Size(_ b: UnsafeRawBufferPointer) -> Int {
        guard b.count >= 10, b[0] == 0x49, b[1] == 0x44, b[2] == 0x33, b[3] != 0xFF, b[4] != 0xFF,
              b[6] < 0x80, b[7] < 0x80, b[8] < 0x80, b[9] < 0x80 else { return 0 }
        let body = Int(b[6]) << 21 | Int(b[7]) << 14 | Int(b[8]) << 7 | Int(b[9])
        return 10 + body + (b[5] & 0x10 != 0 ? 10 : 0)
    }

    /// Decodes `path`; `rate`/`channels` are what segno expects (a mismatch fails the file).
    func run(path: [UInt8], rate: Int32, channels expected: Int32) throws {
        let fd = open(String(decoding: path, as: UTF8.self), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(message: "\(String(decoding: path, as: UTF8.self)): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var stream = mad_stream(), frame = mad_frame(), synth = mad_synth()
        mad_stream_init(&stream); mad_frame_init(&frame); mad_synth_init(&synth)
        defer { mad_frame_finish(&frame); mad_stream_finish(&stream) }
        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.inputSize + Int(MAD_BUFFER_GUARD), alignment: 8)
        defer { input.deallocate() }
        var first = true, atEnd = false, skipID3 = 0, skip = 0, decoded = 0
        while true {
            if stream.buffer == nil || stream.error == MAD_ERROR_BUFLEN {
                if atEnd { break }
                var remaining = 0
                if let next = stream.next_frame {
                    remaining = stream.bufend - next
                    memmove(input.baseAddress!, next, remaining)
                }
                var got = 0
                while remaining + got < Self.inputSize {
                    let n = read(fd, input.baseAddress! + remaining + got, Self.inputSize - remaining - got)
                    if n < 0 && errno == EINTR { continue }
                    if n < 0 { throw Failure(message: "read error: \(String(cString: strerror(errno)))") }
                    if n == 0 { atEnd = true; break }
                    got += n
                }
                if got == 0 && remaining == 0 { break }
                if first {
                    skipID3 = Self.id3v2Size(UnsafeRawBufferPointer(rebasing: input[remaining..<remaining + got]))
                    first = false
                }
                if skipID3 >= got {
                    skipID3 -= got
                    stream.next_frame = nil
                    if atEnd { break }
                    continue
                } else if skipID3 > 0 {
                    memmove(input.baseAddress! + remaining, input.baseAddress! + remaining + skipID3, got - skipID3)
                    got -= skipID3
                    skipID3 = 0
                }
                if atEnd {
                    memset(input.baseAddress! + remaining + got, 0, Int(MAD_BUFFER_GUARD))
                    got += Int(MAD_BUFFER_GUARD)
                }
                mad_stream_buffer(&stream, input.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt(remaining + got))
                stream.error = MAD_ERROR_NONE
            }
            if mad_frame_decode(&frame, &stream) != 0 {
                if stream.error.rawValue & 0xff00 != 0 { continue }  // recoverable: resync
                if stream.error == MAD_ERROR_BUFLEN { continue }
                throw Failure(message: "unrecoverable MP3 frame error: \(String(cString: mad_stream_errorstr(&stream)))")
            }
            if decoded == 0, let delay = Self.xingDelay(stream.anc_ptr) {
                if let delay { skip = delay }
                continue
            }
            if decoded == 0 {
                channels = frame.header.mode.rawValue != 0 ? 2 : 1
                guard Int32(frame.header.samplerate) == rate, Int32(channels) == expected else {
                    throw Failure(message: "libmad reads \(channels) channels at \(frame.header.samplerate) Hz, not \(expected) at \(rate)")
                }
                send(UInt8(ascii: "H"), bytes(of: UInt32(rate)) + bytes(of: UInt32(channels)))
            }
            decoded += 1
            mad_synth_frame(&synth, &frame)
            emit(&synth, skip: &skip)
        }
        if decoded == 0 { throw Failure(message: "no MP3 frame decodes") }
        flush()
    }

    /// The first frame's Xing/Info header: nil when there is none; .some(nil) for a header without
    /// a LAME/Lavc tag; .some(delay) with the samples to drop (encoder delay + 529).
    static func xingDelay(_ anc: mad_bitptr) -> Int?? {
        var p = anc
        let magic = mad_bit_read(&p, 32)
        guard magic == 0x5869_6E67 || magic == 0x496E_666F else { return nil }  // "Xing", "Info"
        for _ in 0..<116 { _ = mad_bit_read(&p, 8) }
        let tag = mad_bit_read(&p, 32)
        guard tag == 0x4C41_4D45 || tag == 0x4C61_7663 else { return .some(nil) }  // "LAME", "Lavc"
        for _ in 0..<17 { _ = mad_bit_read(&p, 8) }
        return .some(Int(mad_bit_read(&p, 12)) + 529)
    }

    /// Appends one synthesized frame, after dropping `skip` samples.
    func emit(_ synth: inout mad_synth, skip: inout Int) {
        let n = Int(synth.pcm.length)
        var k = 0
        withUnsafeBytes(of: &synth.pcm.samples) { raw in
            let s = raw.bindMemory(to: Int32.self)  // [2][1152]
            for i in 0..<n {
                if skip > 0 { skip -= 1; continue }
                for c in 0..<channels { block[k] = Float(Self.short(s[c * 1152 + i])) / 32768; k += 1 }
            }
        }
        frames += UInt64(k / max(channels, 1))
        block.withUnsafeBytes { raw in messages.append(raw.baseAddress!, k * 4) }
    }

    /// Sends the pending 'D' message, if any.
    func flush() { messages.flush() }
}
