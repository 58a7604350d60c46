import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState
import SegnoTestSupport

/// The CLI tests' name for what their support could not make or find.
typealias CLITestError = TestSupportError

enum Audio {
    /// Writes a sine (each channel the same, amplitude 0.5) with libsndfile through SegnoCore.
    @discardableResult
    static func writeSine(to path: String, frequency: Double = 440, rate: Int = 44100, frames: Int,
                          channels: Int = 1, bits: SampleBits = .b16) throws -> String {
        let format = OutputFormat(extensionOf: path)!
        let enc = try SndFileEncoder(path: path, format: format, bits: bits, quality: nil,
                                     stream: AudioFormat(sampleRate: rate, channels: channels))
        var x = [Float](repeating: 0, count: frames * channels)
        for f in 0..<frames {
            let v = Float(0.5 * sin(2 * Double.pi * frequency * Double(f) / Double(rate)))
            for c in 0..<channels { x[f * channels + c] = v }
        }
        try enc.write(AudioBlock(interleaved: x, channels: channels))
        try enc.finish()
        return path
    }

    /// Standard output of `tool` (from PATH) run with `arguments`, stderr discarded; throws when
    /// the tool is missing or fails (`what` names the job in the message).
    static func output(of tool: String, _ arguments: [String], what: String) throws -> Data {
        guard let exe = CLI.find(tool) else { throw CLITestError("\(tool) is not installed (apt-get install \(tool))") }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CLITestError("\(tool) could not \(what)") }
        return data
    }

    /// Decodes with sox to native Float32 (the independent reference decoder).
    static func soxSamples(_ path: String) throws -> [Float] {
        let data = try output(of: "sox", [path, "-t", "f32", "-"], what: "decode \(path)")
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }
}
