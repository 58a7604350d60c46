import Foundation
import Logging
@testable import SegnoS3

/// The local Ceph RADOS Gateway started by Tests/support/rgw.sh (S3_TEST_* variables).
enum RGW {
    static let environment = ProcessInfo.processInfo.environment
    static var isConfigured: Bool { environment["S3_TEST_ENDPOINT"].map { !$0.isEmpty } ?? false }

    static var endpoint: S3Endpoint {
        try! S3Endpoint(url: URL(string: environment["S3_TEST_ENDPOINT"]!)!,
                        region: environment["S3_TEST_REGION"] ?? "us-east-1", addressing: .path)
    }

    static var credentials: S3Credentials {
        S3Credentials(accessKeyId: environment["S3_TEST_ACCESS_KEY"] ?? "",
                      secretAccessKey: environment["S3_TEST_SECRET_KEY"] ?? "")
    }

    static func client(credentials: S3Credentials = credentials, retry: RetryPolicy = RetryPolicy(baseDelay: 0.05),
                       logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })) -> S3Client {
        S3Client(endpoint: endpoint, credentials: credentials,
                 configuration: S3ClientConfiguration(timeout: 30, retry: retry), logger: logger)
    }

    /// One bucket for the whole test run, created on first use.
    static let bucket: String = {
        let name = "segno-test-\(UUID().uuidString.prefix(8).lowercased())"
        try! client().createBucket(name)
        return name
    }()

    static func uniqueKey(_ stem: String) -> String { "\(UUID().uuidString.prefix(8).lowercased())/\(stem)" }
}

/// A temporary file with deterministic pseudo-random content, removed by `remove()`.
struct TempFile {
    let url: URL

    init(size: Int, seed: UInt64 = 1) throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("segno-s3-\(UUID().uuidString).bin")
        try Self.bytes(size: size, seed: seed).write(to: url)
    }

    func remove() { try? FileManager.default.removeItem(at: url) }

    static func bytes(size: Int, seed: UInt64) -> Data {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var data = Data(count: size)
        data.withUnsafeMutableBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            for i in 0..<size {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                bytes[i] = UInt8(truncatingIfNeeded: state)
            }
        }
        return data
    }
}

/// A log handler that keeps every message and its metadata in memory.
final class CapturingLogHandler: LogHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lock.lock(); defer { lock.unlock() }
        lines.append("\(event.level) \(event.message) \(event.metadata ?? [:]) \(event.error.map { "\($0)" } ?? "")")
    }

    var text: String { lock.lock(); defer { lock.unlock() }; return lines.joined(separator: "\n") }
    var count: Int { lock.lock(); defer { lock.unlock() }; return lines.count }
}

/// Runs a script from Tests/support with Python 3.
enum SupportScript {
    static var directory: URL {
        URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("support")
    }

    /// Runs `name` with `input` on stdin and returns stdout; throws when it fails.
    static func run(_ name: String, input: Data) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", directory.appendingPathComponent(name).path]
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(input)
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ScriptError(message: "\(name) failed: " + String(decoding: errors, as: UTF8.self))
        }
        return output
    }

    struct ScriptError: Error, CustomStringConvertible { var message: String; var description: String { message } }
}

/// Tests/support/flaky_s3.py running a plan of answers; `stop()` ends it.
final class FlakyServer: @unchecked Sendable {
    let process = Process()
    private let stdin = Pipe()
    private let stdout = Pipe()
    let port: Int

    init(plan: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", SupportScript.directory.appendingPathComponent("flaky_s3.py").path, plan]
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        var line = Data()
        while true {
            let byte = stdout.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        port = Int(String(decoding: line, as: UTF8.self)) ?? 0
    }

    var endpoint: S3Endpoint { try! S3Endpoint(url: URL(string: "http://127.0.0.1:\(port)")!) }

    func stop() {
        try? stdin.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
