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

    /// Repairs `input` into `output` when it is a stream this repairs; nil when it is not (an
    /// MP4, which `MP4Repair` rebuilds, or a format repair does not handle). Refuses to write
    /// over `input`, or over a file segno did not write (unless `overwrite`). Throws `RepairError`.
    /// Called once per damaged file by `segno repair`.
    public static func repair(input: String, output: String, overwrite: Bool = false) throws -> Outcome? {
        let kind = ContentSniffer.sniff(path: input)
        guard kind == .adts || kind == .mp3 else { return nil }
        let output = URL(fileURLWithPath: output).standardizedFileURL.path
        if OutputFile.sameFile(input, output) { throw RepairError.output(output, "is the damaged file itself; segno never writes over it") }
        if OutputFile.exists(output), !overwrite, !OutputFile.isMarked(output) {
            throw RepairError.output(output, "exists and segno did not write it; choose another name (or --overwrite)")
        }
        if kind == .mp3 {
            guard let bad = FrameScan.mp3TagPastEnd(path: input) else {
                throw RepairError.damaged(input, "its MPEG frames need no repair to be read (--salvage reads past junk in them)")
            }
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

    private static func fileSize(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// Writes `output` through a temporary name (marked as segno's), committed when `body`
    /// returns; `body` appends its bytes in pieces through the `Appender` it is given.
    private static func write(_ output: String, _ body: (Appender) throws -> Void) throws {
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
    struct Appender {
        let fd: Int32
        let path: String

        func write(_ bytes: some Collection<UInt8>) throws {
            let failure = Array(bytes).withUnsafeBufferPointer { OutputFile.writeAll(fd, $0) }
            if failure != 0 { throw AudioError.system(path, "write failed", errno: failure) }
        }
    }
}
