import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

/// A fresh folder under the system temp dir, removed when the value goes away.
final class TempDir {
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("segno-cli-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw CLITestError("mkdtemp failed: \(String(cString: strerror(errno)))") }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    subscript(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    func contents() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }
}

struct CLITestError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// What a child process did.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
    var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
}

/// A Data written by one thread and read by another.
final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data: Data?
    func set(_ d: Data) { lock.lock(); data = d; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return data != nil }
    var value: Data { lock.lock(); defer { lock.unlock() }; return data ?? Data() }
}

enum CLI {
    /// The `segno` executable built beside the test bundle. `SEGNO_BIN` overrides the search.
    static func segnoPath() throws -> String {
        let env = ProcessInfo.processInfo.environment
        if let p = env["SEGNO_BIN"], !p.isEmpty { return p }
        var starts: [URL] = [URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()]
        if let e = Bundle.main.executableURL { starts.append(e) }
        starts.append(Bundle.main.bundleURL)
        if let arg0 = CommandLine.arguments.first { starts.append(URL(fileURLWithPath: arg0)) }
        for b in Bundle.allBundles where b.bundlePath.hasSuffix(".xctest") { starts.append(b.bundleURL) }
        // The test executable (Linux) or bundle (macOS) lives in .build/<triple>/debug/, beside segno.
        for start in starts {
            var dir = start.deletingLastPathComponent()
            for _ in 0..<4 {
                let candidate = dir.appendingPathComponent("segno").path
                var isDir: ObjCBool = false
                if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDir), !isDir.boolValue,
                   FileManager.default.isExecutableFile(atPath: candidate) {
                    return candidate
                }
                dir = dir.deletingLastPathComponent()
            }
        }
        let cwd = FileManager.default.currentDirectoryPath
        for c in [".build/debug/segno", ".build/release/segno"] {
            let p = (cwd as NSString).appendingPathComponent(c)
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        throw CLITestError("segno executable not found next to the tests (\(starts.map(\.path))); run `swift build` first or set SEGNO_BIN")
    }

    /// Runs `segno` with `arguments`.
    static func segno(_ arguments: [String]) throws -> ProcessResult {
        try run(try segnoPath(), arguments)
    }

    /// The absolute path of `name` on PATH, or nil.
    static func find(_ name: String) -> String? {
        for d in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let p = "\(d)/\(name)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// Runs a tool from PATH (sox, setpriv); throws with an install hint when it is missing.
    static func tool(_ name: String, _ arguments: [String]) throws -> ProcessResult {
        guard let exe = find(name) else { throw CLITestError("\(name) is not installed (apt-get install \(name))") }
        return try run(exe, arguments)
    }

    /// Runs `executable`, collecting stdout and stderr; stdin is /dev/null. `environment` is
    /// added to (and overrides) this process's environment.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        if !environment.isEmpty {
            p.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let errData = LockedData()
        let reader = Thread { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
        reader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        while !errData.isSet { usleep(1000) }
        return ProcessResult(status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                             stderr: String(decoding: errData.value, as: UTF8.self))
    }
}

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
