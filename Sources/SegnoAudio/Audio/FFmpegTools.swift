import Foundation
import SegnoCore

/// Where the `ffmpeg` and `ffprobe` programs are. segno never links FFmpeg's libraries (Debian
/// builds them with GPL parts); it runs the programs when they are installed.
public struct FFmpegTools: Sendable, Equatable {
    /// Absolute path of `ffmpeg`.
    public var ffmpeg: String
    /// Absolute path of `ffprobe`.
    public var ffprobe: String

    public init(ffmpeg: String, ffprobe: String) {
        self.ffmpeg = ffmpeg
        self.ffprobe = ffprobe
    }

    /// The one line printed when a file needs ffmpeg and it is missing.
    public static let installHint = "install it with apt-get install ffmpeg"

    /// Finds both programs in the folders of `searchPath` (a `PATH` value, `:`-separated), or nil
    /// when either is missing. Called once per file that needs them; costs a few `access` calls.
    public static func locate(searchPath: String?) -> FFmpegTools? {
        guard let ffmpeg = find("ffmpeg", in: searchPath), let ffprobe = find("ffprobe", in: searchPath) else { return nil }
        return FFmpegTools(ffmpeg: ffmpeg, ffprobe: ffprobe)
    }

    /// `name` in the folder of the running executable, where `swift build` and `make install` put
    /// segno's helper programs (`segno-decode`, `segno-tags`), when it is an executable file there.
    static package func besideExecutable(_ name: String) -> String? {
        guard let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        return find(name, in: (exe as NSString).deletingLastPathComponent)
    }

    /// First executable regular file named `name` in `searchPath`'s folders (empty entries and
    /// relative folders are skipped: a relative PATH entry would depend on the working folder).
    static package func find(_ name: String, in searchPath: String?) -> String? {
        guard let searchPath else { return nil }
        for dir in searchPath.split(separator: ":", omittingEmptySubsequences: true) where dir.hasPrefix("/") {
            let candidate = dir.hasSuffix("/") ? "\(dir)\(name)" : "\(dir)/\(name)"
            var st = stat()
            if stat(candidate, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG && access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }

    /// ffmpeg's first `-version` line ("ffmpeg version 5.1.6-0+deb12u1 Copyright …" shortened to
    /// "ffmpeg version 5.1.6-0+deb12u1"), or nil when it cannot be run. Used by `info --formats`.
    public func versionLine() -> String? {
        guard let child = try? ChildProcess(executable: ffmpeg, arguments: ["-hide_banner", "-version"]),
              let out = try? child.readAllStdout(limit: 1 << 20) else { return nil }
        guard child.wait().succeeded else { return nil }
        let first = String(decoding: out, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        if let r = first.range(of: " Copyright") { return String(first[..<r.lowerBound]) }
        return first.isEmpty ? nil : first
    }
}
