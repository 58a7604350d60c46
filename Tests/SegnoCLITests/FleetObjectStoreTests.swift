import Foundation
import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoS3
import SegnoTestSupport
import Synchronization
import Testing

/// Many workers with nothing shared but PostgreSQL and the object store (the real RGW and
/// PostgreSQL that `make test` starts): input listed from a bucket, outputs uploaded to a
/// versioned bucket, so every PUT that reached the store is a version to count.
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["S3_TEST_ENDPOINT"].map { !$0.isEmpty } ?? false,
                             "needs the local RGW (make test starts it)"),
       .enabled(if: ProcessInfo.processInfo.environment["SEGNO_TEST_PG"] != nil,
                "needs SEGNO_TEST_PG: `make test` starts PostgreSQL (Tests/support/postgres.sh start)"))
struct FleetObjectStoreTests {
    let env = ProcessInfo.processInfo.environment
    var keys: [String: String] { ["AWS_ACCESS_KEY_ID": env["S3_TEST_ACCESS_KEY"] ?? "", "AWS_SECRET_ACCESS_KEY": env["S3_TEST_SECRET_KEY"] ?? ""] }

    /// Credentials, and a temporary folder of the workspace's own: scratch copies of these runs
    /// must not show up in another suite's check of the shared temporary folder.
    func env(_ ws: RunWorkspace) -> [String: String] {
        try? FileManager.default.createDirectory(atPath: ws["tmp"], withIntermediateDirectories: true)
        return keys.merging(["TMPDIR": ws["tmp"]]) { _, new in new }
    }

    func client() throws -> S3Client {
        let endpoint = try S3Endpoint(url: URL(string: env["S3_TEST_ENDPOINT"]!)!, region: "us-east-1", addressing: .path)
        return S3Client(endpoint: endpoint, credentials: S3Credentials(accessKeyId: env["S3_TEST_ACCESS_KEY"]!, secretAccessKey: env["S3_TEST_SECRET_KEY"]!))
    }

    /// Seconds a run of these tests may take before it counts as hung.
    static let runLimit = 900.0
    static func bucket(_ role: String) -> String { "segno-\(role)-\(UUID().uuidString.prefix(8).lowercased())" }

    /// A spec reading `s3://input/memos/` and uploading every FLAC to `s3://output/` in multipart
    /// uploads (a 1-byte threshold: one part each), with the given state.
    func spec(input: String, output: String, state: String?, root: String, lease: Int = 30) -> String {
        """
        version: 1
        input: { root: "s3://\(input)/memos/", endpoint: "${S3_TEST_ENDPOINT}", settle: 0s }
        output: { root: \(root) }
        \(state.map { "state: \"\($0)\"\nlease: \(lease)s" } ?? "")
        parallel: 1
        retries: 2
        stages:
          - encode: { path: "{dir}/{stem}.flac" }
          - waveform: { path: "{dir}/{stem}.json" }
          - upload: { to: "s3://\(output)/memos/{dir}/", endpoint: "${S3_TEST_ENDPOINT}", addressing: path, files: [encode], multipart_threshold: 1 }
        """
    }

    /// `count` half-second recordings in a new input bucket; returns the bucket and their names.
    func inputBucket(_ ws: RunWorkspace, count: Int, seed: UInt64) throws -> (String, [String]) {
        let files = try ws.makeRecordings(count: count, seed: seed, minSeconds: 0.5, maxSeconds: 0.5)
        let bucket = Self.bucket("in")
        let s3 = try client()
        try s3.createBucket(bucket)
        let pending = Mutex(files)
        let folder = ws["in"]
        WorkerPool.run(workers: 4, shouldStop: { false }, next: { pending.withLock { $0.popLast() } }) { f in
            _ = try? s3.putObject(bucket: bucket, key: "memos/" + f, file: URL(fileURLWithPath: folder + "/" + f))
        }
        #expect(try s3.listObjects(bucket: bucket, prefix: "memos/").count == count)
        return (bucket, files)
    }

    /// A new output bucket that keeps every version of every object.
    func versionedBucket() throws -> String {
        let bucket = Self.bucket("out")
        let s3 = try client()
        try s3.createBucket(bucket)
        try s3.enableVersioning(bucket)
        return bucket
    }

    /// `segno status pg.yaml --json` with the credentials the input listing needs.
    func status(_ ws: RunWorkspace) throws -> [String: Any] {
        let r = try ws.segno(["status", "pg.yaml", "--json"], environment: env(ws))
        guard r.exited(0) else { throw CLITestError("status exited \(r.status): \(r.stderr)") }
        return try RunWorkspace.json(r.stdout)
    }

    /// The FLAC outputs a run should upload: `memo 001.wav` → `memo 001.flac`.
    static func uploadedKeys(_ files: [String]) -> Set<String> {
        Set(files.map { "memos/" + ($0 as NSString).deletingPathExtension + ".flac" })
    }

    @Test func threeWorkersOnObjectStorageDoEveryRecordingExactlyOnce() throws {
        guard let url = try ManyWorkersTests.database() else { return }
        let ws = try RunWorkspace()
        let (input, files) = try inputBucket(ws, count: 200, seed: 0xF1EE7)
        let output = try versionedBucket()
        let reference = Self.bucket("ref")
        try client().createBucket(reference)
        try ws.writeSpec(spec(input: input, output: output, state: url, root: "out"), name: "pg.yaml")
        try ws.writeSpec(spec(input: input, output: reference, state: nil, root: "ref"), name: "sqlite.yaml")
        let workers = try (0..<3).map { try SegnoChild(["run", "pg.yaml", "--report", "r\($0).json", "--quiet"], in: ws.root, logs: ws.logs, environment: env(ws)) }
        for w in workers {
            // Alone these runs take under a minute; beside the whole suite they have taken over
            // 300 s (2026-11-29). The limit only stops a hang (decision 0063: generous deadlines).
            let exit = w.wait(timeout: Self.runLimit)
            #expect(exit.exited(0), "\(exit.stderr)")
        }
        let done = try (0..<3).flatMap { try ManyWorkersTests.done(ws, "r\($0).json") }
        #expect(Set(done) == Set(files))
        #expect(done.count == files.count, "each recording done by one worker: \(done.count) of \(files.count)")
        #expect(try status(ws).int("done") == files.count)
        let rows = try CLI.run("/usr/bin/psql", [url, "-tAc", "SELECT count(*), count(DISTINCT path) FROM recording; SELECT count(*) FROM step"])
        #expect(rows.stdout.split(separator: "\n") == ["\(files.count)|\(files.count)", "\(files.count * 3)"], "one row per recording, 3 steps each: \(rows.stdout)")

        let s3 = try client()
        let versions = try s3.listObjectVersions(output)
        #expect(Set(versions.map(\.key)) == Self.uploadedKeys(files))
        #expect(versions.count == files.count, "one PUT per object: \(versions.count) versions for \(files.count) keys")
        #expect(versions.allSatisfy { !$0.deleteMarker })
        #expect(try s3.listMultipartUploads(bucket: output).isEmpty, "no multipart upload left open")

        let single = try ws.segno(["run", "sqlite.yaml", "--quiet", "--parallel", "2"], environment: env(ws), timeout: Self.runLimit)
        #expect(single.exited(0), "\(single.stderr)")
        let shared = Dictionary(uniqueKeysWithValues: try s3.listObjectsDetailed(bucket: output).map { ($0.key, $0.etag) })
        let alone = Dictionary(uniqueKeysWithValues: try s3.listObjectsDetailed(bucket: reference).map { ($0.key, $0.etag) })
        #expect(shared.count == files.count && shared == alone, "the same objects (ETags) as one process with SQLite")
        let sample = try #require(shared.keys.sorted().first)
        #expect(try s3.getObject(bucket: output, key: sample) == s3.getObject(bucket: reference, key: sample))
        #expect(try RunWorkspace.outputs(ws["out"]).filter { !$0.key.hasPrefix(".segno") } == RunWorkspace.outputs(ws["ref"]).filter { !$0.key.hasPrefix(".segno") })
    }

    @Test(arguments: [UInt64(7), 11])
    func aWorkerKilledMidUploadLeavesNoOpenMultipartUploadAndNoSecondVersion(seed: UInt64) throws {
        guard let url = try ManyWorkersTests.database() else { return }
        let ws = try RunWorkspace()
        let (input, files) = try inputBucket(ws, count: 60, seed: seed)
        let output = try versionedBucket()
        try ws.writeSpec(spec(input: input, output: output, state: url, root: "out", lease: 3), name: "pg.yaml")
        var rng = SplitMix64(seed: seed)
        let victim = try SegnoChild(["run", "pg.yaml", "--quiet"], in: ws.root, logs: ws.logs, environment: env(ws))
        let others = try (0..<2).map { try SegnoChild(["run", "pg.yaml", "--report", "r\($0).json", "--quiet"], in: ws.root, logs: ws.logs, environment: env(ws)) }
        // Every recording ends in a multipart upload: a kill lands in one, or between two (a seeded
        // moment, the thing under test).
        Thread.sleep(forTimeInterval: Double.random(in: 1.5...3.5, using: &rng))
        victim.send(SIGKILL)
        #expect(victim.wait().signalled, "the victim was killed mid-run, not already finished")
        for w in others {
            let exit = w.wait(timeout: Self.runLimit)
            #expect(exit.exited(0), "\(exit.stderr)")
        }
        let status = try status(ws)
        #expect(status.int("done") == files.count, "the survivors finished the victim's work: \(status)")
        let s3 = try client()
        #expect(try s3.listMultipartUploads(bucket: output).isEmpty, "no multipart upload left open after the kill")
        let versions = try s3.listObjectVersions(output)
        #expect(Set(versions.map(\.key)) == Self.uploadedKeys(files))
        #expect(versions.count == files.count, "a taken-over upload is resumed or skipped, never sent twice: \(versions.count) versions")
        let again = try ws.segno(["run", "pg.yaml"], environment: env(ws))
        #expect(again.stdout.contains("nothing to do: \(files.count) recordings up to date"), "\(again.stdout) \(again.stderr)")
        #expect(try RunWorkspace.temporaries(ws["out"]).isEmpty, "the next run removes the victim's temporaries")
        let scratch = (try? FileManager.default.contentsOfDirectory(atPath: ws["tmp"])) ?? []
        #expect(scratch.allSatisfy { ((try? FileManager.default.contentsOfDirectory(atPath: ws["tmp/" + $0])) ?? []).isEmpty },
                "the victim's scratch copy is gone too: \(scratch)")
    }
}

/// Bucket versioning and version listing, for counting PUTs in the tests (not used by segno).
extension S3Client {
    struct ObjectVersion {
        var key: String
        var versionId: String
        var deleteMarker: Bool
    }

    func enableVersioning(_ bucket: String) throws {
        var call = Call(operation: "PutBucketVersioning", method: "PUT", bucket: bucket, key: nil)
        let data = Data("<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>Enabled</Status></VersioningConfiguration>".utf8)
        call.query = [("versioning", nil)]
        call.body = .data(data)
        call.payloadHash = PayloadHash.of(data)
        call.headers["Content-Type"] = "application/xml"
        _ = try perform(call)
    }

    /// Every version and delete marker in the bucket, all pages (ListObjectVersions).
    func listObjectVersions(_ bucket: String) throws -> [ObjectVersion] {
        var out: [ObjectVersion] = []
        var keyMarker: String?
        var versionMarker: String?
        while true {
            var call = Call(operation: "ListObjectVersions", method: "GET", bucket: bucket, key: nil)
            call.query = [("versions", nil)]
            if let keyMarker { call.query.append(("key-marker", keyMarker)) }
            if let versionMarker { call.query.append(("version-id-marker", versionMarker)) }
            let root = try parse(perform(call), call)
            for v in root.all("Version") { out.append(ObjectVersion(key: v.string("Key") ?? "", versionId: v.string("VersionId") ?? "", deleteMarker: false)) }
            for v in root.all("DeleteMarker") { out.append(ObjectVersion(key: v.string("Key") ?? "", versionId: v.string("VersionId") ?? "", deleteMarker: true)) }
            guard root.string("IsTruncated") == "true", let next = root.string("NextKeyMarker") else { break }
            keyMarker = next
            versionMarker = root.string("NextVersionIdMarker")
        }
        return out
    }
}
