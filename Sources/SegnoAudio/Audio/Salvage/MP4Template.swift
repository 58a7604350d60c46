import Foundation
import SegnoCore

/// What rebuilds a lost MP4 index besides the audio itself: the codec's configuration, the media
/// timescale, the frames' duration and the encoder's priming — taken from a healthy recording of
/// the same recorder (`from(reference:)`), or a guess (`AACRateChoice`). Made once per repair.
package struct MP4Template {
    package enum Codec: UInt32 {
        case aac = 1
        case alac = 2
    }

    package var codec: Codec
    /// Hz and channels of the decoded stream.
    package var rate: Int
    package var channels: Int
    /// The whole `stsd` box the index gets (the reference's own, or one built for a guess).
    package var stsd: [UInt8]
    /// What the decoder is opened with: the AudioSpecificConfig, or ALAC's 36-byte `alac` box.
    package var extradata: [UInt8]
    /// Media timescale (ticks per second) and ticks per frame.
    package var timescale: UInt32
    package var frameTicks: UInt32
    /// The edit list's media time (the encoder's priming, in media ticks); nil without one.
    package var primingTicks: Int64?
    /// The `ftyp` box of the reference (nil for a guess).
    package var ftyp: [UInt8]?
    /// For people: "reference iphone.m4a", "AAC-LC 48000 Hz mono (guessed)".
    package var origin: String
    /// What the user should check about these settings (a rate guessed, a reference that does
    /// not match the stream), one line each.
    package var warnings: [String] = []

    /// Reads `path`'s index: its one audio track's sample description, timescale, frame
    /// duration and edit. Throws `RepairError.reference` naming what is missing.
    static package func from(reference path: String) throws -> MP4Template {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw RepairError.reference(path, "cannot open: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw RepairError.reference(path, "cannot read") }
        let file = BoxReader(fd: fd, size: Int64(st.st_size))
        guard let top = file.children(0, file.size, upToACutBox: true), let moov = top.first(where: { $0.type == "moov" }),
              let moovBoxes = file.children(moov.body, moov.end) else {
            throw RepairError.reference(path, "has no index (moov) either: give a healthy recording from the same recorder")
        }
        let ftyp = top.first { $0.type == "ftyp" }.flatMap { file.read($0.start, Int(min($0.end - $0.start, 4096))) }
        for trak in moovBoxes where trak.type == "trak" {
            guard let mdia = file.child("mdia", of: trak), let hdlr = file.child("hdlr", of: mdia),
                  let h = file.read(hdlr.body + 8, 4), String(decoding: h, as: UTF8.self) == "soun",
                  let mdhd = file.child("mdhd", of: mdia), let media = file.timeHeader(mdhd), media.timescale > 0,
                  let stsd = file.child("stsd", of: mdia, path: ["minf", "stbl"]), stsd.end - stsd.start < 65536,
                  let stsdBytes = file.read(stsd.start, Int(stsd.end - stsd.start)),
                  let entry = file.children(stsd.body + 8, stsd.end)?.first, let stream = file.sampleEntry(entry),
                  let stts = file.child("stts", of: mdia, path: ["minf", "stbl"]), let sttsHead = file.read(stts.body, 16) else { continue }
            var priming: Int64?
            if let edts = file.child("edts", of: trak), let elst = file.child("elst", of: edts), let edit = file.singleEdit(elst), edit.start > 0 {
                priming = edit.start
            }
            let delta = be32(sttsHead, 12)
            let name = (path as NSString).lastPathComponent
            switch entry.type {
            case "mp4a":
                guard let esds = file.child("esds", of: Box(type: entry.type, start: entry.start, body: entry.body + 28, end: entry.end)),
                      let body = file.read(esds.body, Int(min(esds.end - esds.body, 512))), let asc = BoxReader.decoderConfig(body) else { continue }
                return MP4Template(codec: .aac, rate: stream.rate, channels: stream.channels, stsd: stsdBytes, extradata: asc,
                                   timescale: UInt32(media.timescale), frameTicks: delta > 0 ? delta : 1024, primingTicks: priming,
                                   ftyp: ftyp, origin: "reference \(name)")
            case "alac":
                guard let cookie = file.child("alac", of: Box(type: entry.type, start: entry.start, body: entry.body + 28, end: entry.end)),
                      cookie.end - cookie.start == 36, let box = file.read(cookie.start, 36) else { continue }
                let frameLength = be32(box, 12)
                return MP4Template(codec: .alac, rate: stream.rate, channels: stream.channels, stsd: stsdBytes, extradata: box,
                                   timescale: UInt32(media.timescale), frameTicks: frameLength > 0 ? frameLength : delta,
                                   primingTicks: priming, ftyp: ftyp, origin: "reference \(name)")
            default:
                throw RepairError.reference(path, "holds \(stream.codec); segno rebuilds AAC and ALAC indexes")
            }
        }
        throw RepairError.reference(path, "has no AAC or ALAC audio track segno can read")
    }


    /// An AAC-LC template built for `rate` and `channels`, without an edit list.
    static package func aacGuess(rate: Int, channels: Int) -> MP4Template {
        let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        let index = rates.firstIndex(of: rate) ?? 3
        // AudioSpecificConfig: object type 2 (LC, 5 bits), frequency index (4), channels (4), 3 zero bits.
        let asc: [UInt8] = [UInt8(2 << 3 | index >> 1), UInt8((index & 1) << 7 | channels << 3)]
        let entry = MP4Boxes.mp4aEntry(rate: rate, channels: channels, asc: asc)
        let stsd = MP4Boxes.full("stsd", [0, 0, 0, 1] + entry)
        let layout = channels == 1 ? "mono" : channels == 2 ? "stereo" : "\(channels) channels"
        return MP4Template(codec: .aac, rate: rate, channels: channels, stsd: stsd, extradata: asc, timescale: UInt32(rate),
                           frameTicks: 1024, primingTicks: nil, ftyp: nil, origin: "AAC-LC \(rate) Hz \(layout) (guessed)")
    }
}

/// Why a repair could not be made; every message names the file.
public enum RepairError: Error, CustomStringConvertible, Sendable {
    /// The damaged file cannot be read, or holds nothing segno can rebuild.
    case damaged(String, String)
    /// The reference recording cannot serve.
    case reference(String, String)
    /// Writing the repaired file failed or was refused.
    case output(String, String)

    public var description: String {
        switch self {
        case .damaged(let p, let d): return "\(AudioError.quoted(p)): \(d)"
        case .reference(let p, let d): return "reference \(AudioError.quoted(p)): \(d)"
        case .output(let p, let d): return "\(AudioError.quoted(p)): \(d)"
        }
    }
}
