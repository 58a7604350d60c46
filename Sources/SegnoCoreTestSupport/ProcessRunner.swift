import Dispatch
import Foundation

/// What a child process did: its exit status and everything it wrote.
package struct ProcessResult {
    package var status: Int32
    package var stdoutData: Data
    package var stderrData: Data
    package var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    package var stderr: String { String(decoding: stderrData, as: UTF8.self) }
    package var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    package var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }

    package init(status: Int32, stdoutData: Data, stderrData: Data) {
        self.status = status
        self.stdoutData = stdoutData
        self.stderrData = stderrData
    }
}

/// Runs programs for the tests: segno itself, and the independent tools they check it against
/// (sox, ffmpeg, ffprobe, python3 with mutagen).
package enum ProcessRunner {
    /// The absolute path of `name` on the test process's PATH, or nil.
    package static func find(_ name: String) -> String? {
        for d in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let p = "\(d)/\(name)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// Runs `executable` with `arguments`, collecting standard output and standard error (both
    /// read to their end while the child runs, so a full pipe never blocks it); standard input is
    /// `stdin` or /dev/null. `environment` is added to (and overrides) this process's environment.
    /// Returns once the child has exited and both pipes are drained.
    package static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                            stdin: Data? = nil) throws -> ProcessResult {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        if !environment.isEmpty {
            p.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        let input = stdin.map { _ in Pipe() }
        p.standardInput = input ?? FileHandle.nullDevice
        try p.run()
        let drained = DispatchGroup()
        let errData = Collected()
        drained.enter()
        Thread { errData.value = err.fileHandleForReading.readDataToEndOfFile(); drained.leave() }.start()
        if let input, let stdin {
            drained.enter()
            Thread {
                try? input.fileHandleForWriting.write(contentsOf: stdin)
                try? input.fileHandleForWriting.close()
                drained.leave()
            }.start()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        drained.wait()
        return ProcessResult(status: p.terminationStatus, stdoutData: outData, stderrData: errData.value)
    }

    /// Runs a tool from PATH; throws with the install command when it is missing.
    package static func tool(_ name: String, _ arguments: [String], environment: [String: String] = [:],
                             stdin: Data? = nil) throws -> ProcessResult {
        guard let exe = find(name) else {
            throw TestSupportError("\(name) is not installed; the tests use it as an independent reference (apt-get install \(name))")
        }
        return try run(exe, arguments, environment: environment, stdin: stdin)
    }
}

/// Data one thread writes before `DispatchGroup.leave` and another reads after `wait`.
private final class Collected: @unchecked Sendable {
    var value = Data()
}

/// The `segno` program the tests run, as a user would.
package enum CLI {
    /// The `segno` executable built beside the test bundle. `SEGNO_BIN` overrides the search.
    package static func segnoPath() throws -> String {
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
        throw TestSupportError("segno executable not found next to the tests (\(starts.map(\.path))); run `swift build` first or set SEGNO_BIN")
    }

    /// Runs `segno` with `arguments`.
    package static func segno(_ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
        try ProcessRunner.run(try segnoPath(), arguments, environment: environment)
    }

    /// The absolute path of `name` on PATH, or nil.
    package static func find(_ name: String) -> String? { ProcessRunner.find(name) }

    /// Runs a tool from PATH (sox, setpriv); throws with an install hint when it is missing.
    package static func tool(_ name: String, _ arguments: [String]) throws -> ProcessResult {
        try ProcessRunner.tool(name, arguments)
    }

    /// Runs `executable`, collecting stdout and stderr; stdin is /dev/null.
    package static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
        try ProcessRunner.run(executable, arguments, environment: environment)
    }
}
