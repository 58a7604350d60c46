import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoSources
import Testing

/// The folder scanner (`InputScanner`, SegnoSources since decision 0080) over a real folder.
@Suite struct InputScannerTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    func job(_ stages: [String]) throws -> Job {
        let text = "version: 1\ninput: { root: \(dir.path)/in, settle: 0s }\noutput: { root: \(dir.path)/out }\nstages:\n"
            + stages.map { "  - \($0)\n" }.joined()
        return Job(spec: try SpecLoader.parse(text, file: "test.yaml", baseDirectory: dir.path, registry: .coreTests))
    }

    /// Every file the scanner lists has the absolute path, and the inode, Foundation's own walk finds.
    @Test func scannedPathsAreFoundationsPaths() throws {
        let root = dir.path + "/in"
        let names = ["a.wav", "sub/b.wav", "sub/deeper/c.flac", "été/ñ 한국어.wav", "sub/deeper/d e.wav"]
        for n in names {
            let url = URL(fileURLWithPath: root + "/" + n)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data([1, 2, 3]).write(to: url)
        }
        let job = try job(["collect: { path: \"{dir}/{stem}.flac\" }"])
        let scan = try InputScanner(input: job.spec.input, skipDirectories: []).scan()
        var expected: [String: String] = [:]
        let walk = FileManager.default.enumerator(atPath: root)!
        while let rel = walk.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + rel, isDirectory: &isDir), !isDir.boolValue { expected[rel] = root + "/" + rel }
        }
        #expect(Dictionary(uniqueKeysWithValues: scan.files.map { ($0.relativePath, $0.absolutePath) }) == expected)
        for f in scan.files {
            let inode = try FileManager.default.attributesOfItem(atPath: f.absolutePath)[.systemFileNumber] as? NSNumber
            #expect(inode?.int64Value == f.identity.inode, "\(f.relativePath)")
        }
        // A source that names its recordings freely keeps its text; setting the path replaces it.
        var s3 = ScannedFile(relativePath: "x/y.wav", absolutePath: "s3://bucket/x/y.wav", identity: FileIdentity(size: 1, mtimeNs: 2, inode: 3))
        #expect(s3.absolutePath == "s3://bucket/x/y.wav")
        var joined = scan.files[0]
        joined.absolutePath = "/elsewhere/z.wav"
        s3.relativePath = "moved.wav"
        #expect(joined.absolutePath == "/elsewhere/z.wav" && s3.absolutePath == "s3://bucket/x/y.wav")
    }

    /// The prefix test on a joined path agrees with testing the joined text, across the join.
}
