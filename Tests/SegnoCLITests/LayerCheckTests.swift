import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// `tools/check-layers.py` (run first by `make test`) catches an import that Package.swift does
/// not declare: a copy of Sources/ passes as it is and fails once a breach is planted in it.
@Suite struct LayerCheckTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let script = package + "/tools/check-layers.py"

    /// A copy of Sources/ in a temporary folder (kept alive by the returned `TempDir`), and its path.
    func copyOfSources() throws -> (TempDir, String) {
        let dir = try TempDir()
        let copy = dir.path + "/Sources"
        let cp = try CLI.tool("cp", ["-R", Self.package + "/Sources", copy])
        #expect(cp.status == 0, "\(cp.stderr)")
        return (dir, copy)
    }

    /// Rewrites `file` (relative to the copy's Sources/) with `edit` and runs the check on the copy.
    func check(_ copy: String, planting edit: (String) -> String, in file: String) throws -> ProcessResult {
        let target = copy + "/" + file
        try edit(try String(contentsOfFile: target, encoding: .utf8)).write(toFile: target, atomically: true, encoding: .utf8)
        return try CLI.tool("python3", [Self.script, "--sources", copy])
    }

    @Test func anUndeclaredImportPlantedInACopyIsCaught() throws {
        let (dir, copy) = try copyOfSources()
        defer { withExtendedLifetime(dir) {} }
        let clean = try CLI.tool("python3", [Self.script, "--sources", copy])
        #expect(clean.status == 0, "the copy as it is keeps the layers: \(clean.stdout)")
        // SegnoState declares no libsoxr: an import of it must be named, with its file and line.
        let planted = try check(copy, planting: { "import CSoxr\n" + $0 }, in: "SegnoState/State/StateStore.swift")
        #expect(planted.status == 1, "\(planted.stdout)")
        #expect(planted.stdout.contains("SegnoState/State/StateStore.swift:1: SegnoState imports CSoxr"), "\(planted.stdout)")
    }

    /// Rule 6: a file-system call in a core file that docs/layout.md does not list as doing file
    /// I/O is caught (the run lock, the state folder's checks and the scanner moved out of the core).
    @Test func fileIOPlantedInTheCoreIsCaught() throws {
        let (dir, copy) = try copyOfSources()
        defer { withExtendedLifetime(dir) {} }
        let planted = try check(copy, planting: { $0 + "\nfunc plantedLock(_ fd: Int32) -> Int32 { flock(fd, LOCK_EX) }\n" },
                                in: "SegnoCore/Runner/Progress.swift")
        #expect(planted.status == 1, "\(planted.stdout)")
        #expect(planted.stdout.contains("SegnoCore/Runner/Progress.swift:") && planted.stdout.contains("file I/O in SegnoCore"), "\(planted.stdout)")
    }

    /// Rule 7: a test-support library that imports Testing is caught: `swift build -c release`
    /// builds it too and has no test module (it broke `make release` once).
    @Test func theTestModuleImportedOutsideATestTargetIsCaught() throws {
        let (dir, copy) = try copyOfSources()
        defer { withExtendedLifetime(dir) {} }
        let planted = try check(copy, planting: { "import Testing\n" + $0 }, in: "SegnoCoreTestSupport/SpecFixture.swift")
        #expect(planted.status == 1, "\(planted.stdout)")
        #expect(planted.stdout.contains("SegnoCoreTestSupport/SpecFixture.swift:1: SegnoCoreTestSupport imports Testing, but is not a test target"),
                "\(planted.stdout)")
    }
}
