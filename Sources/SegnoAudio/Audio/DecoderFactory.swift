import Foundation
import SegnoCore

/// Opens sources: libsndfile first, the `ffmpeg` program for what libsndfile cannot read
/// (see `DecoderFactory+FFmpeg.swift`).
public enum DecoderFactory {
    /// Opens `path` for streaming decode, or throws an `AudioError` naming the file and the cause.
    /// ffmpeg and ffprobe are looked for on this process's `PATH`.
    public static func open(path: String, damaged: DamagedPolicy = .fail, reference: String? = nil) throws -> any AudioDecoder {
        try open(path: path, searchPath: ProcessInfo.processInfo.environment["PATH"], damaged: damaged, reference: reference)
    }
}
