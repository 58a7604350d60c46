import Foundation

/// pipelines/demo.yaml with its fixed folders (samples, ../out/demo, the report, the upload
/// folder) moved into a test's own folder.
enum DemoSpec {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Writes the copy as `dir/demo.yaml`, outputs in `dir/out`; returns the spec and the
    /// environment a run needs.
    static func copy(into dir: String) throws -> (spec: String, environment: [String: String]) {
        let text = try String(contentsOfFile: repo.appendingPathComponent("pipelines/demo.yaml").path, encoding: .utf8)
            .replacingOccurrences(of: "root: samples", with: "root: \(repo.appendingPathComponent("pipelines/samples").path)")
            .replacingOccurrences(of: "root: ../out/demo", with: "root: \(dir)/out")
            .replacingOccurrences(of: "path: ../out/demo/report.html", with: "path: \(dir)/out/report.html")
        let spec = dir + "/demo.yaml"
        try text.write(toFile: spec, atomically: true, encoding: .utf8)
        return (spec, ["SEGNO_DEMO_UPLOAD": dir + "/out/uploaded"])
    }
}
