import CMpg123
import Foundation
import SegnoCore
import SegnoDSP

/// Streaming decode of MPEG audio (MP3, and MP2/MP1) through libmpg123 directly, with its
/// messages silenced (`MPG123_QUIET`): libsndfile decodes MP3 with the same library but lets it
/// print "Note: Illegal Audio-MPEG-Header …" to segno's stderr. The decode is libsndfile's: 32-bit
/// float output, no resampling, gapless (the LAME tag's encoder delay and padding removed), so the
/// samples and their count are those libsndfile gives.
///
/// The length: an MP3 with a Xing/Info/VBRI header declares it; without one, the stream's frame
/// headers are scanned once at open (`mpg123_scan`), so `info.frames` is exact and every frame is
/// decoded (libsndfile stopped at an estimate from the first frame's bitrate).
///
/// Damage: junk between frames that libmpg123 skips to find the next frame (a splice, a zeroed
/// sector; up to `resyncLimit` bytes) and a Xing header declaring fewer frames than follow become
/// `notes`, reported as warnings after the pass. A stream that yields clearly less than its
/// declared length is an `AudioError` naming the file: `.truncated` when the file ends there,
/// `.decodeFailed` when junk ended it (random bytes that fake a frame header of another format
/// end the stream: `MPG123_NO_FRANKENSTEIN`, as libsndfile sets it).
/// Owned by one worker; `close()` releases the handle and the file.
public final class Mpg123Decoder: AudioDecoder {
    public let info: SourceInfo
    private let path: String
    private var handle: OpaquePointer?
    private var fd: Int32 = -1
    /// The decoded frame being handed out: libmpg123's own buffer, valid until the next decode.
    private var pending: UnsafePointer<Float>?
    private var pendingFrames = 0
    private var pendingOffset = 0
    private var ended = false
    private var framesRead = 0
    /// Stream position (bytes) after the last decoded frame, -1 before the first.
    private var lastEnd = -1
    /// An error met after part of a block decoded: thrown by the next `read`, so every frame
    /// decoded before it is counted (`info` reports them).
    private var deferred: (any Error)?
    /// Where junk was skipped: (byte offset, bytes).
    private var skipped: [(at: Int, bytes: Int)] = []
    /// Bytes of the file after the frames the length header declared, when MPEG frames follow.
    private var unread = 0
    /// Bytes of the file after the point where libmpg123 ended the stream.
    private var remaining = 0
    /// Where in the file libmpg123 ended the stream (bytes; −1 before the end), and where the
    /// last frame it decoded ends: for salvage to resume after them (`MP3SalvageDecoder`).
    package private(set) var streamEnd: Int64 = -1
    package private(set) var decodedEnd: Int64 = 0
    /// True when a Xing/Info/VBRI header declares the length (else it was scanned at open).
    private let declaresLength: Bool
    /// Salvaging (`damaged: salvage`): no limit on the junk searched through, errors read past,
    /// skipped frames replaced by silence, a short stream reported instead of failed.
    private let salvaging: Bool
    private var report = SalvageReport(method: "libmpg123 resynchronised on the next frame header")
    /// Frames of silence to hand out before the next decoded frame (frames lost to junk).
    private var silence = 0
    /// Salvaging: the frame decoded right after junk, held until the frame after it shows it
    /// was a real one (it follows directly): random bytes in junk often fake one frame header
    /// (another bitrate, so another length), and trusting it would hand out its noise and count
    /// the lost stretch in its frame length. Copied into `held` (capacity kept), handed out
    /// after the silence once confirmed.
    private var held: [Float] = []
    private var heldFrames = 0
    private var heldOffset = 0
    private var heldConfirmed = false
    /// Salvaging: stream position where the last trusted frame ends, and the bytes and number
    /// of strides between trusted frames that follow each other: their mean counts lost frames.
    private var trustedEnd = -1
    private var strideBytes = 0
    private var strides = 0
    /// Salvaging: where the held frame starts and ends in the stream (bytes).
    private var heldStart = 0
    private var heldEnd = 0
    /// Decode errors in a row (salvaging): the stream ends after `errorLimit`.
    private var errorsInRow = 0
    static package let errorLimit = 10_000

    /// What salvaging did; nil when not salvaging.
    public var salvage: SalvageReport? { salvaging ? report : nil }

    /// Bytes of junk libmpg123 searches through for the next frame before it gives up (its own
    /// default is 1024): a bad sector or a splice is skipped with a warning, not a failure.
    static package let resyncLimit = 65536

    /// libmpg123's one-time set-up (a no-op after the first call; cheap to repeat, but done once).
    private static let initialised: Bool = mpg123_init() == Int32(MPG123_OK.rawValue)

    /// Opens `path` and reads the first frame's format. Throws `AudioError`: `.unrecognised` when
    /// no MPEG audio frame is found (AAC behind an ID3 tag, say), `.decodeFailed` when the stream
    /// is unusable. Called once per recording (once per pass).
    public init(path: String, salvage: Bool = false) throws {
        self.path = path
        salvaging = salvage
        let fd = try SndFileDecoder.openChecked(path)
        self.fd = fd
        guard Self.initialised, let mh = mpg123_new(nil, nil) else {
            Glibc.close(fd)
            self.fd = -1
            throw AudioError.decodeFailed(path: path, detail: "libmpg123 cannot start")
        }
        handle = mh
        // QUIET first: opening already parses headers and would print.
        // SKIP_ID3V2: TagLib reads the tags; libmpg123 would otherwise hold a copy of every ID3v2 tag.
        let add = Int(MPG123_QUIET.rawValue | MPG123_FORCE_FLOAT.rawValue | MPG123_GAPLESS.rawValue | MPG123_NO_FRANKENSTEIN.rawValue
                      | MPG123_SKIP_ID3V2.rawValue)
        _ = mpg123_param2(mh, Int32(MPG123_ADD_FLAGS.rawValue), add, 0)
        _ = mpg123_param2(mh, Int32(MPG123_REMOVE_FLAGS.rawValue), Int(MPG123_AUTO_RESAMPLE.rawValue), 0)
        _ = mpg123_param2(mh, Int32(MPG123_RESYNC_LIMIT.rawValue), salvage ? -1 : Self.resyncLimit, 0)

        var rate = 0, channels: Int32 = 0, encoding: Int32 = 0
        let startsWell = FrameScan.mp3StartsWithFrame(path: path)
        if !startsWell || mpg123_open_fd(mh, fd) != MPG123_OK.rawValue || mpg123_getformat(mh, &rate, &channels, &encoding) != MPG123_OK.rawValue {
            let reason = startsWell ? Self.message(mh) : "no MPEG audio frame header where the audio should start"
            let kind = ContentSniffer.sniff(path: path)
            Self.release(mh, fd)
            handle = nil
            self.fd = -1
            throw AudioError.unrecognised(path: path, looksLike: kind == .unknown ? nil : kind.rawValue, detail: reason)
        }
        _ = mpg123_format_none(mh)
        _ = mpg123_format(mh, rate, channels, Int32(MPG123_ENC_FLOAT_32.rawValue))
        // Without a length header the length is only an estimate: count the frames (one read of
        // the file's headers, no decoding).
        declaresLength = FrameScan.mp3HasLengthHeader(path: path)
        if !declaresLength { _ = mpg123_scan(mh) }
        let length = mpg123_length(mh)
        var fi = mpg123_frameinfo2()
        _ = mpg123_info2(mh, &fi)
        let codec = ["MP1", "MP2", "MP3"][max(0, min(2, Int(fi.layer) - 1))]
        info = SourceInfo(container: "MPEG-1/2", codec: codec, sampleRate: rate, channels: Int(channels),
                          frames: max(0, length), sampleKind: .lossy)
        report.declaredFrames = info.frames > 0 ? info.frames : nil
        if channels < 1 || rate < 1 {
            close()
            throw AudioError.decodeFailed(path: path, detail: "the first frame claims \(channels) channels at \(rate) Hz")
        }
    }

    deinit { close() }

    /// What happened to the stream that did not stop it: junk skipped between frames. Read after
    /// the last block; one line each.
    public var notes: [String] {
        var out: [String] = []
        if !skipped.isEmpty {
            let total = skipped.reduce(0) { $0 + $1.bytes }
            let first = skipped[0].at
            out.append("damaged MP3: skipped \(total) bytes of junk between frames (\(skipped.count == 1 ? "at byte \(first)" : "\(skipped.count) places, first at byte \(first)")); the audio there is lost")
        }
        if unread > 0 {
            out.append(declaresLength
                ? "damaged MP3: its Xing/Info header declares \(info.frames) frames, but \(unread) more bytes follow them; only the declared length is decoded"
                : "damaged MP3: the stream stops \(unread) bytes before the end of the file; the rest is not MPEG audio segno can read")
        }
        return out
    }

    /// Fills `block` with up to `maxFrames` frames of interleaved Float32; 0 at the end. Throws
    /// `AudioError.decodeFailed` when libmpg123 cannot go on (after handing out, in an earlier
    /// call, the frames decoded before the error). Called once per block, one thread.
    public func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        if let e = deferred {
            deferred = nil
            throw e
        }
        let ch = info.channels
        block.reset(channels: ch, capacity: maxFrames)
        guard let mh = handle else { return 0 }
        var filled = 0
        try block.samples.withUnsafeMutableBufferPointer { out in
            while filled < maxFrames {
                if silence > 0 {
                    let n = min(silence, maxFrames - filled)
                    (out.baseAddress! + filled * ch).update(repeating: 0, count: n * ch)
                    silence -= n
                    filled += n
                    framesRead += n
                    continue
                }
                if heldConfirmed, heldOffset < heldFrames {
                    let n = min(maxFrames - filled, heldFrames - heldOffset)
                    held.withUnsafeBufferPointer { (out.baseAddress! + filled * ch).update(from: $0.baseAddress! + heldOffset * ch, count: n * ch) }
                    heldOffset += n
                    filled += n
                    framesRead += n
                    continue
                }
                if let src = pending, pendingOffset < pendingFrames {
                    let n = min(maxFrames - filled, pendingFrames - pendingOffset)
                    (out.baseAddress! + filled * ch).update(from: src + pendingOffset * ch, count: n * ch)
                    pendingOffset += n
                    filled += n
                    framesRead += n
                    continue
                }
                pending = nil
                if ended { break }
                do {
                    try decodeFrame(mh)
                } catch where filled > 0 {
                    // The frames already decoded are handed out; the error comes with the next call.
                    deferred = error
                    break
                }
            }
        }
        block.frames = filled
        report.framesYielded = framesRead
        return filled
    }

    /// Decodes the next MPEG frame into `pending`, or sets `ended`.
    private func decodeFrame(_ mh: OpaquePointer) throws {
        var num: off_t = 0
        var audio: UnsafeMutablePointer<UInt8>?
        var bytes = 0
        while true {
            let rc = mpg123_decode_frame(mh, &num, &audio, &bytes)
            switch rc {
            case MPG123_OK.rawValue:
                errorsInRow = 0
                let frames = audio == nil ? 0 : bytes / (MemoryLayout<Float>.size * info.channels)
                let junk = noteJunk(mh)
                if salvaging, !trust(mh, junk: junk, audio: audio, frames: frames) { continue }
                pending = audio.map { UnsafeRawPointer($0).assumingMemoryBound(to: Float.self) }
                pendingFrames = frames
                pendingOffset = 0
                return
            case MPG123_NEW_FORMAT.rawValue:
                // NO_FRANKENSTEIN keeps the format; the call only announces it once.
                var rate = 0, channels: Int32 = 0, encoding: Int32 = 0
                _ = mpg123_getformat(mh, &rate, &channels, &encoding)
                if rate != info.sampleRate || Int(channels) != info.channels {
                    throw AudioError.decodeFailed(path: path, detail: "the stream changes to \(channels) channels at \(rate) Hz after \(framesRead) frames")
                }
            case MPG123_DONE.rawValue:
                ended = true
                // A frame held after junk with nothing after it is the stream's last: handed out.
                if heldFrames > 0, !heldConfirmed { confirmHeld(mh) }
                noteUnread(mh)
                if salvaging { return noteShort() }
                try checkLength()
                return
            default:
                if salvaging && errorsInRow < Self.errorLimit {
                    // libmpg123 resumes after an error on the next call (a bad frame is skipped).
                    errorsInRow += 1
                    continue
                }
                if salvaging {
                    ended = true
                    if heldFrames > 0, !heldConfirmed { confirmHeld(mh) }
                    report.add(at: framesRead, frames: max(0, info.frames - framesRead), filled: false, cause: .badFrame,
                               "libmpg123 gave up: \(Self.message(mh))")
                    return
                }
                throw AudioError.decodeFailed(path: path, detail: "\(Self.message(mh)) after \(framesRead) of \(info.frames) frames")
            }
        }
    }

    /// Compares how far the stream moved with the frame's size: more means junk was skipped.
    /// Returns the junk's bytes (0: the frame follows the last directly). Called after each
    /// decoded frame.
    private func noteJunk(_ mh: OpaquePointer) -> Int {
        let end = Int(mpg123_tell_stream(mh))
        var fi = mpg123_frameinfo2()
        _ = mpg123_info2(mh, &fi)
        var junk = 0
        if lastEnd >= 0, end - lastEnd > Int(fi.framesize) {
            junk = end - lastEnd - Int(fi.framesize)
            skipped.append((lastEnd, junk))
        }
        lastEnd = end
        decodedEnd = Int64(end)
        return junk
    }

    /// Salvaging, after each decoded frame (`frames` of `audio`, `junk` bytes skipped before
    /// it): false when the frame is held back (it came after junk and is not yet confirmed).
    /// A frame that follows a held one directly confirms it; one after more junk shows the held
    /// frame was a header faked by the junk, and it is dropped (its bytes count as junk).
    private func trust(_ mh: OpaquePointer, junk: Int, audio: UnsafeMutablePointer<UInt8>?, frames: Int) -> Bool {
        if heldFrames > 0, !heldConfirmed {
            if junk > 0 {
                heldFrames = 0   // dropped: the span from the last trusted frame now reaches this one
                return hold(mh, audio: audio, frames: frames)
            }
            confirmHeld(mh)
        } else if junk > 0 {
            return hold(mh, audio: audio, frames: frames)
        }
        if trustedEnd >= 0 {
            strideBytes += lastEnd - trustedEnd
            strides += 1
        }
        trustedEnd = lastEnd
        return true
    }

    /// Copies the frame just decoded into `held` (libmpg123's buffer is reused by the next decode).
    private func hold(_ mh: OpaquePointer, audio: UnsafeMutablePointer<UInt8>?, frames: Int) -> Bool {
        let count = frames * info.channels
        if held.count < count { held = [Float](repeating: 0, count: count) }
        if let audio {
            held.withUnsafeMutableBufferPointer {
                $0.baseAddress!.update(from: UnsafeRawPointer(audio).assumingMemoryBound(to: Float.self), count: count)
            }
        }
        heldFrames = frames
        heldOffset = 0
        heldConfirmed = false
        var fi = mpg123_frameinfo2()
        _ = mpg123_info2(mh, &fi)
        heldStart = lastEnd - Int(fi.framesize)
        heldEnd = lastEnd
        return false
    }

    /// The held frame is real: as many frames of silence go before it as would have filled the
    /// stream bytes between the last trusted frame and it, at the trusted frames' mean stride (the
    /// held frame's own length when there is none yet), so later audio keeps its time.
    private func confirmHeld(_ mh: OpaquePointer) {
        let stride = strides > 0 ? Double(strideBytes) / Double(strides) : Double(max(heldEnd - heldStart, 1))
        let span = max(0, heldStart - trustedEnd)
        let lost = Int((Double(span) / max(stride, 1)).rounded())
        silence = lost * max(Int(mpg123_spf(mh)), 0)
        report.add(at: framesRead, frames: silence, filled: true, cause: .lostSync,
                   "\(span) bytes of junk at byte \(trustedEnd) skipped; \(lost) frames of silence in their place")
        heldConfirmed = true
        trustedEnd = heldEnd
    }

    /// At the end: a stream that stops well before the end of the file, where MPEG frames go on,
    /// was cut at a length header (Xing/Info) that declares fewer frames than the file holds, or
    /// ended by junk. Trailing tags (ID3v1, APE with a picture, Lyrics3) are not frames.
    private func noteUnread(_ mh: OpaquePointer) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return }
        let at = Int(mpg123_tell_stream(mh))
        streamEnd = Int64(at)
        remaining = Int(st.st_size) - at
        if remaining > Self.tailAllowance, framesRead + Self.lengthSlack >= info.frames,
           FrameScan.mp3FramesFollow(path: path, from: Int64(at), within: Int64(Self.resyncLimit)) {
            unread = remaining
        }
    }

    /// At the end when salvaging: what the stream falls short of its declared length is lost.
    private func noteShort() {
        let short = info.frames - framesRead - silence - (heldConfirmed ? heldFrames - heldOffset : 0)
        if short > Self.lengthSlack {
            report.add(at: framesRead, frames: short, filled: false, cause: remaining > Self.tailAllowance ? .badFrame : .truncated,
                       remaining > Self.tailAllowance ? "the stream breaks off \(remaining) bytes before the end of the file"
                                                      : "the file ends \(short) frames before the length its headers declare")
        }
    }

    /// At the end: a stream that yields clearly less than its declared (or scanned) length was cut
    /// short, or junk ended it (libmpg123 takes a frame header that changes the stream's format for
    /// the end of the stream).
    private func checkLength() throws {
        guard framesRead + Self.lengthSlack < info.frames else { return }
        let rate = Double(info.sampleRate)
        let short = String(format: "%d frames (%.3f s) decode of the %d (%.3f s) %@",
                           framesRead, Double(framesRead) / rate, info.frames, Double(info.frames) / rate,
                           declaresLength ? "its Xing/Info header declares" : "its frame headers hold")
        if let junk = skipped.first {
            throw AudioError.decodeFailed(path: path, detail: "damaged MP3: junk at byte \(junk.at); only \(short)")
        }
        if remaining > Self.tailAllowance {
            throw AudioError.decodeFailed(path: path, detail: "damaged MP3: the stream breaks off \(remaining) bytes before the end of the file; only \(short)")
        }
        throw AudioError.truncated(path: path, detail: "only \(short)")
    }

    /// Frames a stream may fall short of its declared length before it is called truncated: a
    /// recorder killed mid-frame loses its last frame or two.
    static package let lengthSlack = 2304

    /// Bytes after the last decoded frame about which nothing is said (a few frames).
    static package let tailAllowance = 4096

    /// Releases the handle and the file. Safe to call twice.
    public func close() {
        if let mh = handle { Self.release(mh, fd) } else if fd >= 0 { Glibc.close(fd) }
        handle = nil
        fd = -1
        pending = nil
    }

    private static func release(_ mh: OpaquePointer, _ fd: Int32) {
        _ = mpg123_close(mh)
        mpg123_delete(mh)
        if fd >= 0 { Glibc.close(fd) }
    }

    /// libmpg123's text for its last error, e.g. "Unable to find a working MPEG frame".
    private static func message(_ mh: OpaquePointer) -> String {
        mpg123_strerror(mh).map { String(cString: $0) } ?? "unknown error"
    }
}
