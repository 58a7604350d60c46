import Foundation
import SegnoCore
import SegnoTestSupport
import Testing

/// Issue 22's wording: the overlap error says which output.root works (outside input.root, or a
/// subfolder of it). The rest of issue 22's wording is the core's (SegnoCoreTests' WordingTests).
@Suite struct WordingTests {
    @Test func theOverlapErrorSaysWhichOutputRootWorks() throws {
        let text = "version: 1\ninput: { root: /r/in }\noutput: { root: /r }\nstages:\n  - encode: { path: \"in/{stem}.wav\" }\n"
        do {
            _ = try SpecLoader.parse(text, file: "t.yaml", baseDirectory: "/r", registry: .forTests)
            Issue.record("the overlap was accepted")
        } catch {
            let m = "\(error)"
            #expect(m.contains("outside input.root or a subfolder of it") && !m.contains("(or inside it)"), "\(m)")
        }
    }
}
