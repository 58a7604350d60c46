import Foundation
import SegnoAudio
import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP

// Phone formats through the ffmpeg program. Every fixture is made here by ffmpeg from a WAV that
// libsndfile writes, so the original PCM (and its frame count) is known exactly; ffmpeg's own
// decode (`ffmpeg -i x -f f32le -`) is the independent reference for the samples.

/// Phone-like files in a fresh folder.
package struct PhoneFixtures {
    package let dir: TempDir
    package init() throws { dir = try TempDir() }

    /// A speech-like test signal (two tones and some noise), quantised to 16 bits so that a
    /// lossless round trip is exact. Interleaved.
    package static func signal(rate: Int, channels: Int, frames: Int) -> [Float] {
        let a = Signal.sine(frequency: 220, rate: rate, frames: frames, channels: channels, amplitude: 0.3)
        let b = Signal.sine(frequency: 1375, rate: rate, frames: frames, channels: channels, amplitude: 0.1, phase: 1)
        let n = Signal.noise(frames: frames, channels: channels, amplitude: 0.05)
        return Signal.quantised(zip(zip(a, b), n).map { $0.0 + $0.1 + $1 }, bits: 16)
    }

    /// Writes `signal` as a 16-bit WAV named `name`; returns its path and samples.
    package func wav(_ name: String = "source.wav", rate: Int, channels: Int, frames: Int) throws -> (path: String, samples: [Float]) {
        let x = Self.signal(rate: rate, channels: channels, frames: frames)
        return (try Fixtures.write(x, channels: channels, rate: rate, to: dir[name], bits: .b16), x)
    }

    /// `ffmpeg -y -i SOURCE ARGS… OUT` (inputs and outputs as `file:` URLs); returns OUT's path.
    @discardableResult
    package func ffmpeg(_ source: String, _ args: [String], to name: String) throws -> String {
        let out = dir[name]
        let r = try Tool.run("ffmpeg", ["-v", "error", "-nostdin", "-y", "-i", "file:" + source] + args + ["file:" + out])
        guard r.status == 0 else { throw FixtureError("ffmpeg \(args) → \(name) failed: \(r.stderrText)") }
        return out
    }

    /// ffmpeg's own decode of `path` to interleaved Float32: the reference.
    package static func reference(_ path: String) throws -> [Float] {
        let r = try Tool.run("ffmpeg", ["-v", "error", "-nostdin", "-i", "file:" + path, "-c:a", "pcm_f32le", "-f", "f32le", "pipe:1"])
        guard r.status == 0 else { throw FixtureError("ffmpeg could not decode \(path): \(r.stderrText)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }
}

/// Reads `decoder` to the end in blocks of `blockFrames`; returns the interleaved samples.
package func decodeAll(_ decoder: any AudioDecoder, blockFrames: Int = 4096) throws -> [Float] {
    var block = AudioBlock(channels: decoder.info.channels, capacity: blockFrames)
    var out: [Float] = []
    while try decoder.read(into: &block, maxFrames: blockFrames) > 0 {
        out.append(contentsOf: block.samples[0..<(block.frames * block.channels)])
    }
    return out
}

/// Opens through the factory (content sniffing, libsndfile first) and decodes everything.
package func factoryDecode(_ path: String, blockFrames: Int = 4096) throws -> (info: SourceInfo, samples: [Float], decoder: any AudioDecoder) {
    let d = try DecoderFactory.open(path: path, tools: .forTests)
    defer { d.close() }
    return (d.info, try decodeAll(d, blockFrames: blockFrames), d)
}
