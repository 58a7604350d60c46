import Foundation
import SegnoCoreTestSupport

/// The CLI tests' name for what their support could not make or find.
typealias CLITestError = TestSupportError

enum Audio {
    /// Standard output of `tool` (from PATH) run with `arguments`; throws when the tool is missing
    /// or fails (`what` names the job in the message).
    static func output(of tool: String, _ arguments: [String], what: String) throws -> Data {
        let r = try ProcessRunner.tool(tool, arguments)
        guard r.status == 0 else { throw CLITestError("\(tool) could not \(what)") }
        return r.stdoutData
    }
}
