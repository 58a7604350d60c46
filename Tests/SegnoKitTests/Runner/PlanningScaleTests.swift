import Foundation
@testable import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoKit
import SegnoTestSupport
import Testing

/// The compact forms planning keeps at 1,000,000 recordings (issue 23, item 7) give what the
/// plain forms gave: output collisions found through path hashes. (The scanner's paths are
/// SegnoSourcesTests', the path prefix and a plan's stored state SegnoCoreTests'.)
@Suite struct PlanningScaleTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    func job(_ stages: [String]) throws -> Job {
        let text = "version: 1\ninput: { root: \(dir.path)/in, settle: 0s }\noutput: { root: \(dir.path)/out }\nstages:\n"
            + stages.map { "  - \($0)\n" }.joined()
        return Job(spec: try SpecLoader.parse(text, file: "test.yaml", baseDirectory: dir.path, registry: .forTests))
    }

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
