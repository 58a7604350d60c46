import Foundation
@testable import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoKit
import SegnoSources
import SegnoTestSupport
import Testing

/// The compact forms planning keeps at 1,000,000 recordings (issue 23, item 7) give what the
/// plain forms gave: a scanned file's absolute path joined from the shared root, output collisions
/// found through path hashes, a plan's stored state behind one pointer.
@Suite struct PlanningScaleTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    func job(_ stages: [String]) throws -> Job {
        let text = "version: 1\ninput: { root: \(dir.path)/in, settle: 0s }\noutput: { root: \(dir.path)/out }\nstages:\n"
            + stages.map { "  - \($0)\n" }.joined()
        return Job(spec: try SpecLoader.parse(text, file: "test.yaml", baseDirectory: dir.path, registry: .forTests))
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
        let job = try job(["encode: { path: \"{dir}/{stem}.flac\" }"])
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
    /// Collisions through path hashes are exactly those a dictionary of whole paths finds, and a
    /// file left out (the job's own output) neither collides nor takes a name.
    @Test func collisionsAgreeWithAPlainDictionary() throws {
        let job = try job(["encode: { path: \"{dir}/{stem}.flac\" }", "waveform: { path: \"{dir}/{stem}.json\" }"])
        let id = FileIdentity(size: 1, mtimeNs: 1, inode: 1)
        var files: [ScannedFile] = []
        for i in 0 ..< 3000 {
            let d = "d\(i % 17)"
            files.append(ScannedFile(relativePath: "\(d)/r\(i).wav", root: dir.path + "/in", identity: id))
            if i % 7 == 0 { files.append(ScannedFile(relativePath: "\(d)/r\(i).mp3", root: dir.path + "/in", identity: id)) }
            if i % 11 == 0 { files.append(ScannedFile(relativePath: "\(d)/r\(i).flac", root: dir.path + "/in", identity: id)) }
        }
        files.sort { $0.relativePath < $1.relativePath }
        let excluded: Set<String> = ["d0/r0.flac", "d7/r7.wav"]
        let found = BatchRunner.outputCollisions(job: job, files: files, excluding: { excluded.contains($0.relativePath) })
        // The reference: the first file (in path order) to write a path keeps it.
        var owner: [String: String] = [:]
        var expected: [String: String] = [:]
        for f in files where !excluded.contains(f.relativePath) {
            let stem = (f.relativePath as NSString).deletingPathExtension
            for ext in ["flac", "json"] {
                let path = "\(stem).\(ext)"
                if let first = owner[path] { expected[f.relativePath] = first; break }
                owner[path] = f.relativePath
            }
        }
        #expect(found.count == expected.count && found.count > 400)
        for (path, first) in expected {
            #expect(found[path]?.contains("like \(AudioError.quoted(first))") == true, "\(path)")
        }
    }
}
