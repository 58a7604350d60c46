import Foundation
import SegnoCore

/// Rebuilds the index (`moov`) of an MP4/M4A/MOV/3GP recording whose recorder died before
/// writing it: the audio is all in `mdat`, but nothing says where each frame is. The frames are
/// found by trial decoding in the `segno-decode` helper (`FrameFinder`), with the codec
/// configuration of a healthy reference recording from the same recorder or, without one, of
/// the common AAC-LC settings; the output is the same container and codec, frames copied byte
/// for byte (no re-encoding), the index before the audio. The damaged file is only read.
public enum MP4Repair {
    /// Where the audio of a damaged MP4 is, read from its top-level boxes.
    public struct Layout: Sendable, Equatable {
        /// The `ftyp` box's bytes (nil when the file has none).
        public var ftyp: [UInt8]?
        /// Byte range of `mdat`'s payload: from its header to its declared end or the end of the file.
        public var dataStart: Int64
        public var dataEnd: Int64
        /// True when the file has its index (nothing to rebuild).
        public var hasIndex: Bool
    }

    /// What a repair did.
    public struct Outcome: Sendable {
        public var output: String
        public var frames: Int
        /// Seconds of audio the rebuilt index holds.
        public var seconds: Double
        /// Bytes of `mdat` the frames hold, and `mdat`'s payload size.
        public var bytesRecovered: Int64
        public var bytesInData: Int64
        /// Bytes after the last frame that do not decode (a cut last frame), and inside the stream.
        public var tailBytes: Int64
        public var skippedBytes: Int64
        /// Where the codec settings came from: "reference iphone.m4a", "AAC-LC 48000 Hz mono (guessed)".
        public var origin: String
        /// Seconds the unreadable tail would have held (estimated from the frames' average size).
        public var tailSeconds: Double
        /// Why the search for frames ended early (its budget spent on junk), or nil.
        public var stopped: String? = nil
        /// What the user should check: a rate that is a guess, a reference that does not match.
        public var warnings: [String] = []

        /// "memo.m4a: 41:07.200 of audio recovered (99.9 % of mdat), index rebuilt from reference iphone.m4a; last 0.021 s unreadable"
        public func summary(input: String) -> String {
            var s = "\((input as NSString).lastPathComponent): \(SalvageReport.seconds(seconds)) of audio recovered "
            s += String(format: "(%.1f %% of mdat)", bytesInData > 0 ? 100 * Double(bytesRecovered) / Double(bytesInData) : 0)
            s += ", index rebuilt from \(origin)"
            if skippedBytes > 0 { s += "; \(skippedBytes) damaged bytes inside skipped" }
            if tailBytes > 0 { s += String(format: "; last %.3f s unreadable", tailSeconds) }
            if let stopped { s += "; " + stopped }
            return s
        }
    }

    /// Reads `path`'s top-level boxes up to `mdat` (and past it when its size is written); nil
    /// when it is not an MP4 with audio data. A size left as 0, `????` (Android) or past the end
    /// of the file means "to the end of the file".
    public static func layout(path: String) -> Layout? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let file = BoxReader(fd: fd, size: Int64(st.st_size))
        var at: Int64 = 0
        var ftyp: [UInt8]?
        var data: (Int64, Int64)?
        var hasIndex = false
        for _ in 0..<64 {
            guard let h = file.read(at, 8) else { break }
            let type = String(decoding: h[4..<8], as: UTF8.self)
            var size = Int64(be32(h, 0))
            var header: Int64 = 8
            if size == 1, let l = file.read(at + 8, 8) {
                header = 16
                size = l.allSatisfy({ $0 == 0x3F }) ? 0 : Int64(bitPattern: be64(l, 0))
            }
            let unknown = size == 0 || h[0..<4].allSatisfy { $0 == 0x3F } || size < header || at + size > file.size
            let end = unknown ? file.size : at + size
            switch type {
            case "ftyp": ftyp = file.read(at, Int(min(end - at, 4096)))
            case "moov": hasIndex = true
            case "mdat": if data == nil { data = (at + header, end) }
            default:
                // Anything but a box of letters is not MP4 structure: stop reading boxes here.
                guard type.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else { break }
            }
            if unknown { break }
            at = end
        }
        guard let (start, end) = data, end > start else { return nil }
        return Layout(ftyp: ftyp, dataStart: start, dataEnd: end, hasIndex: hasIndex)
    }

    /// Finds the frames of `input`'s `mdat` with `reference`'s settings (or the guesses) and writes
    /// `output`: ftyp, the rebuilt moov, mdat with the frames. Refuses to write over `input`, over
    /// a file segno did not write (unless `overwrite`), or when nothing decodes. Throws
    /// `RepairError`. Called once per damaged file by `segno repair`.
    public static func repair(input: String, reference: String?, output: String, overwrite: Bool = false,
                              helpers: DecodeHelperPool) throws -> Outcome {
        let output = URL(fileURLWithPath: output).standardizedFileURL.path
        try StreamRepair.refuseSpecialFile(input)
        if let reference { try StreamRepair.refuseSpecialFile(reference) }
        guard let layout = layout(path: input) else {
            throw RepairError.damaged(input, "not an MP4/M4A/MOV/3GP file with audio data (no mdat box)")
        }
        if layout.hasIndex { throw RepairError.damaged(input, "has its index (moov); nothing to rebuild (segno convert --salvage reads what it holds)") }
        if OutputFile.sameFile(input, output) { throw RepairError.output(output, "is the damaged file itself; segno never writes over it") }
        if OutputFile.exists(output), !overwrite, !OutputFile.isMarked(output) {
            throw RepairError.output(output, "exists and segno did not write it; choose another name (or --overwrite)")
        }
        let (template, scan) = try findFrames(input: input, layout: layout, reference: reference, helpers: helpers)
        try write(input: input, output: output, layout: layout, template: template, scan: scan)
        let frames = scan.count
        let tail = layout.dataEnd - layout.dataStart - (scan.count > 0 ? Int64(scan.offsets.last!) + Int64(scan.lengths.last!) : 0)
        let average = frames > 0 ? Double(scan.covered) / Double(frames) : 1
        return Outcome(output: output, frames: frames, seconds: Double(frames) * Double(template.frameTicks) / Double(template.timescale),
                       bytesRecovered: scan.covered, bytesInData: layout.dataEnd - layout.dataStart, tailBytes: tail,
                       skippedBytes: scan.skipped - max(0, tail), origin: template.origin,
                       tailSeconds: Double(tail) / average * Double(template.frameTicks) / Double(template.timescale),
                       stopped: scan.stoppedBecause.hasPrefix("trial decoding stopped") ? scan.stoppedBecause : nil,
                       warnings: template.warnings)
    }

    /// The template that decodes the stream and the frames it finds. With a reference, its
    /// settings (and warnings where the stream does not match them); without, one AAC-LC guess
    /// per rate family on the first 256 KiB, the one covering most bytes (the first on a tie) on
    /// the whole, and the rate inside the family its bitrate names (`AACRateChoice`).
    static package func findFrames(input: String, layout: Layout, reference: String?,
                           helpers: DecodeHelperPool) throws -> (MP4Template, FrameScanResult) {
        let length = layout.dataEnd - layout.dataStart
        func scan(_ t: MP4Template, _ bytes: Int64) throws -> FrameScanResult {
            do {
                return try helpers.frameBoundaries(path: input, codec: t.codec.rawValue, rate: t.rate, channels: t.channels,
                                                   offset: layout.dataStart, length: bytes, extradata: t.extradata)
            } catch let e as FrameScanError {
                throw RepairError.damaged(input, e.description)
            }
        }
        // A guess on the first 256 KiB: nil when it does not decode; a stop (--max-time) ends the search.
        func probe(_ t: MP4Template) throws -> FrameScanResult? {
            do { return try scan(t, min(length, 256 * 1024)) } catch let e as Interrupted { throw e } catch { return nil }
        }
        if let reference {
            let t = try MP4Template.from(reference: reference)
            let found = try scan(t, length)
            var chosen = t
            if t.codec == .aac { chosen.warnings = try referenceMismatch(t, found: found, probe: probe) }
            guard found.count > 0 else {
                throw RepairError.damaged(input, "no frame decodes with the settings of \(t.origin)" + chosen.warnings.map { "; " + $0 }.joined())
            }
            return (chosen, found)
        }
        guard var (t, _) = try bestGuess(probe: probe) else {
            throw RepairError.damaged(input, "no frame decodes as AAC-LC at any rate, mono or stereo; give a healthy recording from the same recorder with --reference")
        }
        let found = try scan(t, length)
        let family = AACRateChoice.family(of: t.rate)
        let perFrame = found.count > 0 ? Double(found.covered) / Double(found.count) : 0
        let familyText = family.map { String(format: "%g", Double($0) / 1000) }.joined(separator: "/") + " kHz"
        if let choice = AACRateChoice.rate(in: family, bytesPerFrame: perFrame) {
            if choice.rate != t.rate { t = MP4Template.aacGuess(rate: choice.rate, channels: t.channels) }
            t.origin += "; the frames decode as \(familyText) AAC, and \(choice.why)"
        } else if family.count > 1 {
            t.origin += "; the frames decode as \(familyText) AAC, which decode alike, so the rate is a guess: --reference settles it"
            t.warnings.append("\(t.rate) Hz is a guess: \(familyText) decode alike and the frames' bitrate does not tell; the audio plays " +
                              "too fast or too slow if it is wrong (give a healthy recording from the same recorder with --reference)")
        } else {
            t.origin += "; the frames decode as \(familyText) AAC only"
        }
        return (t, found)
    }

    /// The guess (one rate per family, mono and stereo) whose frames cover the most of the first
    /// 256 KiB, the first on a tie; nil when none decodes two frames.
    static package func bestGuess(probe: (MP4Template) throws -> FrameScanResult?) rethrows -> (MP4Template, Int64)? {
        var best: (MP4Template, Int64)?
        for family in AACRateChoice.families {
            for channels in [1, 2] {
                let t = MP4Template.aacGuess(rate: family[0], channels: channels)
                guard let found = try probe(t), found.count >= 2 else { continue }
                if best == nil || found.covered > best!.1 { best = (t, found.covered) }
            }
        }
        return best
    }

    /// Warnings when the stream does not match the reference's settings: another channel count
    /// or rate family decodes more of it, or its bitrate names another rate of the family.
    static package func referenceMismatch(_ t: MP4Template, found: FrameScanResult, probe: (MP4Template) throws -> FrameScanResult?) rethrows -> [String] {
        var out: [String] = []
        let layout = { (c: Int) in c == 1 ? "mono" : c == 2 ? "stereo" : "\(c) channels" }
        if let (g, covered) = try bestGuess(probe: probe), let mine = try probe(MP4Template.aacGuess(rate: AACRateChoice.family(of: t.rate)[0], channels: t.channels)),
           covered > mine.covered + mine.covered / 10 {
            let family = AACRateChoice.family(of: g.rate).map(String.init).joined(separator: "/")
            if g.channels != t.channels {
                out.append("the reference is \(layout(t.channels)), but the stream's frames decode as \(layout(g.channels)); it may be from another recorder or setting")
            }
            if AACRateChoice.family(of: g.rate) != AACRateChoice.family(of: t.rate) {
                out.append("the reference is \(t.rate) Hz, but the stream's frames decode as \(family) Hz AAC; it may be from another recorder or setting")
            }
        }
        if out.isEmpty, found.count > 0 {
            let perFrame = Double(found.covered) / Double(found.count) * 1024 / Double(t.frameTicks)
            let family = AACRateChoice.family(of: t.rate)
            if let choice = AACRateChoice.rate(in: family, bytesPerFrame: perFrame), choice.rate != t.rate {
                out.append("the reference is \(t.rate) Hz, but \(choice.why): the repaired file plays too \(choice.rate < t.rate ? "fast" : "slow") if the stream was made at \(choice.rate) Hz")
            }
        }
        return out
    }

    /// Writes ftyp, moov and mdat (the frames' span copied as it is) through a temporary name.
    static package func write(input: String, output: String, layout: Layout, template t: MP4Template, scan: FrameScanResult) throws {
        guard scan.count > 0 else { throw RepairError.damaged(input, "no frame decodes") }
        let ftyp = layout.ftyp ?? t.ftyp ?? MP4Boxes.box("ftyp", Array("M4A ".utf8) + MP4Boxes.u32(0) + Array("M4A mp42isom".utf8))
        let first = Int64(scan.offsets[0])
        let span = scan.span
        let wideData = span + 16 > Int64(UInt32.max)
        let mdatHeader: [UInt8] = wideData ? MP4Boxes.u32(1) + Array("mdat".utf8) + MP4Boxes.u64(UInt64(span + 16))
                                           : MP4Boxes.u32(UInt32(span + 8)) + Array("mdat".utf8)
        // The index's size does not depend on the offsets' values, only on their width.
        let placeholder = [UInt64](repeating: wideData ? UInt64(UInt32.max) + 1 : 0, count: scan.count)
        let moovSize = MP4Boxes.moov(template: t, sizes: scan.lengths, offsets: placeholder).count
        let base = UInt64(ftyp.count + moovSize + mdatHeader.count)
        let offsets = scan.offsets.map { base + UInt64(Int64($0) - first) }
        let moov = MP4Boxes.moov(template: t, sizes: scan.lengths, offsets: offsets)
        let out: OutputFile
        do {
            out = try OutputFile(finalPath: output)
            try out.write(ftyp + moov + mdatHeader)
            try appendRange(of: input, from: layout.dataStart + first, count: span, to: out.tempPath)
            try out.commit()
        } catch let e as AudioError {
            throw RepairError.output(output, "\(e)")
        }
    }

    /// Appends `count` bytes of `source` from `offset` to the file at `path`, 1 MiB at a time.
    static package func appendRange(of source: String, from offset: Int64, count: Int64, to path: String) throws {
        let inFd = open(source, O_RDONLY | O_CLOEXEC)
        guard inFd >= 0 else { throw AudioError.system(source, "cannot open", errno: errno) }
        defer { close(inFd) }
        let outFd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard outFd >= 0 else { throw AudioError.system(path, "cannot open", errno: errno) }
        defer { close(outFd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var done: Int64 = 0
        while done < count {
            let want = Int(min(Int64(buffer.count), count - done))
            let n = buffer.withUnsafeMutableBytes { pread(inFd, $0.baseAddress, want, off_t(offset + done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw AudioError.system(source, "read failed", errno: n < 0 ? errno : EIO) }
            let failure = buffer.withUnsafeBufferPointer { OutputFile.writeAll(outFd, UnsafeBufferPointer(rebasing: $0[0..<n])) }
            if failure != 0 { throw AudioError.system(path, "write failed", errno: failure) }
            done += Int64(n)
        }
    }
}
