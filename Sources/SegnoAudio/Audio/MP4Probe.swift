import Foundation
import SegnoCore

/// Reads the stream facts and tags of the common phone MP4/M4A/3GP files from their `moov` box
/// directly, the way ffprobe would report them, so opening one costs a few small reads instead
/// of an ffprobe process (tens of milliseconds of CPU each, mostly loading FFmpeg's libraries).
///
/// Only a well-understood subset is read: one audio track of AAC-LC (whose config rules out SBR
/// or whose rate is at least 32 kHz, so no implicit SBR can double it), ALAC or AMR, at most one
/// edit, no fragments. Anything else returns nil and goes to ffprobe. Called once per recording.
package enum MP4Probe {
    /// Facts for `path`, or nil when the file is outside the subset (or unreadable: ffprobe then
    /// gives the reason).
    static package func probe(path: String, kind: ContentSniffer.Kind) -> StreamProbe? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let file = BoxReader(fd: fd, size: Int64(st.st_size))
        // Top level may end in a cut box (a file cut after its index): the boxes before it count.
        guard let top = file.children(0, file.size, upToACutBox: true), let moov = top.first(where: { $0.type == "moov" }),
              !top.contains(where: { $0.type == "moof" }), let moovBoxes = file.children(moov.body, moov.end),
              !moovBoxes.contains(where: { $0.type == "mvex" }) else { return nil }
        var brand = ""
        if let ftyp = top.first(where: { $0.type == "ftyp" }), let b = file.read(ftyp.body, 4) { brand = String(decoding: b, as: UTF8.self) }

        guard let mvhd = moovBoxes.first(where: { $0.type == "mvhd" }), let movie = file.timeHeader(mvhd) else { return nil }
        var audio: [Box] = []
        for trak in moovBoxes where trak.type == "trak" {
            guard let mdia = file.child("mdia", of: trak), let hdlr = file.child("hdlr", of: mdia),
                  let h = file.read(hdlr.body + 8, 4), String(decoding: h, as: UTF8.self) == "soun" else { continue }
            audio.append(trak)
        }
        guard audio.count == 1, let trak = audio.first, let mdia = file.child("mdia", of: trak),
              let mdhd = file.child("mdhd", of: mdia), let media = file.timeHeader(mdhd), media.timescale > 0,
              let stsd = file.child("stsd", of: mdia, path: ["minf", "stbl"]),
              let entry = file.children(stsd.body + 8, stsd.end)?.first,
              let stream = file.sampleEntry(entry) else { return nil }

        // Length as ffprobe reports it: the edit's duration (movie timescale) when there is one,
        // else the media header's or the sum of the sample durations, whichever is less; rescaled
        // to the sample rate, rounding to nearest.
        guard let stts = file.child("stts", of: mdia, path: ["minf", "stbl"]), let samples = file.sampleDuration(stts) else { return nil }
        var frames = rescale(samples > 0 ? min(media.duration, samples) : media.duration, from: media.timescale, to: stream.rate)
        if let edts = file.child("edts", of: trak), let elst = file.child("elst", of: edts) {
            // An edit that starts at 0 changes nothing ffprobe reports; one that skips priming
            // frames gives the length.
            guard let edit = file.singleEdit(elst), movie.timescale > 0 else { return nil }
            if edit.duration > 0 && edit.start > 0 { frames = rescale(edit.duration, from: movie.timescale, to: stream.rate) }
        }
        var tags = file.tags(moovBoxes)
        if movie.created > 0 { tags["creation_time"] = Self.ffprobeTime(movie.created) }
        if let smpb = tags["itunsmpb"], let n = FFprobe.iTunSMPBLength(smpb) { frames = n }
        let container = FFprobe.containerName(formatName: "mov,mp4", brand: brand, kind: kind)
        let info = SourceInfo(container: container, codec: stream.codec, sampleRate: stream.rate, channels: stream.channels,
                              frames: frames, sampleKind: stream.kind, tags: FFprobe.userTags(stream: nil, format: tags))
        return StreamProbe(info: info, exactFrames: frames > 0 ? frames : nil, declaredFrames: frames > 0 ? frames : nil)
    }

    static package func rescale(_ value: Int64, from: Int64, to: Int) -> Int {
        guard from > 0 else { return 0 }
        let (hi, lo) = value.multipliedFullWidth(by: Int64(to))
        guard hi == 0 || hi == -1 else { return 0 }
        return Int((Int64(bitPattern: lo) + from / 2) / from)
    }

    /// An MP4 time (seconds since 1904, or since 1970 if earlier than that epoch's offset) as
    /// ffprobe prints `creation_time`: "2024-05-01T09:30:12.000000Z".
    static package func ffprobeTime(_ seconds: Int64) -> String {
        let unix = seconds >= 2_082_844_800 ? seconds - 2_082_844_800 : seconds
        return String(RecordingContext.isoDateTime(Date(timeIntervalSince1970: TimeInterval(unix))).dropLast()) + ".000000Z"
    }
}

/// What the audio sample entry says.
package struct MP4Stream {
    package var codec: String
    package var rate: Int
    package var channels: Int
    package var kind: SampleKind
}

/// A box: its type and where its header and body are in the file.
package struct Box {
    package var type: String
    package var start: Int64
    package var body: Int64
    package var end: Int64
}

/// Random-access reads of MP4 boxes with `pread`; every read is bounded by the file's size.
package struct BoxReader {
    package let fd: Int32
    package let size: Int64

    /// Opens `path` read-only, runs `body` on a reader of it and closes it; nil when the file
    /// cannot be opened or its size read. Called once per file by the container readers.
    package static func withFile<T>(_ path: String, _ body: (BoxReader) -> T) -> T? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return body(BoxReader(fd: fd, size: Int64(st.st_size)))
    }

    package func read(_ offset: Int64, _ count: Int) -> [UInt8]? {
        guard count >= 0, offset >= 0, offset + Int64(count) <= size else { return nil }
        var b = [UInt8](repeating: 0, count: count)
        let n = b.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
        return n == count ? b : nil
    }

    /// The boxes between `from` and `to`; nil when a header is malformed, or (with
    /// `upToACutBox`) the boxes before the first that runs past `to`.
    package func children(_ from: Int64, _ to: Int64, upToACutBox: Bool = false) -> [Box]? {
        var boxes: [Box] = []
        var at = from
        while at + 8 <= to {
            guard boxes.count < 4096, let h = read(at, 8) else { return nil }
            var size = Int64(be32(h, 0))
            var header: Int64 = 8
            if size == 1 {
                guard let l = read(at + 8, 8) else { return nil }
                size = Int64(bitPattern: l.reduce(0) { $0 << 8 | UInt64($1) })
                header = 16
            } else if size == 0 {
                size = to - at
            }
            guard size >= header else { return nil }
            guard at + size <= to else { return upToACutBox ? boxes : nil }
            // Types are four Latin-1 bytes ("©nam" starts with 0xA9).
            let type = String(String.UnicodeScalarView(h[4..<8].map { Unicode.Scalar($0) }))
            boxes.append(Box(type: type, start: at, body: at + header, end: at + size))
            at += size
        }
        return boxes
    }

    /// The first child of `box` named `type`, after descending through `path`.
    package func child(_ type: String, of box: Box, path: [String] = []) -> Box? {
        var current = box
        for name in path + [type] {
            guard let next = children(current.body, current.end)?.first(where: { $0.type == name }) else { return nil }
            current = next
        }
        return current
    }

    /// The sum of the `stts` sample durations (media timescale); nil for a table too large to read.
    package func sampleDuration(_ stts: Box) -> Int64? {
        guard let head = read(stts.body, 8) else { return nil }
        let count = Int(be32(head, 4))
        guard count <= 65536, let table = read(stts.body + 8, count * 8) else { return nil }
        var total: Int64 = 0
        for i in 0..<count { total += Int64(be32(table, i * 8)) * Int64(be32(table, i * 8 + 4)) }
        return total
    }

    /// mvhd/mdhd: creation time, timescale and duration (version 0 or 1).
    package func timeHeader(_ b: Box) -> (created: Int64, timescale: Int64, duration: Int64)? {
        guard let v = read(b.body, 1) else { return nil }
        if v[0] == 1 {
            guard let d = read(b.body + 4, 28) else { return nil }
            return (Int64(be64(d, 0)), Int64(be32(d, 16)), Int64(bitPattern: be64(d, 20)))
        }
        guard let d = read(b.body + 4, 16) else { return nil }
        return (Int64(be32(d, 0)), Int64(be32(d, 8)), Int64(be32(d, 12)))
    }

    /// The one edit in `elst`: its duration (movie timescale; 0 means "all") and where it starts
    /// in the media (media timescale: the encoder's priming). Nil for several edits, an empty edit
    /// (a start offset) or a rate other than 1, which ffprobe handles.
    package func singleEdit(_ elst: Box) -> (duration: Int64, start: Int64)? {
        guard let head = read(elst.body, 8), be32(head, 4) == 1 else { return nil }
        if head[0] == 1 {
            guard let e = read(elst.body + 8, 20), Int64(bitPattern: be64(e, 8)) >= 0, be32(e, 16) == 0x0001_0000 else { return nil }
            return (Int64(bitPattern: be64(e, 0)), Int64(bitPattern: be64(e, 8)))
        }
        guard let e = read(elst.body + 8, 12), Int32(bitPattern: be32(e, 4)) >= 0, be32(e, 8) == 0x0001_0000 else { return nil }
        return (Int64(be32(e, 0)), Int64(Int32(bitPattern: be32(e, 4))))
    }

    /// The audio sample entry's codec, rate and channels, from the codec's own configuration
    /// (esds for AAC, the ALAC cookie) rather than the entry's legacy fields.
    package func sampleEntry(_ e: Box) -> MP4Stream? {
        // SampleEntry (8) + AudioSampleEntry (20); QuickTime's sound description version 1 adds
        // 16 bytes and may wrap the codec's boxes in 'wave'; version 2 is left to ffprobe.
        guard let a = read(e.body, 28) else { return nil }
        let version = Int(a[8]) << 8 | Int(a[9])
        guard version <= 1 else { return nil }
        let inner = Box(type: e.type, start: e.start, body: e.body + 28 + (version == 1 ? 16 : 0), end: e.end)
        func codecBox(_ type: String) -> Box? { child(type, of: inner) ?? child(type, of: inner, path: ["wave"]) }
        switch e.type {
        case "samr": return MP4Stream(codec: "AMR-NB", rate: 8000, channels: 1, kind: .lossy)
        case "sawb": return MP4Stream(codec: "AMR-WB", rate: 16000, channels: 1, kind: .lossy)
        case "alac":
            // The inner 'alac' box: version/flags, then the 24-byte cookie.
            guard let cookie = codecBox("alac"), let c = read(cookie.body + 4, 24) else { return nil }
            let bits = Int(c[5]), channels = Int(c[9]), rate = Int(be32(c, 20))
            guard [16, 20, 24, 32].contains(bits), (1...8).contains(channels), rate > 0 else { return nil }
            return MP4Stream(codec: "ALAC_\(bits)", rate: rate, channels: channels, kind: .integer)
        case "mp4a":
            guard let esds = codecBox("esds"),
                  let body = read(esds.body, Int(min(esds.end - esds.body, 512))),
                  let asc = Self.decoderConfig(body), asc.count >= 2 else { return nil }
            let aot = Int(asc[0] >> 3)
            let index = Int((asc[0] & 0x07) << 1 | asc[1] >> 7)
            let config = Int((asc[1] >> 3) & 0x0F)
            let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
            guard aot == 2, index < rates.count, (1...6).contains(config) else { return nil }
            // A decoder may find SBR in a plain AAC-LC stream and double the rate, unless the config
            // says there is none (sync extension 0x2B7, SBR object type 5, present flag 0, as
            // ffmpeg writes). Without that, only rates too high for SBR are taken here.
            if asc.count == 2 {
                guard rates[index] >= 32000 else { return nil }
            } else {
                guard asc.count >= 5 else { return nil }
                let ext = UInt32(asc[2]) << 16 | UInt32(asc[3]) << 8 | UInt32(asc[4])
                guard ext >> 13 == 0x2B7, (ext >> 8) & 0x1F == 5, (ext >> 7) & 1 == 0 else { return nil }
            }
            return MP4Stream(codec: "AAC", rate: rates[index], channels: config, kind: .lossy)
        default:
            return nil
        }
    }

    /// The AudioSpecificConfig inside an esds body (version/flags, then descriptors), if the
    /// object type is MPEG-4 audio (0x40).
    static package func decoderConfig(_ b: [UInt8]) -> [UInt8]? {
        var i = 4
        func descriptor(_ tag: UInt8) -> Int? {
            guard i < b.count, b[i] == tag else { return nil }
            i += 1
            var length = 0
            for _ in 0..<4 {
                guard i < b.count else { return nil }
                length = length << 7 | Int(b[i] & 0x7F)
                i += 1
                if b[i - 1] & 0x80 == 0 { break }
            }
            return i + length <= b.count ? length : nil
        }
        guard descriptor(0x03) != nil, i + 3 <= b.count else { return nil }
        let flags = b[i + 2]
        i += 3
        if flags & 0x80 != 0 { i += 2 }
        if flags & 0x40 != 0 { guard i < b.count else { return nil }; i += 1 + Int(b[i]) }
        if flags & 0x20 != 0 { i += 2 }
        guard descriptor(0x04) != nil, i + 13 <= b.count, b[i] == 0x40 else { return nil }
        i += 13
        guard let n = descriptor(0x05) else { return nil }
        return Array(b[i..<(i + n)])
    }
}

package func be32(_ b: [UInt8], _ at: Int) -> UInt32 {
    UInt32(b[at]) << 24 | UInt32(b[at + 1]) << 16 | UInt32(b[at + 2]) << 8 | UInt32(b[at + 3])
}

package func be64(_ b: [UInt8], _ at: Int) -> UInt64 { UInt64(be32(b, at)) << 32 | UInt64(be32(b, at + 4)) }
