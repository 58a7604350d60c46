import Foundation
import SegnoCore

/// `segno repair` for streams whose frames are copied as they are into a new file of the same
/// format: AAC in ADTS (the frames that pass the header chain, in order; junk and a cut last frame
/// left out) and an MP3 whose ID3v2 tag declares a size past the end of the file (the MPEG audio
/// after the tag's header, behind the tag with its size set to what lies before the audio). Nothing is decoded
/// or re-encoded. The damaged file is only read.
public enum StreamRepair {
    /// What a repair wrote.
    public struct Outcome: Sendable {
        public var output: String
        /// Frames copied (ADTS) and bytes copied.
        public var frames: Int
        public var bytesKept: Int64
        /// Bytes of the damaged file left out, and what they were.
        public var bytesDropped: Int64
        public var what: String
        /// What else was changed, for people ("" when nothing).
        public var note = ""

        /// "memo.aac: 1,204 frames (412,903 bytes) copied; 3,159 bytes of junk between frames left out"
        public func summary(input: String) -> String {
            "\((input as NSString).lastPathComponent): \(frames > 0 ? "\(frames) frames (\(bytesKept) bytes)" : "\(bytesKept) bytes of audio") copied"
                + (bytesDropped > 0 ? "; \(bytesDropped) bytes left out (\(what))" : "") + (note.isEmpty ? "" : "; " + note)
        }
    }

    /// Refuses a FIFO, socket or device at `path` (reading one would wait for a writer forever or
    /// read a device); a missing file is left to the reader's own message.
    static package func refuseSpecialFile(_ path: String) throws(AudioError) {
        var st = stat()
        if FileNameBytes.withCPath(path, { stat($0, &st) }) == 0, (st.st_mode & S_IFMT) != S_IFREG { throw .notAFile(path: path) }
    }

    /// Repairs `input` into `output` when it is a stream this repairs; nil when it is not (an
    /// MP4, which `MP4Repair` rebuilds, or a format repair does not handle). Refuses to write
    /// over `input`, or over a file segno did not write (unless `overwrite`). Throws `RepairError`.
    /// Called once per damaged file by `segno repair`.
    public static func repair(input: String, output: String, overwrite: Bool = false) throws -> Outcome? {
        try refuseSpecialFile(input)
        let kind = ContentSniffer.sniff(path: input)
        let pcm: [ContentSniffer.Kind] = [.wav, .rf64, .aiff, .caf]
        guard kind == .adts || kind == .mp3 || kind == .ogg || kind == .flac || pcm.contains(kind) else { return nil }
        let output = URL(fileURLWithPath: output).standardizedFileURL.path
        if OutputFile.sameFile(input, output) { throw RepairError.output(output, "is the damaged file itself; segno never writes over it") }
        if OutputFile.exists(output), !overwrite, !OutputFile.isMarked(output) {
            throw RepairError.output(output, "exists and segno did not write it; choose another name (or --overwrite)")
        }
        if kind == .flac { return try FLACRepair.repair(input: input, output: output) }
        if pcm.contains(kind) {
            guard let layout = PCMLayout.read(path: input) else {
                throw RepairError.damaged(input, "is \(kind.rawValue) without PCM audio, or its header cannot be read up to the samples; repair rewrites the sizes of PCM (and μ-law/A-law) files only")
            }
            return try repairPCM(input: input, output: output, layout: layout)
        }
        if kind == .ogg { return try repairOgg(input: input, output: output) }
        if kind == .mp3 {
            guard let bad = FrameScan.mp3TagPastEnd(path: input) else { return try repairMP3(input: input, output: output) }
            let size = fileSize(input)
            try write(output) { out in
                guard let h = FileHandle(forReadingAtPath: input) else { throw AudioError.unreadable(path: input, reason: "cannot open") }
                defer { try? h.close() }
                // The tag kept, its size set to what lies before the audio (its frames, padding).
                if var tag = try h.read(upToCount: Int(bad.audioAt)), tag.count == Int(bad.audioAt), bad.audioAt > 10 {
                    let size = Int(bad.audioAt) - 10
                    tag[5] &= ~0x10   // no footer
                    tag[6] = UInt8((size >> 21) & 0x7F); tag[7] = UInt8((size >> 14) & 0x7F)
                    tag[8] = UInt8((size >> 7) & 0x7F); tag[9] = UInt8(size & 0x7F)
                    try out.write(tag)
                }
                try h.seek(toOffset: UInt64(bad.audioAt))
                while let chunk = try h.read(upToCount: 1 << 20), !chunk.isEmpty { try out.write(chunk) }
            }
            return Outcome(output: output, frames: 0, bytesKept: size - bad.audioAt, bytesDropped: 0,
                           what: "", note: "the ID3v2 tag's size set to the \(bad.audioAt - 10) bytes before the audio (it declared \(bad.declared), past the end of the file)")
        }
        // A first pass over the headers alone: is anything to be left out?
        let reader: ADTSFrameReader
        do {
            let scan = try ADTSFrameReader(path: input)
            guard var skipped = scan.lock() else { throw RepairError.damaged(input, "no two consecutive ADTS frame headers agree") }
            while let f = scan.next() { skipped += f.skippedBefore }
            if skipped == 0 && scan.tailBytes == 0 {
                throw RepairError.damaged(input, "every byte after its tag is a whole ADTS frame; nothing to repair")
            }
            reader = try ADTSFrameReader(path: input)
            _ = reader.lock()
        } catch let e as RepairError {
            throw e
        } catch {
            throw RepairError.damaged(input, "\(error)")
        }
        let start = reader.position
        var frames = 0
        var kept: Int64 = 0
        try write(output) { out in
            var chunk: [UInt8] = []
            while let f = reader.next() {
                reader.append(f, to: &chunk)
                frames += 1
                kept += Int64(f.length)
                if chunk.count >= 1 << 20 { try out.write(chunk); chunk.removeAll(keepingCapacity: true) }
            }
            if !chunk.isEmpty { try out.write(chunk) }
        }
        guard frames > 0 else { throw RepairError.damaged(input, "no whole ADTS frame") }
        return Outcome(output: output, frames: frames, bytesKept: kept, bytesDropped: reader.fileSize - kept,
                       what: start > 0 ? "a tag or junk before the stream, junk between frames, a cut last frame" : "junk between frames, a cut last frame")
    }

    /// Ogg: the pages of the first stream that pass their checksum, in order; a packet that lost a
    /// piece (a page missing before it, a continuation without its start, a page cut by the end
    /// of the file) is taken out of its page, sequence numbers are renumbered, checksums
    /// recomputed and the last page marked as the end. Granule positions are kept, so a player
    /// that follows them keeps the time of what comes after a gap.
    private static func repairOgg(input: String, output: String) throws -> Outcome {
        // A dry pass first: a healthy file is refused before anything is written.
        let dry = try oggPass(input: input) { _ in }
        guard dry.pages > 0 else { throw RepairError.damaged(input, "no readable Ogg stream header page") }
        guard dry.damaged else { throw RepairError.damaged(input, "every page passes its checksum and follows the one before; nothing to repair") }
        var result = dry
        try write(output) { out in result = try oggPass(input: input) { try out.write($0) } }
        return Outcome(output: output, frames: 0, bytesKept: result.kept, bytesDropped: result.fileSize - result.kept,
                       what: "junk, pages failing their checksum, pieces of packets whose other pieces are lost",
                       note: "\(result.pages) pages written" + (result.dropped > 0 ? ", \(result.dropped) left empty dropped" : ""))
    }

    /// One pass over `input`'s pages, handing each repaired page to `emit`.
    private static func oggPass(input: String, emit: ([UInt8]) throws -> Void) throws
        -> (pages: Int, dropped: Int, kept: Int64, damaged: Bool, fileSize: Int64) {
        let reader: OggPageReader
        do { reader = try OggPageReader(path: input) } catch { throw RepairError.damaged(input, "\(error)") }
        var serial: UInt32?
        var lastSequence: UInt32?
        var sequence: UInt32 = 0
        var pages = 0, dropped = 0
        var kept: Int64 = 0
        var pending: [UInt8]?   // the page before, written when the next is known (to mark the last)
        var damaged = false
        // True while the last kept page's last packet goes on to the next page.
        var open = false
        while let page = reader.next() {
            if serial == nil {
                guard page.bos else { damaged = true; continue }
                serial = page.serial
            } else if page.serial != serial {
                continue
            }
            let gap = page.skippedBefore > 0 || (lastSequence.map { page.sequence != $0 &+ 1 } ?? false)
            if gap { damaged = true }
            lastSequence = page.sequence
            var lacing = page.lacing
            var body = page.body
            var continued = page.continued
            var granule = page.granule
            // A continuation whose start was lost: its piece goes.
            if continued && (gap || !open) {
                var n = 0, bytes = 0
                while n < lacing.count { bytes += Int(lacing[n]); n += 1; if lacing[n - 1] < 255 { break } }
                lacing.removeFirst(n)
                body.removeFirst(bytes)
                continued = false
                damaged = true
                if !lacing.contains(where: { $0 < 255 }) { granule = -1 }
            }
            // The packet left open on the page before, when this page does not go on with it.
            if open && (!page.continued || gap), let last = pending {
                pending = trimOpenPacket(last)
                damaged = true
            }
            if lacing.isEmpty { dropped += 1; open = false; continue }
            if let p = pending { try emit(p); kept += Int64(p.count) }
            pending = OggPageWriter.page(serial: page.serial, sequence: sequence, granule: granule, continued: continued,
                                         bos: page.bos, eos: false, lacing: lacing, body: body)
            sequence &+= 1
            pages += 1
            open = lacing.last == 255
        }
        if reader.tailBytes > 0 { damaged = true }
        if var last = pending {
            if open { last = trimOpenPacket(last) }
            last[5] |= 4   // the end of the stream
            OggPageWriter.stampCRC(&last)
            try emit(last)
            kept += Int64(last.count)
        }
        return (pages, dropped, kept, damaged, reader.fileSize)
    }

    /// A written page less its last, unfinished packet (whose next piece is lost).
    private static func trimOpenPacket(_ page: [UInt8]) -> [UInt8] {
        let segments = Int(page[26])
        var lacing = Array(page[27..<(27 + segments)])
        var body = Array(page[(27 + segments)...])
        var bytes = 0
        while let l = lacing.last, l == 255 { bytes += 255; lacing.removeLast() }
        body.removeLast(bytes)
        let granule = page.withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(fromByteOffset: 6, as: Int64.self)) }
        let serial = page.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 14, as: UInt32.self)) }
        let sequence = page.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 18, as: UInt32.self)) }
        return OggPageWriter.page(serial: serial, sequence: sequence, granule: granule, continued: page[5] & 1 != 0,
                                  bos: page[5] & 2 != 0, eos: page[5] & 4 != 0, lacing: lacing, body: body)
    }

    private static func fileSize(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// Writes `output` through a temporary name (marked as segno's), committed when `body`
    /// returns; `body` appends its bytes in pieces through the `Appender` it is given.
    static package func write(_ output: String, _ body: (Appender) throws -> Void) throws {
        do {
            let out = try OutputFile(finalPath: output)
            try out.write([UInt8]())   // created empty
            let fd = open(out.tempPath, O_WRONLY | O_APPEND | O_CLOEXEC)
            guard fd >= 0 else { throw AudioError.system(output, "cannot open", errno: errno) }
            defer { close(fd) }
            try body(Appender(fd: fd, path: output))
            try out.commit()
        } catch let e as AudioError {
            throw RepairError.output(output, "\(e)")
        } catch let e as RepairError {
            throw e
        } catch {
            throw RepairError.output(output, "\(error)")
        }
    }

    /// Appends to a repaired file being written.
    package struct Appender {
        package let fd: Int32
        package let path: String

        package func write(_ bytes: some Collection<UInt8>) throws {
            let failure = Array(bytes).withUnsafeBufferPointer { OutputFile.writeAll(fd, $0) }
            if failure != 0 { throw AudioError.system(path, "write failed", errno: failure) }
        }
    }
}
