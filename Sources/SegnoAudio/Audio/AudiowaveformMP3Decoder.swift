import Foundation
import SegnoCore
import SegnoDSP

/// MP3 decoded as audiowaveform 1.10.3 decodes it: by libmad in the `segno-decode` helper (libmad
/// is GPL-2, so never in segno's process; see `MadDecode.swift` there for what is skipped and how
/// samples become 16-bit). For the audiowaveform form of `segno waveform` only, so its data,
/// pictures and WAV conversions of MP3 are audiowaveform's own; everything else decodes MP3 with
/// libmpg123 (`Mpg123Decoder`). The samples are exact 16-bit values (s / 32768).
public final class AudiowaveformMP3Decoder: AudioDecoder {
    public let info: SourceInfo
    private let path: String
    private let helpers: DecodeHelperPool
    private var stream: HelperStream?
    private var ended = false

    /// The libmad decoder when a helper is there, else segno's usual decoder for `path`.
    /// Called once per recording, by the audiowaveform form of `segno waveform`.
    public static func open(path: String, tools: AudioTools) throws -> any AudioDecoder {
        if let d = try AudiowaveformMP3Decoder(path: path, helpers: tools.helpers) { return d }
        return try DecoderFactory.open(path: path, tools: tools)
    }

    /// Learns the rate and channels from libmpg123, then counts libmad's frames with one pass
    /// (audiowaveform's `-z auto` measures the same way); nil without a usable helper.
    package init?(path: String, helpers: DecodeHelperPool) throws {
        let probe = try Mpg123Decoder(path: path)
        let rate = probe.info.sampleRate, channels = probe.info.channels
        probe.close()
        self.path = path
        self.helpers = helpers
        guard let counting = helpers.open(path: path, rate: rate, channels: channels, type: .openMad) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var bytes = 0
        while true {
            let n = try buffer.withUnsafeMutableBytes { try counting.read(into: $0) }
            if n == 0 { break }
            bytes += n
        }
        let outcome = counting.result
        counting.close()
        switch outcome {
        case .ended?: break
        case .failed(let reason)?: throw AudioError.decodeFailed(path: path, detail: "libmad: \(reason)")
        case .died(let how, let stderr)?: throw AudioError.decodeFailed(path: path, detail: "segno-decode \(how): \(stderr)")
        case nil: break
        }
        info = SourceInfo(container: probe.info.container, codec: probe.info.codec, sampleRate: rate, channels: channels,
                          frames: bytes / (4 * channels), sampleKind: .integer)
    }

    /// Fills `block` with up to `maxFrames` frames; 0 at the end. Called once per block, one thread.
    public func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        let ch = info.channels
        block.reset(channels: ch, capacity: maxFrames)
        block.frames = 0
        if ended { return 0 }
        if stream == nil {
            guard let s = helpers.open(path: path, rate: info.sampleRate, channels: ch, type: .openMad) else {
                throw AudioError.decodeFailed(path: path, detail: "the segno-decode helper stopped being usable")
            }
            stream = s
        }
        guard let stream else { return 0 }
        let wanted = maxFrames * ch * 4
        var have = 0
        try block.samples.withUnsafeMutableBytes { raw in
            while have < wanted {
                let n = try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[have..<wanted]))
                if n == 0 { break }
                have += n
            }
        }
        if have < wanted {
            ended = true
            switch stream.result {
            case .failed(let reason)?: throw AudioError.decodeFailed(path: path, detail: "libmad: \(reason)")
            case .died(let how, let stderr)?: throw AudioError.decodeFailed(path: path, detail: "segno-decode \(how): \(stderr)")
            default: break
            }
        }
        block.frames = have / (4 * ch)
        return block.frames
    }

    /// Gives the helper back (or kills it mid-file). Safe to call twice.
    public func close() {
        stream?.close()
        stream = nil
        ended = true
    }

    deinit { close() }
}
