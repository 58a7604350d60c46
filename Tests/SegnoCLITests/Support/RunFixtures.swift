import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoCore
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

// Fixtures for the `segno run` tests: a workspace with an input folder of generated recordings
// and specs, a child `segno` process that can be signalled at any moment, and views of an
// output tree (bytes, inodes, temporaries) to compare runs.

/// How a child process ended.
struct ChildExit {
    /// The exit code, or the signal number when `signalled`.
    var status: Int32
    /// True when a signal ended the process (it did not exit by itself).
    var signalled: Bool
    var stdout: String
    var stderr: String
    var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
    var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    /// True when the process exited by itself with `code`.
    func exited(_ code: Int32) -> Bool { !signalled && status == code }
}

/// A `segno` child process. Standard output and error go to files (so it may be killed at any
/// moment with nothing to drain); standard input is /dev/null.
final class SegnoChild {
    let process = Process()
    private let outPath: String
    private let errPath: String
    /// Signalled once when the process exits.
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `segno arguments` in `directory`; logs go to `logs` (a folder). `environment` is added
    /// to (and overrides) this process's environment.
    init(_ arguments: [String], in directory: String, logs: String, environment: [String: String] = [:]) throws {
        let token = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        outPath = logs + "/\(token).out"
        errPath = logs + "/\(token).err"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: try CLI.segnoPath())
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardInput = FileHandle.nullDevice
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// What the process has written so far (it may still be running).
    var outputSoFar: (stdout: String, stderr: String) {
        ((try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "", (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    /// Sends `signal` (SIGKILL, SIGTERM, SIGINT) if the process still runs.
    func send(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits for the end; after `timeout` seconds the process is killed and an issue recorded.
    func wait(timeout: Double = 180, sourceLocation: SourceLocation = #_sourceLocation) -> ChildExit {
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            Issue.record("segno \(process.arguments ?? []) still running after \(timeout) s; killed", sourceLocation: sourceLocation)
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
        }
        exited.signal()  // a second `wait` returns at once
        process.waitUntilExit()
        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        return ChildExit(status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal,
                         stdout: out, stderr: err)
    }
}


/// What `lstat` says about one path: enough to tell whether a run rewrote it (a rewrite renames
/// a new file into place, so the inode changes).
struct FileStamp: Equatable, CustomStringConvertible {
    var inode: UInt64
    var mtimeNs: Int64
    var size: Int64
    var description: String { "ino \(inode) mtime \(mtimeNs) size \(size)" }
}

/// A fresh folder with `in/` (recordings), specs and the outputs of runs.
final class RunWorkspace {
    /// The folder (removed with the workspace).
    private let folder: TempDir
    let root: String
    /// Where child processes' logs go.
    let logs: String

    init() throws {
        folder = try TempDir(prefix: "segno-run")
        root = folder.path
        logs = root + "/.logs"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/in", withIntermediateDirectories: true)
    }

    deinit {
        // FIFOs, loops, names that are not UTF-8 and odd modes: restore modes by path first, then
        // `folder` goes and removes the tree.
        _ = try? RunWorkspace.walk(root).forEach { chmod(root + "/" + $0.path, 0o755) }
    }

    subscript(_ rel: String) -> String { root + "/" + rel }

    /// Writes a spec file and returns its path.
    @discardableResult
    func writeSpec(_ yaml: String, name: String = "spec.yaml") throws -> String {
        try yaml.write(toFile: self[name], atomically: true, encoding: .utf8)
        return self[name]
    }

    /// Runs `segno arguments` in the workspace and waits.
    func segno(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 180,
               sourceLocation: SourceLocation = #_sourceLocation) throws -> ChildExit {
        try SegnoChild(arguments, in: root, logs: logs, environment: environment).wait(timeout: timeout, sourceLocation: sourceLocation)
    }

    /// Starts `segno arguments` in the workspace without waiting.
    func start(_ arguments: [String]) throws -> SegnoChild {
        try SegnoChild(arguments, in: root, logs: logs)
    }

    /// Writes `count` short recordings under `in/` (top level and two subfolders): 0.5–3 s,
    /// 8–48 kHz, mono or stereo, 16/24-bit WAV or 16-bit FLAC, each with its own tone and noise.
    /// Returns their paths relative to `in/`, sorted.
    @discardableResult
    func makeRecordings(count: Int, seed: UInt64 = 0x5E6_0, minSeconds: Double = 0.5, maxSeconds: Double = 3) throws -> [String] {
        var rng = SplitMix64(seed: seed)
        let rates = [8000, 11025, 16000, 22050, 32000, 44100, 48000]
        var paths: [String] = []
        for i in 0..<count {
            let rate = rates[i % rates.count]
            let channels = 1 + (i / rates.count) % 2
            let seconds = Double.random(in: minSeconds...maxSeconds, using: &rng)
            let folder = ["", "day 1/", "day 2/nested/"][i % 3]
            let (ext, bits): (String, SampleBits) = [("wav", .b16), ("flac", .b16), ("wav", .b24)][(i / 3) % 3]
            let rel = String(format: "%@memo %03d.%@", folder, i, ext)
            try RunWorkspace.writeTone(to: self["in/" + rel], rate: rate, channels: channels,
                                       frames: Int(seconds * Double(rate)), frequency: 110 + Double(i) * 37, bits: bits, rng: &rng)
            paths.append(rel)
        }
        return paths.sorted()
    }

    /// A tone with a little noise (so FLAC has something to compress), each channel a little different.
    static func writeTone(to path: String, rate: Int = 16000, channels: Int = 1, frames: Int, frequency: Double = 440,
                          bits: SampleBits = .b16, rng: inout SplitMix64) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var x = [Float](repeating: 0, count: frames * channels)
        for f in 0..<frames {
            let t = Double(f) / Double(rate)
            for c in 0..<channels {
                let noise = Double(rng.next() % 2001) / 1000 - 1
                x[f * channels + c] = Float(0.4 * sin(2 * .pi * frequency * (1 + 0.01 * Double(c)) * t) + 0.05 * noise)
            }
        }
        try Fixtures.write(x, channels: channels, rate: rate, to: path, format: OutputFormat(extensionOf: path) ?? .wav, bits: bits,
                           blockFrames: max(1, frames))
    }

    /// Convenience: a tone with a fixed seed.
    static func writeTone(to path: String, rate: Int = 16000, channels: Int = 1, seconds: Double = 0.5, frequency: Double = 440) throws {
        var rng = SplitMix64(seed: 7)
        try writeTone(to: path, rate: rate, channels: channels, frames: Int(seconds * Double(rate)), frequency: frequency, rng: &rng)
    }

    // MARK: looking at trees

    /// Every entry under `dir` (not following links), as paths relative to `dir` with `lstat`
    /// stamps and kinds. Names that are not UTF-8 appear with replacement characters.
    static func walk(_ dir: String) throws -> [(path: String, stamp: FileStamp, kind: mode_t)] {
        var out: [(String, FileStamp, mode_t)] = []
        var stack: [(abs: String, rel: String)] = [(dir, "")]
        while let (abs, rel) = stack.popLast() {
            guard let d = opendir(abs) else { continue }
            defer { closedir(d) }
            let fd = dirfd(d)
            while let e = readdir(d) {
                let nameBytes: [UInt8] = withUnsafeBytes(of: e.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
                if nameBytes == [46] || nameBytes == [46, 46] { continue }
                var cName = nameBytes.map { CChar(bitPattern: $0) } + [0]
                var st = stat()
                guard fstatat(fd, &cName, &st, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
                let name = String(decoding: nameBytes, as: UTF8.self)
                let isUTF8 = String(validating: nameBytes, as: UTF8.self) != nil
                let childRel = rel.isEmpty ? name : rel + "/" + name
                let stamp = FileStamp(inode: UInt64(st.st_ino), mtimeNs: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
                                      size: Int64(st.st_size))
                out.append((childRel, stamp, st.st_mode & S_IFMT))
                if (st.st_mode & S_IFMT) == S_IFDIR && isUTF8 {
                    stack.append((abs + "/" + name, childRel))
                }
            }
        }
        return out.sorted { $0.0 < $1.0 }
    }

    /// Regular files under `dir` (relative paths) with their bytes, leaving out `.segno/`.
    static func outputs(_ dir: String) throws -> [String: Data] {
        var out: [String: Data] = [:]
        for e in try walk(dir) where e.kind == S_IFREG && !e.path.hasPrefix(".segno/") {
            out[e.path] = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + e.path))
        }
        return out
    }

    /// `lstat` stamps of regular files under `dir`, leaving out `.segno/`.
    static func stamps(_ dir: String) throws -> [String: FileStamp] {
        var out: [String: FileStamp] = [:]
        for e in try walk(dir) where e.kind == S_IFREG && !e.path.hasPrefix(".segno/") { out[e.path] = e.stamp }
        return out
    }

    /// Anything under `dir` whose name starts with segno's temporary prefix.
    static func temporaries(_ dir: String) throws -> [String] {
        try walk(dir).map(\.path).filter { ($0 as NSString).lastPathComponent.hasPrefix(OutputFile.tempPrefix) }
    }

    /// The `lstat` stamp of one path, nil when it does not exist.
    static func stamp(_ path: String) -> FileStamp? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return FileStamp(inode: UInt64(st.st_ino), mtimeNs: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
                         size: Int64(st.st_size))
    }

    /// Sets a file's modification time (keeping its inode and size).
    static func setModified(_ path: String, seconds: Int, nanoseconds: Int = 0) {
        var times = [timespec(tv_sec: seconds, tv_nsec: nanoseconds), timespec(tv_sec: seconds, tv_nsec: nanoseconds)]
        _ = utimensat(AT_FDCWD, path, &times, 0)
    }

    /// Overwrites a file's bytes in place with zeros and puts its modification time back, so
    /// size, mtime and inode are as before but nothing can decode it.
    static func spoilInPlace(_ path: String) throws {
        var st = stat()
        guard lstat(path, &st) == 0 else { throw CLITestError("cannot stat \(path)") }
        let fd = open(path, O_WRONLY)
        guard fd >= 0 else { throw CLITestError("cannot open \(path)") }
        let zeros = [UInt8](repeating: 0, count: Int(st.st_size))
        _ = zeros.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        var times = [st.st_atim, st.st_mtim]
        _ = utimensat(AT_FDCWD, path, &times, 0)
    }

    /// Parses one JSON object.
    static func json(_ text: String) throws -> [String: Any] {
        guard let o = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw CLITestError("not a JSON object: \(text)")
        }
        return o
    }

    /// `segno status SPEC --json [--failed]`, parsed.
    func status(_ spec: String = "spec.yaml", failed: Bool = false) throws -> [String: Any] {
        let r = try segno(["status", spec, "--json"] + (failed ? ["--failed"] : []))
        guard r.exited(0) else { throw CLITestError("status exited \(r.status): \(r.stderr)") }
        return try RunWorkspace.json(r.stdout)
    }

    /// A `--report` file, parsed.
    func report(_ rel: String) throws -> [String: Any] {
        try RunWorkspace.json(String(contentsOfFile: self[rel], encoding: .utf8))
    }
}

extension Dictionary where Key == String, Value == Any {
    /// `report["counts"]["done"]` as an Int.
    func int(_ path: String...) -> Int? {
        var v: Any? = self
        for k in path { v = (v as? [String: Any])?[k] }
        return v as? Int
    }
}
