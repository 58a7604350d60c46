import Foundation
import SegnoS3
import Testing

/// `input.root: s3://bucket/prefix/` against the real Ceph RGW that `make test` starts: objects
/// are listed (all pages), decoded from scratch copies that do not outlive the pass, resumed by
/// ETag/size/time like files, and the outputs equal those made from the same files on disk.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["S3_TEST_ENDPOINT"].map { !$0.isEmpty } ?? false,
                "needs the local RGW (make test starts it)"))
struct ObjectStoreInputTests {
    let env = ProcessInfo.processInfo.environment

    func client() throws -> S3Client {
        let endpoint = try S3Endpoint(url: URL(string: env["S3_TEST_ENDPOINT"]!)!, region: "us-east-1", addressing: .path)
        return S3Client(endpoint: endpoint, credentials: S3Credentials(accessKeyId: env["S3_TEST_ACCESS_KEY"]!, secretAccessKey: env["S3_TEST_SECRET_KEY"]!))
    }

    func spec(root: String, output: String) -> String {
        """
        version: 1
        input: { root: "\(root)", endpoint: "${S3_TEST_ENDPOINT}", settle: 0s }
        output: { root: \(output) }
        stages:
          - encode: { path: "{dir}/{stem}.flac" }
          - waveform: { path: "{dir}/{stem}.json" }
        """
    }

    @Test func objectsAreProcessedLikeFilesAndResumedByTheirIdentity() throws {
        let ws = try RunWorkspace()
        let files = try ws.makeRecordings(count: 5, maxSeconds: 1)
        let bucket = "segno-in-\(UUID().uuidString.prefix(8).lowercased())"
        let s3 = try client()
        try s3.createBucket(bucket)
        for f in files { _ = try s3.putObject(bucket: bucket, key: "memos/" + f, file: URL(fileURLWithPath: ws["in/" + f])) }
        _ = try s3.putObject(bucket: bucket, key: "memos/notes.txt", data: Data("not audio".utf8))
        try ws.writeSpec(spec(root: "s3://\(bucket)/memos/", output: "out"), name: "s3.yaml")
        try ws.writeSpec(spec(root: "in", output: "local").replacingOccurrences(of: ", endpoint: \"${S3_TEST_ENDPOINT}\"", with: ""), name: "local.yaml")
        let keys = ["AWS_ACCESS_KEY_ID": env["S3_TEST_ACCESS_KEY"]!, "AWS_SECRET_ACCESS_KEY": env["S3_TEST_SECRET_KEY"]!]
        let first = try ws.segno(["run", "s3.yaml"], environment: keys)
        #expect(first.exited(0), "\(first.stderr)")
        #expect(first.stdout.contains("5 done, 0 failed"), "\(first.stdout)")
        #expect(try ws.segno(["run", "local.yaml"]).exited(0))
        let fromObjects = try RunWorkspace.outputs(ws["out"]).filter { !$0.key.hasPrefix(".segno") }
        #expect(fromObjects.count == 10)
        #expect(fromObjects == (try RunWorkspace.outputs(ws["local"]).filter { !$0.key.hasPrefix(".segno") }), "the same bytes as from files")
        let scratch = NSTemporaryDirectory()
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: scratch)) ?? []).filter { $0.hasPrefix("segno-scratch-") }
                    .allSatisfy { ((try? FileManager.default.contentsOfDirectory(atPath: scratch + "/" + $0)) ?? []).isEmpty },
                "no scratch copy outlives its pass")
        let second = try ws.segno(["run", "s3.yaml"], environment: keys)
        #expect(second.stdout.contains("nothing to do: 5 recordings up to date"), "\(second.stdout)")
        // A replaced object (new ETag) runs again, alone.
        _ = try s3.putObject(bucket: bucket, key: "memos/" + files[0], file: URL(fileURLWithPath: ws["in/" + files[1]]))
        let third = try ws.segno(["run", "s3.yaml", "--explain"], environment: keys)
        #expect(third.stdout.contains("1 done"), "\(third.stdout)")
        #expect(third.stdout.contains("source changed"), "\(third.stdout)")
    }

    @Test func missingCredentialsStopTheRunWithOneLine() throws {
        let ws = try RunWorkspace()
        try ws.writeSpec(spec(root: "s3://nowhere/memos/", output: "out"), name: "s3.yaml")
        let r = try ws.segno(["run", "s3.yaml"], environment: ["AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_PROFILE": "none-such"])
        #expect(r.exited(2), "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("input.root s3://nowhere/memos/: ") && r.stderr.contains("credentials"), "\(r.stderr)")
        #expect(r.stderrLines.count == 1)
    }
}
