import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

// Test fixtures: signals with known content and length, written by libsndfile itself (through
// SegnoCore's `SndFileEncoder`), in a fresh temporary folder per test. sox is used only as an
// independent decoder and for the one format segno does not write (μ-law).

/// A fresh folder under the system temp dir, removed when the value goes away.
/// Each test suite instance (one per test in Swift Testing) makes its own.
final class TempDir {
    /// The folder, absolute, without a trailing slash.
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("segno-test-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw FixtureError("mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        path = String(cString: made)
    }

    deinit {
        // Restore permissions a test may have removed, so the folder can be deleted.
        if let e = FileManager.default.enumerator(atPath: path) {
            while let rel = e.nextObject() as? String { chmod(self[rel], 0o755) }
        }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// `name` inside the folder.
    subscript(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    /// File names in the folder (including hidden ones), sorted.
    func contents() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }
}

/// A fixture could not be made (tool missing, write failed).
struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// Deterministic test signals, interleaved Float32.
enum Signal {
    /// A sine per channel: channel `c` at `frequency × (c + 1)` Hz, amplitude `amplitude` (linear).
    static func sine(frequency: Double = 440, rate: Int = 44100, frames: Int, channels: Int = 1,
                     amplitude: Double = 0.5, phase: Double = 0) -> [Float] {
        var out = [Float](repeating: 0, count: frames * channels)
        for f in 0..<frames {
            for c in 0..<channels {
                let w = 2 * Double.pi * frequency * Double(c + 1) / Double(rate)
                out[f * channels + c] = Float(amplitude * sin(w * Double(f) + phase))
            }
        }
        return out
    }

    /// Uniform white noise in [−amplitude, amplitude) from a fixed seed (xorshift), so runs repeat.
    static func noise(frames: Int, channels: Int = 1, amplitude: Double = 0.5, seed: UInt64 = 0x5E6_70) -> [Float] {
        var s = seed | 1
        var out = [Float](repeating: 0, count: frames * channels)
        for i in out.indices {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17
            let u = Double(s >> 11) / Double(1 << 53)   // [0, 1)
            out[i] = Float((2 * u - 1) * amplitude)
        }
        return out
    }

    /// Rounds every sample to the grid of a `bits`-bit integer PCM file (x = k / 2^(bits−1)),
    /// so writing and reading back is exact.
    static func quantised(_ x: [Float], bits: Int) -> [Float] {
        let full = Float(1 << (bits - 1))
        return x.map { max(-full, min(full - 1, ($0 * full).rounded())) / full }
    }
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
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = arguments
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        // Read both pipes to the end before waiting, so a full pipe cannot block the child.
        let errData = LockedData()
        let errReader = Thread { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
        errReader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        while !errData.isSet { usleep(1000) }
        return Result(status: p.terminationStatus, stdout: outData, stderr: errData.value)
    }
}

/// A Data written by one thread and read by another.
final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data: Data?
    func set(_ d: Data) { lock.lock(); data = d; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return data != nil }
    var value: Data { lock.lock(); defer { lock.unlock() }; return data ?? Data() }
}

// MARK: - In-memory chain ends

/// A decoder that yields a fixed interleaved signal (for stage and chain tests without files).
/// Optionally throws after `failAfter` frames, like a file damaged in the middle.
final class MemoryDecoder: AudioDecoder {
    let info: SourceInfo
    let samples: [Float]
    let failAfter: Int?
    private var position = 0
    private(set) var closed = false

    init(_ samples: [Float], channels: Int, rate: Int, failAfter: Int? = nil) {
        self.samples = samples
        self.failAfter = failAfter
        info = SourceInfo(container: "memory", codec: "FLOAT", sampleRate: rate, channels: channels,
                          frames: samples.count / channels, sampleKind: .float)
    }

    func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        let ch = info.channels
        if let failAfter, position >= failAfter {
            throw AudioError.decodeFailed(path: "memory", detail: "failure injected after \(position) frames")
        }
        var n = min(maxFrames, info.frames - position)
        if let failAfter { n = min(n, failAfter - position) }
        block.reset(channels: ch, capacity: maxFrames)
        if n > 0 {
            for i in 0..<(n * ch) { block.samples[i] = samples[position * ch + i] }
        }
        block.frames = max(0, n)
        position += block.frames
        return block.frames
    }

    func close() { closed = true }
}

/// A tap that records what it sees and how it was driven.
final class CollectTap: Tap {
    let name: String
    private(set) var format: AudioFormat?
    private(set) var samples: [Float] = []
    private(set) var blocks = 0
    private(set) var finished = false
    private(set) var abandoned = false
    /// When set, `start` throws (a tap whose output cannot be created).
    var failOnStart = false

    init(name: String = "collect") { self.name = name }

    func start(_ format: AudioFormat) throws {
        if failOnStart { throw AudioError.unsupportedOutput(path: name, detail: "refused to start") }
        self.format = format
    }
    func observe(_ block: AudioBlock) throws {
        precondition(block.frames * block.channels <= block.samples.count, "block claims more samples than it holds")
        samples.append(contentsOf: block.samples[0..<(block.frames * block.channels)])
        blocks += 1
    }
    func finish() throws -> [ProducedFile] { finished = true; return [ProducedFile(stage: name, path: "/dev/null/\(name)")] }
    func abandon() { abandoned = true }

    /// Frames seen, in the tap's format.
    var frames: Int { samples.count / max(1, format?.channels ?? 1) }
}

/// Runs `samples` through `configs` with a `StageChain` reading `blockFrames` at a time and
/// returns what a tap at the end of the chain saw.
func runChain(_ samples: [Float], channels: Int, rate: Int, _ configs: [any TransformConfig],
              blockFrames: Int = 4096) throws -> CollectTap {
    let tap = CollectTap()
    var elements: [ChainElement] = try configs.map { .transform(try $0.makeTransform()) }
    elements.append(.tap(tap))
    _ = try StageChain(elements: elements, blockFrames: blockFrames)
        .run(decoder: MemoryDecoder(samples, channels: channels, rate: rate))
    return tap
}

/// Largest absolute difference between two equally long sample arrays.
func maxAbsDifference(_ a: [Float], _ b: [Float]) -> Float {
    precondition(a.count == b.count)
    var m: Float = 0
    for i in a.indices { m = max(m, abs(a[i] - b[i])) }
    return m
}

/// Samples of channel `c` of an interleaved array.
func channel(_ c: Int, of x: [Float], channels: Int) -> [Float] {
    stride(from: c, to: x.count, by: channels).map { x[$0] }
}
