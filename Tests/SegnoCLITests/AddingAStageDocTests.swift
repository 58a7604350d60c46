import Foundation
import SegnoTestSupport
import Testing

/// docs/adding-a-stage.md names a commit (the `stats` tap) as the example of a stage added by its
/// own files alone, and lists them. The commit must exist and touch exactly the files the page
/// lists (a test file moved since is named where it is now: its file name is what is compared).
@Suite struct AddingAStageDocTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test func theQuotedCommitTouchesTheFilesThePageLists() throws {
        let page = try String(contentsOfFile: Self.package + "/docs/adding-a-stage.md", encoding: .utf8)
        let hash = try #require(page.firstMatch(of: #/git show ([0-9a-f]{7,40})/#)?.1, "the page quotes no commit")
        // The files the page lists: the first token of each line of its first code block that is a path.
        let block = page.components(separatedBy: "```").dropFirst().first ?? ""
        let listed = block.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }.filter { $0.contains("/") }
        #expect(listed.count >= 3, "\(listed)")
        // A copy without history (a release tarball, a shallow clone) cannot say; a full clone must.
        let git = try CLI.tool("git", ["-C", Self.package, "rev-parse", "--is-shallow-repository"])
        guard git.status == 0, git.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "false" else { return }
        let show = try CLI.tool("git", ["-C", Self.package, "show", "--format=", "--name-only", String(hash)])
        #expect(show.status == 0, "commit \(hash), quoted in docs/adding-a-stage.md, is not in the history: \(show.stderr)")
        let touched = show.stdout.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        func name(_ path: String) -> String { (path as NSString).lastPathComponent }
        #expect(touched.map(name).sorted() == listed.map(name).sorted(), "the commit touched \(touched); the page lists \(listed)")
    }
}
