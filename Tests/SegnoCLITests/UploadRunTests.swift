import Foundation
import SegnoAudioTestSupport
import SegnoCore
import SegnoCoreTestSupport
import SegnoS3
import SegnoState
import SegnoTestSupport
import Testing

/// `segno run` with an upload stage against the real Ceph RGW that `make test` starts
/// (Tests/support/rgw.sh): objects and metadata arrive, nothing is uploaded twice, a changed
/// file goes up again, prune deletes, secrets stay out of the state and the report.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["S3_TEST_ENDPOINT"].map { !$0.isEmpty } ?? false,
                "needs the local RGW (make test starts it)"))
struct UploadRunTests {
    let env = ProcessInfo.processInfo.environment
    var secret: String { env["S3_TEST_SECRET_KEY"] ?? "" }

    func client() throws -> S3Client {
        let endpoint = try S3Endpoint(url: URL(string: env["S3_TEST_ENDPOINT"]!)!, region: "us-east-1", addressing: .path)
        return S3Client(endpoint: endpoint, credentials: S3Credentials(accessKeyId: env["S3_TEST_ACCESS_KEY"]!, secretAccessKey: secret))
    }

    /// Runs segno with the gateway's keys as AWS credentials, plus `extra`.
    func segno(_ args: [String], extra: [String: String] = [:]) throws -> ProcessResult {
        let keys = ["AWS_ACCESS_KEY_ID": env["S3_TEST_ACCESS_KEY"] ?? "", "AWS_SECRET_ACCESS_KEY": secret]
        return try CLI.run(try CLI.segnoPath(), args, environment: keys.merging(extra) { _, n in n })
    }

    /// A new, empty bucket with a unique name.
    func freshBucket(_ prefix: String) throws -> String {
        let bucket = "segno-\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
        try client().createBucket(bucket)
        return bucket
    }

    /// in/x.wav (8000 frames) and a spec encoding it to FLAC, then `upload`.
    func oneRecording(_ dir: TempDir, upload: String) throws -> String {
        try FileManager.default.createDirectory(atPath: dir["in"], withIntermediateDirectories: true)
        try Fixtures.writeSine(to: dir["in/x.wav"], frames: 8000)
        try """
        version: 1
        input: { root: in, settle: 0s }
        output: { root: out }
        stages:
          - encode: { path: "{stem}.flac" }
          - upload: \(upload)
        """.write(toFile: dir["s.yaml"], atomically: true, encoding: .utf8)
        return dir["s.yaml"]
    }

    @Test func uploadsOnceWithMetadataReuploadsChangesAndPrunes() throws {
        let dir = try TempDir()
        try FileManager.default.createDirectory(atPath: dir["in/sub"], withIntermediateDirectories: true)
        try Fixtures.writeSine(to: dir["in/a memo.wav"], frames: 22050)
        try Fixtures.writeSine(to: dir["in/sub/메모 b.wav"], frequency: 660, frames: 30000)
        let bucket = try freshBucket("run")
        let s3 = try client()
        let spec = dir["up.yaml"]
        try """
        version: 1
        input: { root: in, settle: 0s }
        output: { root: out }
        stages:
          - mix: mono
          - encode: { path: "{dir}/{stem}.flac" }
          - waveform: { path: "{dir}/{stem}.levels.json", format: levels, levels: 20 }
          - upload:
              to: s3://\(bucket)/memos/{dir}/
              endpoint: ${S3_TEST_ENDPOINT}
              metadata: { title: "{stem}", duration: "{duration}", waveform: "{levels}" }
              prune: true
        """.write(toFile: spec, atomically: true, encoding: .utf8)

        let first = try segno(["run", spec, "--report", dir["report.json"]])
        #expect(first.status == 0, "\(first.stderr)")
        let keys = try s3.listObjects(bucket: bucket).map(\.key).sorted()
        #expect(keys == ["memos/a memo.flac", "memos/a memo.levels.json", "memos/sub/메모 b.flac", "memos/sub/메모 b.levels.json"])
        let head = try #require(try s3.headObject(bucket: bucket, key: "memos/a memo.flac"))
        #expect(head.contentType == "audio/flac")
        #expect(head.metadata["title"] == "a memo")
        #expect(head.metadata["duration"] == "0.500")
        #expect((head.metadata["waveform"] ?? "").count == 28)  // 20 levels, base64
        let local = try Data(contentsOf: URL(fileURLWithPath: dir["out/a memo.flac"]))
        #expect(try s3.getObject(bucket: bucket, key: "memos/a memo.flac") == local)

        // A second run uploads nothing: same ETag and Last-Modified, "nothing to do".
        let again = try segno(["run", spec])
        #expect(again.stdout.contains("nothing to do"), "\(again.stdout)")
        #expect(try s3.headObject(bucket: bucket, key: "memos/a memo.flac")?.lastModified == head.lastModified)

        // Forcing the upload finds the objects already there (same SHA-256) and sends nothing new.
        let forced = try segno(["run", spec, "--force=upload"])
        #expect(forced.status == 0)
        #expect(try s3.headObject(bucket: bucket, key: "memos/a memo.flac")?.etag == head.etag)

        // A changed source is encoded and uploaded again: an edit made in a later second than the
        // object's Last-Modified (S3 counts whole seconds), waited for on the clock.
        let uploaded = (head.lastModified ?? Date()).timeIntervalSince1970.rounded(.down)
        #expect(Wait.until(timeout: 10) { Date().timeIntervalSince1970.rounded(.down) > uploaded })
        try Fixtures.writeSine(to: dir["in/a memo.wav"], frequency: 880, frames: 44100)
        let changed = try segno(["run", spec])
        #expect(changed.status == 0, "\(changed.stderr)")
        let after = try #require(try s3.headObject(bucket: bucket, key: "memos/a memo.flac"))
        #expect(after.etag != head.etag)
        #expect(after.metadata["duration"] == "1.000")

        // Prune: a deleted source loses its outputs and its objects.
        try FileManager.default.removeItem(atPath: dir["in/sub/메모 b.wav"])
        let dry = try segno(["run", spec, "--dry-run"])
        #expect(dry.stdout.contains("prune sub/메모 b.wav"))
        let pruned = try segno(["run", spec])
        #expect(pruned.status == 0)
        #expect(try s3.listObjects(bucket: bucket).map(\.key).sorted() == ["memos/a memo.flac", "memos/a memo.levels.json"])
        #expect(!FileManager.default.fileExists(atPath: dir["out/sub/메모 b.flac"]))

        // The secret is nowhere in the state database or the report.
        for f in [dir["out/.segno/state.sqlite"], dir["report.json"]] {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: f))
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(f) contains the secret")
        }
    }

    @Test func wrongSecretFailsWithAuthErrorAndNoSecretInOutput() throws {
        let dir = try TempDir()
        let bucket = try freshBucket("auth")
        let spec = try oneRecording(dir, upload: "{ to: \"s3://\(bucket)/\", endpoint: \"${S3_TEST_ENDPOINT}\" }")
        let bad = "wrong-\(secret)"
        let r = try segno(["run", spec], extra: ["AWS_SECRET_ACCESS_KEY": bad])
        #expect(r.status == 1)
        #expect(r.stderr.contains("SignatureDoesNotMatch"), "\(r.stderr)")
        #expect(!r.stderr.contains(bad) && !r.stdout.contains(bad))
        let status = try segno(["status", spec, "--failed"])
        #expect(status.stdout.contains("x.wav"))
        // The upload failure is not the source's fault: a plain run with good keys tries again.
        let good = try segno(["run", spec])
        #expect(good.status == 0, "\(good.stderr)")
    }

    @Test func noCredentialsIsAConfigurationErrorBeforeAnyWork() throws {
        let dir = try TempDir()
        let spec = try oneRecording(dir, upload: "{ to: \"s3://nobucket/\", endpoint: \"http://127.0.0.1:9\" }")
        let r = try segno(["run", spec], extra: ["AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "HOME": dir.path])
        #expect(r.status == 2)
        #expect(r.stderr.contains("no credentials"))
        #expect(!FileManager.default.fileExists(atPath: dir["out/x.flac"]))
    }

    /// A run killed in the middle of a multipart upload leaves the upload id and its finished
    /// parts in the state database; the next run resumes that very upload. The interrupted state
    /// is made exactly (upload created and part 1 sent by the test, progress saved in the store)
    /// and the upload carries a marker in its metadata: a fresh upload by segno would not have it.
    @Test func aRecordedMultipartUploadIsResumedNotRestarted() throws {
        let dir = try TempDir()
        try FileManager.default.createDirectory(atPath: dir["in"], withIntermediateDirectories: true)
        try Fixtures.writeSine(to: dir["in/long.wav"], frequency: 220, rate: 44100, frames: 44100 * 70, channels: 2)
        let bucket = try freshBucket("mp")
        let s3 = try client()
        let part = 5 * 1024 * 1024
        let encode = "  - encode: { path: \"{stem}.wav\", bits: 16 }\n"
        let head = "version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nstages:\n"
        try (head + encode).write(toFile: dir["a.yaml"], atomically: true, encoding: .utf8)
        #expect(try segno(["run", dir["a.yaml"]]).status == 0)

        // What a run killed after its first part leaves behind.
        let local = dir["out/long.wav"]
        let bytes = try Data(contentsOf: URL(fileURLWithPath: local))
        #expect(bytes.count > 2 * part)
        let sha = FileHash.hex(try FileHash.sha256(path: local).digest)
        let key = "long.wav"
        let id = try s3.createMultipartUpload(bucket: bucket, key: key, options: PutObjectOptions(
            metadata: ["marker": "from-the-interrupted-run", S3Metadata.sha256Key: sha], contentType: "audio/wav"))
        let first = try s3.uploadPart(bucket: bucket, key: key, uploadId: id, partNumber: 1, data: bytes.prefix(part))
        let store = try StateStore(path: dir["out/.segno/state.sqlite"])
        try store.save(MultipartProgress(fileSHA256: sha, uploadId: id, partSize: Int64(part), parts: [1: first.etag], startedAt: Date()),
                       for: MultipartUploadKey(bucket: bucket, key: key))

        let upload = "  - upload: { to: \"s3://\(bucket)/\", endpoint: \"${S3_TEST_ENDPOINT}\", multipart_threshold: \(part), part_size: \(part) }\n"
        try (head + encode + upload).write(toFile: dir["b.yaml"], atomically: true, encoding: .utf8)
        let r = try segno(["run", dir["b.yaml"], "--explain"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("upload: new"), "only the upload runs: \(r.stdout)")
        let info = try #require(try s3.headObject(bucket: bucket, key: key))
        #expect(info.metadata["marker"] == "from-the-interrupted-run", "segno started a new upload instead of resuming")
        #expect(info.etag.hasSuffix("-3"))
        #expect(try s3.getObject(bucket: bucket, key: key) == bytes)
        #expect(try store.multipartStarted(before: Date.distantFuture).isEmpty, "the finished upload's record is cleared")
        #expect(try s3.listMultipartUploads(bucket: bucket).isEmpty)
    }

    /// Prune never deletes what a present recording still refers to, never runs on a partial
    /// scan, and a changed upload option (metadata) does reach the server.
    @Test func pruneIsCarefulAndOptionChangesReachTheServer() throws {
        let dir = try TempDir()
        for d in ["in/a", "in/b"] { try FileManager.default.createDirectory(atPath: dir[d], withIntermediateDirectories: true) }
        try Fixtures.writeSine(to: dir["in/a/x.wav"], frequency: 440, frames: 8000)
        try Fixtures.writeSine(to: dir["in/b/x.wav"], frequency: 440, frames: 8000)
        try Fixtures.writeSine(to: dir["in/c.wav"], frequency: 660, frames: 8000)
        let bucket = try freshBucket("prune")
        let s3 = try client()
        func write(title: String) throws {
            // {dir} in `to`: a/x.wav and b/x.wav have keys of their own (two recordings never share
            // one: HostileInputTests.twoRecordingsNeverUploadToOneKey).
            try """
            version: 1
            input: { root: in, settle: 0s }
            output: { root: out }
            stages:
              - encode: { path: "{dir}/{stem}.flac" }
              - upload:
                  to: s3://\(bucket)/memos/{dir}/
                  endpoint: ${S3_TEST_ENDPOINT}
                  metadata: { title: "\(title)" }
                  prune: true
                  prune_limit: 100%           # this test prunes two of three recordings
            """.write(toFile: dir["s.yaml"], atomically: true, encoding: .utf8)
        }
        try write(title: "one")
        #expect(try segno(["run", dir["s.yaml"]]).status == 0)
        #expect(try s3.headObject(bucket: bucket, key: "memos/a/x.flac")?.metadata["title"] == "one")

        // A dangling link makes the scan partial: nothing is pruned although c.wav is gone.
        try FileManager.default.removeItem(atPath: dir["in/c.wav"])
        try FileManager.default.createSymbolicLink(atPath: dir["in/dangling.wav"], withDestinationPath: dir["nowhere.wav"])
        #expect(try segno(["run", dir["s.yaml"]]).status == 0)
        #expect(try s3.headObject(bucket: bucket, key: "memos/c.flac") != nil)
        try FileManager.default.removeItem(atPath: dir["in/dangling.wav"])

        // Now c.wav and a/x.wav are pruned; b/x.wav's object stays.
        try FileManager.default.removeItem(atPath: dir["in/a/x.wav"])
        let pruned = try segno(["run", dir["s.yaml"]])
        #expect(pruned.stdout.contains("2 pruned"), "\(pruned.stdout)")
        #expect(try s3.headObject(bucket: bucket, key: "memos/c.flac") == nil)
        #expect(try s3.headObject(bucket: bucket, key: "memos/a/x.flac") == nil)
        #expect(try s3.headObject(bucket: bucket, key: "memos/b/x.flac") != nil)
        #expect(FileManager.default.fileExists(atPath: dir["out/b/x.flac"]))

        // A changed metadata option uploads again with the new value.
        try write(title: "two")
        #expect(try segno(["run", dir["s.yaml"]]).status == 0)
        #expect(try s3.headObject(bucket: bucket, key: "memos/b/x.flac")?.metadata["title"] == "two")
    }
}
