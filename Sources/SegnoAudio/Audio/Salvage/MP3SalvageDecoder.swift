import Foundation
import SegnoCore
import SegnoDSP

/// Decodes a damaged MP3 with libmpg123 (`Mpg123Decoder` salvaging: junk read past, lost frames
/// become silence) and goes on where libmpg123 alone would stop: a frame header in the junk that
/// claims another format ends its stream (it takes such a header for the start of another
/// stream), so when it ends with MPEG frames still ahead, the next three chained frames at the
/// stream's rate are found, the rest of the file from there is copied to a scratch file (removed
/// when done), and decoding resumes on it; the bytes between become silence of as many frames
/// as would have fitted, so later audio keeps its time. At most `maxRestarts` times.
///
/// Opened by `SalvageOpener` for MP3 when salvaging; one per recording, owned by one worker.
final package class MP3SalvageDecoder: AudioDecoder {
    package let info: SourceInfo
    private let path: String
    private var inner: Mpg123Decoder
    /// The file offset of the current decoder's byte 0, and its scratch copy (nil: the file itself).
    private var base: Int64 = 0
    private var scratch: String?
    /// Losses of the decoders before the current one (their `at` in this decoder's output).
    private var earlier: [SalvageReport.Loss] = []
    /// Frames handed out before the current decoder started.
    private var offset = 0
    private var yielded = 0
    private var silence = 0
    private var restarts = 0
    private let declared: Int?
    static package let maxRestarts = 64

    /// Opens `path`. Throws what `Mpg123Decoder` throws (`.unrecognised` when no MPEG frame is found).
    package init(path: String) throws {
        self.path = path
        inner = try Mpg123Decoder(path: path, salvage: true)
        info = inner.info
        declared = inner.salvage?.declaredFrames
    }

    deinit { close() }

    package var notes: [String] { inner.notes }

    package var salvage: SalvageReport? {
        var r = SalvageReport(method: "libmpg123 resynchronised on the next frame header" + (restarts > 0 ? ", restarted \(restarts) times after a stream end in junk" : ""),
                              declaredFrames: declared)
        r.losses = earlier + (inner.salvage?.losses ?? []).map { var l = $0; l.at += offset; return l }
        r.framesYielded = yielded
        return r.ifSalvaged
    }

    package func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        let ch = info.channels
        while true {
            if silence > 0 {
                block.reset(channels: ch, capacity: maxFrames)
                let n = min(silence, maxFrames)
                block.samples.withUnsafeMutableBufferPointer { $0.baseAddress!.update(repeating: 0, count: n * ch) }
                block.frames = n
                silence -= n
                yielded += n
                return n
            }
            let n = try inner.read(into: &block, maxFrames: maxFrames)
            if n > 0 {
                yielded += n
                return n
            }
            guard try resume() else { return 0 }
        }
    }

    /// After the current decoder ended: resumes at the next chained frames when the stream ended
    /// in the middle of the file. False when there is nothing more to read.
    private func resume() throws -> Bool {
        guard inner.streamEnd >= 0, restarts < Self.maxRestarts else { return false }
        let stop = base + inner.decodedEnd
        // Always forward: a resumed decoder that decodes nothing is not resumed at the same place.
        guard let next = FrameScan.mp3NextChain(path: path, from: max(stop, base + 1), rate: info.sampleRate) else { return false }
        let copy = NSTemporaryDirectory() + "/segno-salvage-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).mp3"
        do {
            guard let from = FileHandle(forReadingAtPath: path), FileManager.default.createFile(atPath: copy, contents: nil),
                  let to = FileHandle(forWritingAtPath: copy) else { unlink(copy); return false }
            defer { try? from.close(); try? to.close() }
            try from.seek(toOffset: UInt64(next.at))
            while let chunk = try from.read(upToCount: 1 << 20), !chunk.isEmpty { try to.write(contentsOf: chunk) }
        } catch {
            unlink(copy)
            return false
        }
        let fresh: Mpg123Decoder
        do { fresh = try Mpg123Decoder(path: copy, salvage: true) } catch { unlink(copy); return false }
        guard fresh.info.sampleRate == info.sampleRate, fresh.info.channels == info.channels else {
            fresh.close()
            unlink(copy)
            return false
        }
        // The losses so far, less the "stream breaks off" that this resumption undoes.
        earlier += (inner.salvage?.losses ?? []).filter { !($0.cause == .badFrame && $0.filled == false && $0.detail.contains("breaks off")) }
            .map { var l = $0; l.at += offset; return l }
        let gap = next.at - stop
        let lost = Int((gap + Int64(next.frame.length) / 2) / Int64(max(next.frame.length, 1)))
        silence = lost * next.frame.samples
        earlier.append(SalvageReport.Loss(at: yielded, frames: silence, filled: true, cause: .lostSync,
                                          detail: "libmpg123 ended the stream at byte \(base + inner.streamEnd) (a frame header in junk) after a frame ending at byte \(stop); resumed at byte \(next.at), \(lost) frames of silence in between"))
        inner.close()
        if let scratch { unlink(scratch) }
        scratch = copy
        inner = fresh
        base = next.at
        offset = yielded + silence
        restarts += 1
        return true
    }

    package func close() {
        inner.close()
        if let scratch { unlink(scratch) }
        scratch = nil
    }
}
