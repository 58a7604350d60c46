import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Headless Chromium (Debian `chromium`, installed by `make test-deps`) loading a report page.
enum Chromium {
    /// What a loaded page showed.
    struct Page {
        /// The DOM after the page's script ran (its embedded data removed by the `#check` mode).
        var dom: String
        /// The page's own account of what it drew (`<pre id="segno-check">`).
        var check: [String: Any]
        /// Chromium's log (`--enable-logging=stderr`): console messages appear as `CONSOLE(…)`.
        var log: String

        /// The integer in `<span id="ID">N</span>`.
        func number(id: String) -> Int? {
            guard let r = dom.range(of: "id=\"\(id)\">") else { return nil }
            return Int(dom[r.upperBound...].prefix { $0.isNumber })
        }

        /// Every `href` and `src` value of the elements the script made, unescaped.
        func links(_ attribute: String) -> [String] {
            var out: [String] = []
            var rest = dom[...]
            while let r = rest.range(of: " \(attribute)=\"") {
                let value = rest[r.upperBound...].prefix { $0 != "\"" }
                out.append(String(value).replacingOccurrences(of: "&amp;", with: "&"))
                rest = rest[r.upperBound...]
            }
            return out
        }

        /// Console lines from the page (errors, warnings, logs); the page itself writes none.
        var consoleLines: [String] { log.split(separator: "\n").filter { $0.contains("CONSOLE") || $0.contains("Uncaught") }.map(String.init) }
    }

    static func executable() throws -> String {
        guard let p = CLI.find("chromium") ?? CLI.find("chromium-browser") else {
            throw CLITestError("chromium is not installed (make test-deps; apt-get install chromium)")
        }
        return p
    }

    static func common(profile: String) -> [String] {
        ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars", "--mute-audio",
         "--user-data-dir=\(profile)", "--enable-logging=stderr", "--v=0"]
    }

    /// Loads `file` with `#check`, lets the script run, and returns the DOM and its self-check;
    /// `width` sets the window's width in CSS pixels (Chromium's default when nil).
    static func load(_ file: String, width: Int? = nil) throws -> Page {
        let profile = try TempDir()
        let size = width.map { ["--window-size=\($0),900"] } ?? []
        let r = try CLI.run(try executable(), common(profile: profile.path) + size + ["--dump-dom", URL(fileURLWithPath: file).absoluteString + "#check"])
        guard let start = r.stdout.range(of: "<pre id=\"segno-check\""), let open = r.stdout[start.upperBound...].firstIndex(of: ">"),
              let end = r.stdout[open...].range(of: "</pre>") else {
            throw CLITestError("the page wrote no self-check (status \(r.status)): \(r.stderr.suffix(2000))")
        }
        let text = String(r.stdout[r.stdout.index(after: open)..<end.lowerBound])
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&amp;", with: "&")
        return Page(dom: r.stdout, check: try RunWorkspace.json(text), log: r.stderr)
    }

    /// Takes a screenshot of `file` at `width` × `height` into `png`.
    static func screenshot(_ file: String, to png: String, width: Int = 1400, height: Int = 900) throws {
        let profile = try TempDir()
        let r = try CLI.run(try executable(), common(profile: profile.path) + ["--window-size=\(width),\(height)", "--screenshot=\(png)",
                                                                                 URL(fileURLWithPath: file).absoluteString])
        guard FileManager.default.fileExists(atPath: png) else { throw CLITestError("no screenshot (status \(r.status)): \(r.stderr.suffix(2000))") }
    }
}
