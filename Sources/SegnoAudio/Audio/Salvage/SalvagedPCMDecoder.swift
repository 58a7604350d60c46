import Foundation
import SegnoCore
import SegnoDSP

/// Decodes a WAV/RF64/AIFF/CAF file whose data size runs past the end of the file or was never
/// written: every whole frame from the first sample to the end of the file, through libsndfile
/// reading the samples headerless from their offset (so each sample converts exactly as in an
/// ordinary decode). A cut last frame (part of its channels) is dropped and reported.
/// Opened by `DecoderFactory` when salvaging; one per recording, owned by one worker.
final package class SalvagedPCMDecoder: Int16Decoding {
    package let info: SourceInfo
    private let inner: SndFileDecoder
    private var remaining: Int
    private var report: SalvageReport

    package var readsExactInt16: Bool { inner.readsExactInt16 }
    package var salvage: SalvageReport? { report.ifSalvaged }

    /// Opens `path` as `layout` describes it (`layout.damage` is not nil). Throws `AudioError`
    /// when libsndfile cannot read the samples. Called once per recording.
    package init(path: String, layout: PCMLayout) throws {
        inner = try SndFileDecoder(path: path, raw: .init(layout: layout), rawOffset: layout.dataOffset)
        remaining = layout.presentFrames
        info = SourceInfo(container: layout.container, codec: layout.codec, sampleRate: layout.sampleRate,
                          channels: layout.channels, frames: layout.presentFrames, sampleKind: inner.info.sampleKind)
        let cause = layout.damage ?? .sizeUnknown
        report = SalvageReport(method: "read to the end of the file", declaredFrames: layout.declaredFrames)
        report.framesYielded = layout.presentFrames
        let partial = Int(layout.presentBytes % Int64(layout.bytesPerFrame))
        switch cause {
        case .truncated:
            let declared = layout.declaredFrames ?? layout.presentFrames
            report.add(at: layout.presentFrames, frames: declared - layout.presentFrames, filled: false, cause: .truncated,
                       "the header declares \(layout.declaredBytes ?? 0) bytes of audio, the file holds \(layout.presentBytes)")
        default:
            report.add(at: layout.presentFrames, frames: 0, filled: false, cause: .sizeUnknown,
                       "the header leaves the size of the audio unwritten; \(layout.presentBytes) bytes follow it")
        }
        if partial > 0 {
            report.add(at: layout.presentFrames, frames: 1, filled: false, cause: .cutFrame,
                       "the last frame is cut: \(partial) of its \(layout.bytesPerFrame) bytes")
        }
    }

    package func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        guard remaining > 0 else {
            block.reset(channels: info.channels, capacity: maxFrames)
            block.frames = 0
            return 0
        }
        let n = try inner.read(into: &block, maxFrames: min(maxFrames, remaining))
        remaining = n == 0 ? 0 : remaining - n
        return n
    }

    package func readInt16(into buffer: UnsafeMutableBufferPointer<Int16>, maxFrames: Int) throws -> Int {
        guard remaining > 0 else { return 0 }
        let n = try inner.readInt16(into: buffer, maxFrames: min(maxFrames, remaining))
        remaining = n == 0 ? 0 : remaining - n
        return n
    }

    package func close() { inner.close() }
}
