import Foundation
import SegnoAudio
import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP

// Test fixtures: signals with known content and length, written by libsndfile itself (through
// SegnoCore's `SndFileEncoder`), in a fresh temporary folder per test. sox is used only as an
// independent decoder and for the one format segno does not write (μ-law).

/// A fixture could not be made (tool missing, write failed).
package struct FixtureError: Error, CustomStringConvertible {
    package let description: String
    package init(_ d: String) { description = d }
}

package enum Fixtures {
    /// Writes `samples` (interleaved) with libsndfile through `SndFileEncoder`, in blocks of
    /// `blockFrames`, and returns `path`.
    @discardableResult
    package static func write(_ samples: [Float], channels: Int = 1, rate: Int = 44100, to path: String,
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

    /// Writes a sine of `frequency` Hz, amplitude 0.5, the same on every channel, in one block
    /// (the sine files of the CLI and run tests), and returns `path`.
    @discardableResult
    package static func writeSine(to path: String, frequency: Double = 440, rate: Int = 44100, frames: Int,
                                  channels: Int = 1, bits: SampleBits = .b16) throws -> String {
        var x = [Float](repeating: 0, count: frames * channels)
        for f in 0..<frames {
            let v = Float(0.5 * sin(2 * Double.pi * frequency * Double(f) / Double(rate)))
            for c in 0..<channels { x[f * channels + c] = v }
        }
        return try write(x, channels: channels, rate: rate, to: path, bits: bits, blockFrames: max(1, frames))
    }

    /// Decodes the whole file with `SndFileDecoder` in blocks of `blockFrames`.
    package static func decode(_ path: String, blockFrames: Int = 4096) throws -> (info: SourceInfo, samples: [Float]) {
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
    package static func writeBytes(_ bytes: [UInt8], to path: String) throws -> String {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The bytes of a file.
    package static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Copies `source` to `path` keeping only its first `count` bytes.
    @discardableResult
    package static func truncatedCopy(of source: String, bytes count: Int, to path: String) throws -> String {
        try writeBytes(Array(bytes(source).prefix(count)), to: path)
    }

    /// Byte offset of the first chunk `id` in a RIFF/RF64 file (the id itself), or nil.
    package static func chunkOffset(_ id: String, in bytes: [UInt8]) -> Int? {
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
    package static func sox(_ arguments: [String]) throws {
        let r = try Tool.run("sox", arguments)
        guard r.status == 0 else { throw FixtureError("sox \(arguments.joined(separator: " ")) failed: \(r.stderrText)") }
    }

    /// Decodes `path` with sox into native-endian Float32, the independent reference decoder.
    package static func soxDecode(_ path: String) throws -> [Float] {
        let r = try Tool.run("sox", [path, "-t", "f32", "-"])
        guard r.status == 0 else { throw FixtureError("sox could not decode \(path): \(r.stderrText)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }
}

/// Runs external programs (sox, ffmpeg) found on PATH.
package enum Tool {
    package struct Result {
        package var status: Int32
        package var stdout: Data
        package var stderr: Data
        package var stderrText: String { String(decoding: stderr, as: UTF8.self) }
        package var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// The absolute path of `name` on PATH, or nil.
    package static func find(_ name: String) -> String? { ProcessRunner.find(name) }

    /// Runs `name` with `arguments`, collecting its output. Throws when the tool is not installed,
    /// with the command that installs it (CI installs sox and ffmpeg).
    package static func run(_ name: String, _ arguments: [String]) throws -> Result {
        guard let exe = find(name) else {
            throw FixtureError("\(name) is not installed; the tests use it as an independent reference (apt-get install \(name))")
        }
        let r = try ProcessRunner.run(exe, arguments)
        return Result(status: r.status, stdout: r.stdoutData, stderr: r.stderrData)
    }
}
