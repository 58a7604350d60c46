import Foundation
import SegnoCore

/// Opens sources: libsndfile first, the `ffmpeg` program for what libsndfile cannot read
/// (see `DecoderFactory+FFmpeg.swift`).
public enum DecoderFactory {
    /// Opens `path` for streaming decode, or throws an `AudioError` naming the file and the cause.
    /// ffmpeg and ffprobe are looked for on `tools.searchPath`; helpers come from `tools.helpers`.
    public static func open(path: String, tools: AudioTools, damaged: DamagedPolicy = .fail, reference: String? = nil) throws -> any AudioDecoder {
        try open(path: path, searchPath: tools.searchPath, helpers: tools.helpers, damaged: damaged, reference: reference)
    }
}
