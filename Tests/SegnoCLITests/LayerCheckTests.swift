import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// `tools/check-layers.py` (run first by `make test`) catches an import that Package.swift does
/// not declare: a copy of Sources/ passes as it is and fails once a breach is planted in it.
@Suite struct LayerCheckTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test func anUndeclaredImportPlantedInACopyIsCaught() throws {
        let dir = try TempDir()
        let copy = dir.path + "/Sources"
        let cp = try CLI.tool("cp", ["-R", Self.package + "/Sources", copy])
        #expect(cp.status == 0, "\(cp.stderr)")
        let script = Self.package + "/tools/check-layers.py"
        let clean = try CLI.tool("python3", [script, "--sources", copy])
        #expect(clean.status == 0, "the copy as it is keeps the layers: \(clean.stdout)")
        // SegnoState declares no libsoxr: an import of it must be named, with its file and line.
        let target = copy + "/SegnoState/State/StateStore.swift"
        let text = try String(contentsOfFile: target, encoding: .utf8)
        try ("import CSoxr\n" + text).write(toFile: target, atomically: true, encoding: .utf8)
        let planted = try CLI.tool("python3", [script, "--sources", copy])
        #expect(planted.status == 1, "\(planted.stdout)")
        #expect(planted.stdout.contains("SegnoState/State/StateStore.swift:1: SegnoState imports CSoxr"), "\(planted.stdout)")
    }
}

extension LayerCheckTests {
    /// Rule 6: a file-system call in a core file that docs/layout.md does not list as doing file
    /// I/O is caught (the run lock, the state folder's checks and the scanner moved out of the core).
    @Test func fileIOPlantedInTheCoreIsCaught() throws {
        let dir = try TempDir()
        let copy = dir.path + "/Sources"
        let cp = try CLI.tool("cp", ["-R", Self.package + "/Sources", copy])
        #expect(cp.status == 0, "\(cp.stderr)")
        let script = Self.package + "/tools/check-layers.py"
        let target = copy + "/SegnoCore/Runner/Progress.swift"
        let text = try String(contentsOfFile: target, encoding: .utf8)
        try (text + "\nfunc plantedLock(_ fd: Int32) -> Int32 { flock(fd, LOCK_EX) }\n").write(toFile: target, atomically: true, encoding: .utf8)
        let planted = try CLI.tool("python3", [script, "--sources", copy])
        #expect(planted.status == 1, "\(planted.stdout)")
        #expect(planted.stdout.contains("SegnoCore/Runner/Progress.swift:") && planted.stdout.contains("file I/O in SegnoCore"), "\(planted.stdout)")
    }
}

extension LayerCheckTests {
    /// Rule 7: a test-support library that imports Testing is caught: `swift build -c release`
    /// builds it too and has no test module (it broke `make release` once).
    @Test func theTestModuleImportedOutsideATestTargetIsCaught() throws {
        let dir = try TempDir()
        let copy = dir.path + "/Sources"
        let cp = try CLI.tool("cp", ["-R", Self.package + "/Sources", copy])
        #expect(cp.status == 0, "\(cp.stderr)")
        let script = Self.package + "/tools/check-layers.py"
        let target = copy + "/SegnoCoreTestSupport/SpecFixture.swift"
        let text = try String(contentsOfFile: target, encoding: .utf8)
        try ("import Testing\n" + text).write(toFile: target, atomically: true, encoding: .utf8)
        let planted = try CLI.tool("python3", [script, "--sources", copy])
        #expect(planted.status == 1, "\(planted.stdout)")
        #expect(planted.stdout.contains("SegnoCoreTestSupport/SpecFixture.swift:1: SegnoCoreTestSupport imports Testing, but is not a test target"),
                "\(planted.stdout)")
    }
}
