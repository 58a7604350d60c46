import Foundation
import SegnoTestSupport
import Testing

/// Issue 29: docs/reference/commands.md is every command's `--help` as the binary prints it
/// (`make docs` writes it); the page cannot drift from the code, and every command is on it.
@Suite struct CommandsPageTests {
    static let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/reference/commands.md")

    @Test func theCommandsPageIsWhatTheHelpSays() throws {
        let r = try CLI.segno(["help", "commands", "--markdown"])
        #expect(r.status == 0, "\(r.stderr)")
        let written = try? String(contentsOf: Self.page, encoding: .utf8)
        #expect(written == r.stdout, "docs/reference/commands.md differs from the --help texts: run make docs")
        // Every command segno --help lists has its section, with its own help in it.
        for name in ["run", "status", "convert", "waveform", "repair", "state rebuild"] {
            #expect(r.stdout.contains("## segno \(name)\n"), "no section for \(name)")
            let own = try CLI.segno(name.split(separator: " ").map(String.init) + ["--help"])
            let usage = own.stdout.split(separator: "\n").first { $0.hasPrefix("USAGE:") }
            #expect(usage.map { r.stdout.contains($0) } == true, "\(name)'s usage line is not on the page")
        }
    }
}
