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
