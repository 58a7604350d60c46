import Foundation
import SegnoCore

/// `segno repair` for an MP3 with junk between its frames or a cut last frame (decision 0069):
/// the ID3v2 tag, then every frame of the stream that chains with the one before, in order; junk
/// (bytes that do not chain) left out; a last frame cut by the end of the file completed with
/// zero bytes, as ffmpeg's decoder reads it (so the repaired file yields as many frames as
/// ffmpeg reads of the damaged one); an ID3v1/APE tag at the end kept. Nothing is decoded.
extension StreamRepair {
    /// What a pass over the frames finds; `emit` gets the bytes to write, in order.
    private struct MP3Pass {
        var frames = 0
        var kept: Int64 = 0
        var junk: Int64 = 0
        var padded = 0
    }

    static package func repairMP3(input: String, output: String) throws -> Outcome {
        guard let r = ByteSource(path: input) else { throw RepairError.damaged(input, "cannot be read") }
        let dry = try mp3Pass(r, input: input) { _ in }
        guard dry.junk > 0 || dry.padded > 0 else {
            throw RepairError.damaged(input, "every byte after its tag is a whole MPEG frame of one stream; nothing to repair")
        }
        var result = dry
        try write(output) { out in result = try mp3Pass(r, input: input) { try out.write($0) } }
        var what: [String] = []
        if result.junk > 0 { what.append("\(result.junk) bytes of junk between frames") }
        return Outcome(output: output, frames: result.frames, bytesKept: result.kept, bytesDropped: result.junk,
                       what: what.joined(), note: result.padded > 0 ? "the last frame, cut by the end of the file, completed with \(result.padded) zero bytes (as ffmpeg reads it)" : "")
    }

    private static func mp3Pass(_ r: ByteSource, input: String, emit: ([UInt8]) throws -> Void) throws -> MP3Pass {
        var pass = MP3Pass()
        var at: Int64 = 0
        if let h = r.bytes(0, 10), Array(h.prefix(3)) == Array("ID3".utf8) {
            let size = 10 + h[6...9].reduce(Int64(0)) { $0 << 7 | Int64($1 & 0x7F) } + (h[5] & 0x10 != 0 ? 10 : 0)
            if size <= r.size, let tag = r.bytes(0, Int(size)) { try emit(tag); at = size }
        }
        guard let start = firstChain(input: input, from: at) else {
            throw RepairError.damaged(input, "no three MPEG audio frames of one stream follow each other")
        }
        pass.junk += start.at - at
        at = start.at
        let stream = (start.frame.version, start.frame.layer, start.frame.rate)
        while at + 4 <= r.size {
            if let h = r.bytes(at, 4), let f = MPEGFrame(h), (f.version, f.layer, f.rate) == stream {
                let available = min(Int64(f.length), r.size - at)
                guard var frame = r.bytes(at, Int(available)) else { break }
                if available < Int64(f.length) {
                    pass.padded = f.length - Int(available)
                    frame += [UInt8](repeating: 0, count: pass.padded)
                }
                try emit(frame)
                pass.frames += 1
                pass.kept += Int64(frame.count)
                at += available
                continue
            }
            // A tag at the end is kept as it is.
            if let b = r.bytes(at, Int(min(8, r.size - at))), ["TAG", "APETAGEX", "LYRICS"].contains(where: { String(decoding: b, as: UTF8.self).hasPrefix($0) }),
               FrameScan.mp3NextChain(path: input, from: at + 1, rate: stream.2) == nil, let rest = r.bytes(at, Int(r.size - at)) {
                try emit(rest)
                pass.kept += Int64(rest.count)
                return pass
            }
            guard let next = FrameScan.mp3NextChain(path: input, from: at + 1, rate: stream.2) else {
                pass.junk += r.size - at
                return pass
            }
            pass.junk += next.at - at
            at = next.at
        }
        pass.junk += max(0, r.size - at)
        return pass
    }

    /// The first chain of three MPEG frames from `from`, at any rate.
    private static func firstChain(input: String, from: Int64) -> (at: Int64, frame: MPEGFrame)? {
        [44100, 48000, 32000, 22050, 24000, 16000, 11025, 12000, 8000]
            .compactMap { FrameScan.mp3NextChain(path: input, from: from, rate: $0) }.min { $0.at < $1.at }
    }
}
