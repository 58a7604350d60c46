import Foundation
import SegnoCore
import SegnoDSP

/// Picks the salvaging decoder for a damaged recording (`damaged: salvage`): PCM in WAV/RF64/AIFF/CAF
/// whose data size runs past the end of the file or was never written, FLAC through libFLAC
/// (resynchronising on the next frame header), MP3 through libmpg123 reading past junk and
/// errors, Ogg Vorbis/Opus and ADTS AAC packet by packet in the `segno-decode` helper
/// (`OggSalvageDecoder`, `ADTSSalvageDecoder`), and an MP4/M4A/3GP without its index through a rebuilt copy (`MP4Repair`, with
/// `reference`'s settings when given) in the temporary folder, removed when the decoder closes.
/// Everything else (and a healthy file) opens the ordinary way.
package enum SalvageOpener {
    /// A salvaging decoder for `path`, or nil to open it the ordinary way. `kind` is what its
    /// first bytes look like. Called once per recording (per pass), before the ordinary open.
    static package func open(path: String, kind: ContentSniffer.Kind, reference: String? = nil, helpers: DecodeHelperPool? = nil,
                     reopen: (String) throws -> any AudioDecoder) throws -> (any AudioDecoder)? {
        switch kind {
        case .mp4, .threeGP:
            guard let layout = MP4Repair.layout(path: path), !layout.hasIndex else { return nil }
            let scratch = NSTemporaryDirectory() + "/segno-repair-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).m4a"
            let outcome: MP4Repair.Outcome
            do { outcome = try MP4Repair.repair(input: path, reference: reference, output: scratch, helpers: helpers ?? DecodeHelperPool(executable: nil)) } catch let e as Interrupted {
                throw e
            } catch {
                throw AudioError.decodeFailed(path: path, detail: "damaged MP4 without its index (moov), and it could not be rebuilt: \(error)")
            }
            var report = SalvageReport(method: "index rebuilt from \(outcome.origin)")
            do {
                let inner = try reopen(scratch)
                let rate = inner.info.sampleRate
                report.add(at: 0, frames: 0, filled: false, cause: .indexRebuilt, outcome.summary(input: path))
                if outcome.tailBytes > 0 {
                    report.add(at: inner.info.frames, frames: Int(outcome.tailSeconds * Double(rate)), filled: false, cause: .cutFrame,
                               "the last \(outcome.tailBytes) bytes of mdat do not decode")
                }
                return RebuiltDecoder(inner, scratch: scratch, report: report, warnings: outcome.warnings)
            } catch {
                unlink(scratch)
                throw error
            }
        case .wav, .rf64, .aiff, .caf:
            guard let layout = PCMLayout.read(path: path), layout.damage != nil else { return nil }
            return try SalvagedPCMDecoder(path: path, layout: layout)
        case .flac:
            return try FLACSalvageDecoder(path: path)
        case .mp3:
            if let bad = FrameScan.mp3TagPastEnd(path: path) { return try openPastBadTag(path: path, bad) }
            do { return try MP3SalvageDecoder(path: path) } catch let e as AudioError {
                guard case .unrecognised = e else { throw e }
                return nil
            }
        case .ogg:
            return try OggSalvageDecoder(path: path, pool: helpers ?? DecodeHelperPool(executable: nil))
        case .adts:
            return try ADTSSalvageDecoder(path: path, pool: helpers ?? DecodeHelperPool(executable: nil))
        default:
            return nil
        }
    }
}

extension SalvageOpener {
    /// An MP3 whose ID3v2 tag declares more bytes than the file holds: the MPEG audio found after
    /// the tag's header is copied to a scratch file (removed when the decoder closes) and read by
    /// libmpg123 from there, since libmpg123 (like ffmpeg and SoX) would skip the declared size.
    static package func openPastBadTag(path: String, _ bad: (declared: Int64, audioAt: Int64)) throws -> any AudioDecoder {
        let scratch = NSTemporaryDirectory() + "/segno-salvage-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).mp3"
        do {
            guard let from = FileNameBytes.reading(path) else { throw AudioError.unreadable(path: path, reason: "cannot open") }
            defer { try? from.close() }
            guard FileManager.default.createFile(atPath: scratch, contents: nil), let to = FileHandle(forWritingAtPath: scratch) else {
                throw AudioError.io(path: scratch, detail: "cannot create a scratch copy")
            }
            defer { try? to.close() }
            try from.seek(toOffset: UInt64(bad.audioAt))
            while let chunk = try from.read(upToCount: 1 << 20), !chunk.isEmpty { try to.write(contentsOf: chunk) }
        } catch let e as AudioError {
            unlink(scratch)
            throw e
        } catch {
            unlink(scratch)
            throw AudioError.io(path: scratch, detail: "writing a scratch copy: \(error)")
        }
        do {
            let inner = try Mpg123Decoder(path: scratch, salvage: true)
            var report = SalvageReport(method: "MPEG audio read from after a damaged ID3v2 tag header")
            report.add(at: 0, frames: 0, filled: false, cause: .badFrame,
                       "the ID3v2 tag declares \(bad.declared) bytes, past the end of the file; MPEG audio found at byte \(bad.audioAt)")
            return RebuiltDecoder(inner, scratch: scratch, report: report)
        } catch {
            unlink(scratch)
            throw error
        }
    }

    /// How salvage (`segno convert --salvage`, `input.damaged: salvage`) would read the damaged file
    /// at `path` and how much it holds, for `segno info` (which prints it after "salvage: "),
    /// from its headers alone; nil when salvage has nothing to offer. Reads a few KiB.
    public static func describe(path: String) -> String? {
        switch ContentSniffer.sniff(path: path) {
        case .wav, .rf64, .aiff, .caf:
            guard let l = PCMLayout.read(path: path), let damage = l.damage else { return nil }
            let holds = String(format: "%d frames (%.3f s)", l.presentFrames, Double(l.presentFrames) / Double(l.sampleRate))
            if damage == .truncated, let declared = l.declaredFrames {
                return String(format: "reads the %@ the file holds of the %.3f s its header declares", holds, Double(declared) / Double(l.sampleRate))
            }
            return "reads \(holds) to the end of the file (its header leaves the size unwritten)"
        case .flac: return "decodes with libFLAC, resynchronising on the next frame header; lost frames become silence"
        case .mp3:
            if let bad = FrameScan.mp3TagPastEnd(path: path) {
                return "the ID3v2 tag declares \(bad.declared) bytes, past the end of the file: reads the MPEG audio found at byte \(bad.audioAt)"
            }
            return "reads past junk and errors with libmpg123; lost frames become silence"
        case .ogg:
            let holds = OggSalvageDecoder.extent(path: path).map { String(format: "; its last readable %@ page ends at %.3f s", $0.codec, $0.seconds) } ?? ""
            return "reads the Ogg pages that pass their checksum and places each by its granule position; lost pages become silence" + holds
        case .adts: return "resynchronises on the next consistent ADTS frame header; lost frames become silence"
        case .mp4, .threeGP:
            guard let l = MP4Repair.layout(path: path), !l.hasIndex else { return nil }
            return "no index (moov): `segno repair` (or segno convert --salvage) rebuilds it from the \(l.dataEnd - l.dataStart) bytes of audio in mdat; their --reference gives a healthy recording's settings"
        default: return nil
        }
    }
}

/// A decoder over a rebuilt copy of a damaged MP4 that removes the copy when closed and says
/// what salvage did.
final package class RebuiltDecoder: AudioDecoder {
    package let inner: any AudioDecoder
    package let scratch: String
    private var report: SalvageReport
    /// What the rebuild wants the user to check (a guessed rate, a reference that does not match).
    private let warnings: [String]

    package init(_ inner: any AudioDecoder, scratch: String, report: SalvageReport, warnings: [String] = []) {
        self.inner = inner
        self.scratch = scratch
        self.report = report
        self.warnings = warnings
    }

    package var info: SourceInfo { inner.info }
    package var notes: [String] { warnings + inner.notes }
    /// Its own report, with what the inner decoder salvaged after it.
    package var salvage: SalvageReport? {
        guard let more = inner.salvage else { return report.ifSalvaged }
        var r = report
        r.losses += more.losses
        r.declaredFrames = r.declaredFrames ?? more.declaredFrames
        return r.ifSalvaged
    }

    package func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        let n = try inner.read(into: &block, maxFrames: maxFrames)
        report.framesYielded += n
        return n
    }

    package func close() {
        inner.close()
        unlink(scratch)
    }

    deinit { unlink(scratch) }
}
