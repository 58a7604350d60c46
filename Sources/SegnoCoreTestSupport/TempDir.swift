import Foundation

/// A fresh folder under the system temp dir, removed (with whatever a test put there) when the
/// value goes away. Each test makes its own.
package final class TempDir {
    /// The folder, absolute, without a trailing slash.
    package let path: String

    /// Makes the folder; `prefix` starts its name (`segno-test-XXXXXX`).
    package init(prefix: String = "segno-test") throws {
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("\(prefix)-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TestSupportError("mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        path = String(cString: made)
    }

    deinit {
        // Restore permissions a test may have removed, so the folder can be deleted.
        if let e = FileManager.default.enumerator(atPath: path) {
            while let rel = e.nextObject() as? String { chmod(self[rel], 0o755) }
        }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// `name` inside the folder.
    package subscript(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    /// File names in the folder (including hidden ones), sorted.
    package func contents() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }
}

/// Something a test needed could not be made or found (a tool, a folder, the segno program).
package struct TestSupportError: Error, CustomStringConvertible {
    package let description: String
    package init(_ d: String) { description = d }
}
