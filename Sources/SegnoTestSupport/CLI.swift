import Foundation
import SegnoCoreTestSupport

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
