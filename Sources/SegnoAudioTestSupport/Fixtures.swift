import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState
import SegnoTestSupport

// Test fixtures: signals with known content and length, written by libsndfile itself (through
// SegnoCore's `SndFileEncoder`), in a fresh temporary folder per test. sox is used only as an
// independent decoder and for the one format segno does not write (μ-law).

/// A fixture could not be made (tool missing, write failed).
struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

enum Fixtures {
    /// Writes `samples` (interleaved) with libsndfile through `SndFileEncoder`, in blocks of
    /// `blockFrames`, and returns `path`.
    @discardableResult
    static func write(_ samples: [Float], channels: Int = 1, rate: Int = 44100, to path: String,
                      format: OutputFormat? = nil, bits: SampleBits? = .b16, quality: Double? = nil,
                      blockFrames: Int = 4096) throws -> String {
        guard let format = format ?? OutputFormat(extensionOf: path) else { throw FixtureError("no format for \(path)") }
        let enc = try SndFileEncoder(path: path, format: format, bits: format.isLossy ? nil : bits,
                                     quality: quality, stream: AudioFormat(sampleRate: rate, channels: channels))
        let frames = samples.count / channels
        var start = 0
        while start < frames {
            let n = min(blockFrames, frames - start)
            try enc.write(AudioBlock(interleaved: Array(samples[(start * channels)..<((start + n) * channels)]), channels: channels))
            start += n
        }
        try enc.finish()
        return path
    }

    /// Decodes the whole file with `SndFileDecoder` in blocks of `blockFrames`.
    static func decode(_ path: String, blockFrames: Int = 4096) throws -> (info: SourceInfo, samples: [Float]) {
        let d = try SndFileDecoder(path: path)
        defer { d.close() }
        var block = AudioBlock(channels: d.info.channels, capacity: blockFrames)
        var out: [Float] = []
        out.reserveCapacity(max(0, d.info.frames) * d.info.channels)
        while try d.read(into: &block, maxFrames: blockFrames) > 0 {
            out.append(contentsOf: block.samples[0..<(block.frames * block.channels)])
        }
        return (d.info, out)
    }

    /// Writes raw bytes to `path`.
    @discardableResult
    static func writeBytes(_ bytes: [UInt8], to path: String) throws -> String {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The bytes of a file.
    static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Copies `source` to `path` keeping only its first `count` bytes.
    @discardableResult
    static func truncatedCopy(of source: String, bytes count: Int, to path: String) throws -> String {
        try writeBytes(Array(bytes(source).prefix(count)), to: path)
    }

    /// Byte offset of the first chunk `id` in a RIFF/RF64 file (the id itself), or nil.
    static func chunkOffset(_ id: String, in bytes: [UInt8]) -> Int? {
        let tag = Array(id.utf8)
        var i = 12
        while i + 8 <= bytes.count {
            if Array(bytes[i..<(i + 4)]) == tag { return i }
            let size = Int(bytes[i + 4]) | Int(bytes[i + 5]) << 8 | Int(bytes[i + 6]) << 16 | Int(bytes[i + 7]) << 24
            i += 8 + size + (size & 1)
        }
        return nil
    }

    /// Converts a file with sox (`sox IN ARGS... OUT`), e.g. to make μ-law WAVs.
    static func sox(_ arguments: [String]) throws {
        let r = try Tool.run("sox", arguments)
        guard r.status == 0 else { throw FixtureError("sox \(arguments.joined(separator: " ")) failed: \(r.stderrText)") }
    }

    /// Decodes `path` with sox into native-endian Float32, the independent reference decoder.
    static func soxDecode(_ path: String) throws -> [Float] {
        let r = try Tool.run("sox", [path, "-t", "f32", "-"])
        guard r.status == 0 else { throw FixtureError("sox could not decode \(path): \(r.stderrText)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }
}

/// Runs external programs (sox, ffmpeg) found on PATH.
enum Tool {
    struct Result {
        var status: Int32
        var stdout: Data
        var stderr: Data
        var stderrText: String { String(decoding: stderr, as: UTF8.self) }
        var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// The absolute path of `name` on PATH, or nil.
    static func find(_ name: String) -> String? {
        let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for d in dirs {
            let p = "\(d)/\(name)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// Runs `name` with `arguments`, collecting its output. Throws when the tool is not installed,
    /// with the command that installs it (CI installs sox and ffmpeg).
    static func run(_ name: String, _ arguments: [String]) throws -> Result {
        guard let exe = find(name) else {
            throw FixtureError("\(name) is not installed; the tests use it as an independent reference (apt-get install \(name))")
        }
        let r = try ProcessRunner.run(exe, arguments)
        return Result(status: r.status, stdout: r.stdoutData, stderr: r.stderrData)
    }
}
