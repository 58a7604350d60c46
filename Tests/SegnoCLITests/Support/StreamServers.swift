import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport

/// The local Icecast and HLS station that `make test` starts (Tests/support/icecast.sh, hls.sh),
/// and what tests do with them: feed a mount with ffmpeg, change its title, serve a playlist.
enum StreamServers {
    static let env = ProcessInfo.processInfo.environment
    static var isConfigured: Bool {
        ["ICECAST_TEST_URL", "ICECAST_TEST_SOURCE", "ICECAST_TEST_ADMIN", "HLS_TEST_URL", "HLS_TEST_ROOT", "HLS_TEST_SOURCE"]
            .allSatisfy { env[$0].map { !$0.isEmpty } ?? false }
    }
    static var icecast: String { env["ICECAST_TEST_URL"]! }
    static var hlsBase: String { env["HLS_TEST_BASE"] ?? URL(string: env["HLS_TEST_URL"]!)!.deletingLastPathComponent().deletingLastPathComponent().absoluteString }

    /// A mount name no other test uses.
    static func mount(_ prefix: String, _ ext: String) -> String { "/\(prefix)-\(UUID().uuidString.prefix(8).lowercased()).\(ext)" }

    /// Writes `text` as a playlist the HLS server serves; returns its URL.
    static func servePlaylist(_ name: String, _ text: String) throws -> String {
        try text.write(toFile: env["HLS_TEST_ROOT"]! + "/" + name, atomically: true, encoding: .utf8)
        return hlsBase.hasSuffix("/") ? hlsBase + name : hlsBase + "/" + name
    }

    /// Sets a mount's ICY title (Icecast admin `updinfo`); returns the wall-clock time it took effect
    /// (the middle of the request).
    @discardableResult
    static func setTitle(_ mount: String, _ title: String) throws -> Date {
        let before = Date()
        let q = title.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? title
        let r = try CLI.tool("curl", ["-sf", "-m", "3", "-u", env["ICECAST_TEST_ADMIN"]!, "\(icecast)/admin/metadata?mount=\(mount)&mode=updinfo&song=\(q)"])
        let after = Date()
        guard r.status == 0 else { throw CLITestError("updinfo failed: \(r.stderr)") }
        return before.addingTimeInterval(after.timeIntervalSince(before) / 2)
    }

    /// True once Icecast lists `mount` as live.
    static func mountIsLive(_ mount: String) -> Bool {
        guard let r = try? CLI.tool("curl", ["-sf", "-m", "2", "\(icecast)/status-json.xsl"]) else { return false }
        return r.stdout.contains("\"listenurl\":\"\(icecast)\(mount)\"")
    }
}

/// An ffmpeg source feeding an Icecast mount in real time (`-re`), bounded by `-t`.
final class IcecastFeeder {
    let process = Process()
    let mount: String

    /// Starts feeding `mount` with a tone (`codec` mp3 or aac) for at most `seconds`, and waits
    /// (at most 10 s) until Icecast lists it.
    init(mount: String, codec: String, frequency: Int = 440, seconds: Int = 90) throws {
        self.mount = mount
        guard let ffmpeg = CLI.find("ffmpeg") else { throw CLITestError("ffmpeg is not installed") }
        process.executableURL = URL(fileURLWithPath: ffmpeg)
        let enc = codec == "mp3" ? ["-c:a", "libmp3lame", "-b:a", "128k", "-content_type", "audio/mpeg", "-f", "mp3"]
                                 : ["-c:a", "aac", "-b:a", "128k", "-content_type", "audio/aac", "-f", "adts"]
        process.arguments = ["-nostdin", "-hide_banner", "-loglevel", "error", "-re", "-f", "lavfi",
                             "-i", "sine=f=\(frequency):r=44100", "-t", "\(seconds)", "-ac", "1"] + enc
            + [StreamServers.env["ICECAST_TEST_SOURCE"]! + mount]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard Wait.until(timeout: 10, interval: 0.1, { StreamServers.mountIsLive(mount) }) else {
            stop()
            throw CLITestError("icecast never listed \(mount)")
        }
    }

    deinit { stop() }

    /// Kills the source at once (ffmpeg under the test runner does not stop on SIGTERM): for the
    /// listeners, the station drops.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// `segno run` in the background, its output in files, bounded by `limit` seconds (then killed).
final class BackgroundRun {
    let process = Process()
    let started: Date
    let outPath: String
    let errPath: String
    /// Signalled once when the process exits.
    private let exited = DispatchSemaphore(value: 0)

    init(_ arguments: [String], environment: [String: String], in dir: TempDir, name: String = "run") throws {
        outPath = dir["\(name).out"]
        errPath = dir["\(name).err"]
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: try CLI.segnoPath())
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, n in n }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        process.terminationHandler = { [exited] _ in exited.signal() }
        started = Date()
        try process.run()
    }

    deinit { if process.isRunning { process.interrupt(); process.terminate() } }

    /// Waits for the exit, at most `limit` seconds; returns what it did.
    func wait(limit: Double = 90) -> ProcessResult {
        if exited.wait(timeout: .now() + limit) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
        }
        process.waitUntilExit()
        return ProcessResult(status: process.terminationStatus,
                             stdoutData: FileManager.default.contents(atPath: outPath) ?? Data(),
                             stderrData: FileManager.default.contents(atPath: errPath) ?? Data())
    }
}

/// A captured segment and its cue sidecar.
struct CapturedSegment {
    let path: String
    let cue: [String: Any]
    var started: Date {
        let s = cue["started"] as? String ?? ""
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: s) ?? .distantPast
    }
    var duration: Double { cue["duration"] as? Double ?? -1 }
    var titles: [(offset: Double, title: String)] {
        (cue["titles"] as? [[String: Any]] ?? []).map { ($0["offset"] as? Double ?? -1, $0["title"] as? String ?? "") }
    }
    var gaps: [(at: Double, seconds: Double)] {
        (cue["gaps"] as? [[String: Any]] ?? []).map { ($0["at"] as? Double ?? -1, $0["seconds"] as? Double ?? -1) }
    }
    /// When the segment was renamed into place.
    var finished: Date {
        var st = stat()
        stat(path, &st)
        return Date(timeIntervalSince1970: Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9)
    }

    /// Every segment of `station` under `capture`, in time order.
    static func all(_ capture: String, station: String) -> [CapturedSegment] {
        let root = capture + "/" + station
        let files = (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".mp3") || $0.hasSuffix(".aac") }.sorted()
        return files.map { rel in
            let p = root + "/" + rel
            let cuePath = (p as NSString).deletingPathExtension + ".cue.json"
            let cue = (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: cuePath)))) as? [String: Any] ?? [:]
            return CapturedSegment(path: p, cue: cue)
        }
    }

    /// The file's duration by ffprobe's count of its audio frames (ADTS has no index, so its
    /// format duration is only an estimate from the bitrate), seconds.
    func probedDuration() throws -> Double {
        let r = try CLI.tool("ffprobe", ["-v", "error", "-count_packets", "-select_streams", "a:0",
                                         "-show_entries", "stream=codec_name,sample_rate,nb_read_packets", "-of", "csv=p=0", path])
        let f = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
        guard f.count == 3, let rate = Double(f[1]), let packets = Double(f[2]) else { return -1 }
        return packets * (f[0] == "mp3" ? 1152 : 1024) / rate
    }
}
