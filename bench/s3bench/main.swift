// s3bench: uploads every file under a folder with SegnoS3, for bench/upload.sh.
// A stand-in until `segno run` with an upload stage can be timed instead (built in a dev
// package for now; see bench/upload.sh).
//
//   s3bench --endpoint URL --bucket NAME [--prefix P] [--parallel N] [--part-concurrency N]
//           [--threshold-mib N] [--part-mib N] DIR
//
// Credentials come from the AWS environment variables or ~/.aws (AWSEnvironment.resolve).
// Prints one JSON line: files, bytes, seconds, MB/s, requests, retries, peak RSS.
import Foundation
import SegnoS3

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("s3bench: \(message)\n".utf8))
    exit(2)
}

/// Shared by the worker threads: the next file to take, totals and failures.
final class Progress: @unchecked Sendable {
    private let lock = NSLock()
    private var index = 0
    private(set) var bytes: Int64 = 0
    private(set) var failures: [String] = []

    func next(of count: Int) -> Int? {
        lock.lock(); defer { lock.unlock() }
        guard index < count else { return nil }
        index += 1
        return index - 1
    }

    func done(bytes size: Int64) { lock.lock(); bytes += size; lock.unlock() }
    func failed(_ text: String) { lock.lock(); failures.append(text); lock.unlock() }
}

func run() {
    var options: [String: String] = [:]
    var folder: String?
    var arguments = CommandLine.arguments.dropFirst()
    while let argument = arguments.popFirst() {
        if argument.hasPrefix("--") {
            guard let value = arguments.popFirst() else { fail("\(argument) needs a value") }
            options[String(argument.dropFirst(2))] = value
        } else {
            folder = argument
        }
    }
    guard let folder, let endpointText = options["endpoint"], let bucket = options["bucket"] else {
        fail("usage: s3bench --endpoint URL --bucket NAME [--prefix P] [--parallel N] [--part-concurrency N] DIR")
    }
    let prefix = options["prefix"] ?? ""
    let parallel = Int(options["parallel"] ?? "") ?? ProcessInfo.processInfo.activeProcessorCount
    var uploadOptions = UploadOptions(partConcurrency: Int(options["part-concurrency"] ?? "") ?? 4)
    if let mib = Int64(options["threshold-mib"] ?? "") { uploadOptions.multipartThreshold = mib << 20 }
    if let mib = Int64(options["part-mib"] ?? "") { uploadOptions.partSize = mib << 20 }
    let upload = uploadOptions

    let environment: AWSEnvironment
    do { environment = try AWSEnvironment.resolve() } catch { fail("\(error)") }
    guard let credentials = environment.credentials else { fail("no credentials (AWS_ACCESS_KEY_ID / ~/.aws)") }
    let client: S3Client
    do {
        var configuration = S3ClientConfiguration()
        if options["sign-payload"] == "no" { configuration.signPayload = false }
        client = S3Client(endpoint: try S3Endpoint(url: URL(string: endpointText)!, region: environment.region ?? "us-east-1"),
                          credentials: credentials, configuration: configuration)
    } catch { fail("\(error)") }

    let root = URL(fileURLWithPath: folder).standardizedFileURL
    var found: [(URL, String)] = []
    if let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) {
        for case let url as URL in walker where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
            let relative = String(url.standardizedFileURL.path.dropFirst(root.path.count + 1))
            found.append((url, prefix + relative))
        }
    }
    let files = found.sorted { $0.1 < $1.1 }

    let progress = Progress()
    let start = Date()
    let group = DispatchGroup()
    for _ in 0..<max(1, parallel) {
        group.enter()
        Thread {
            while let i = progress.next(of: files.count) {
                let (url, key) = files[i]
                do {
                    let result = try client.upload(file: url, bucket: bucket, key: key,
                                                   contentType: "application/octet-stream", options: upload)
                    progress.done(bytes: result.size)
                } catch {
                    progress.failed("\(key): \(error)")
                }
            }
            group.leave()
        }.start()
    }
    group.wait()
    let seconds = Date().timeIntervalSince(start)
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let stats = client.statistics
    print("{\"files\":\(files.count),\"bytes\":\(progress.bytes),\"seconds\":\(String(format: "%.3f", seconds)),"
        + "\"MBps\":\(String(format: "%.1f", Double(progress.bytes) / 1e6 / seconds)),\"requests\":\(stats.requests),"
        + "\"retries\":\(stats.retries),\"parts\":\(stats.partsUploaded),\"peak_rss_mib\":\(usage.ru_maxrss / 1024),"
        + "\"failures\":\(progress.failures.count)}")
    for failure in progress.failures.prefix(5) { FileHandle.standardError.write(Data("s3bench: \(failure)\n".utf8)) }
    exit(progress.failures.isEmpty ? 0 : 1)
}

run()
