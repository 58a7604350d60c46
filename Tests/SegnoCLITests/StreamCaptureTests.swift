import Foundation
import SegnoCoreTestSupport
import SegnoSources
import SegnoTestSupport
import Testing

/// `segno run` with `input.streams` against a real Icecast 2 and a live HLS station on 127.0.0.1
/// (`make test` starts both: Tests/support/icecast.sh, Tests/support/hls.sh). Windows are 12 s in
/// 4 s segments to keep the suite fast.
/// Serialized: each test times events against the wall clock, and parallel tests that block
/// their threads would delay each other's timing on a small machine.
@Suite(.serialized, .enabled(if: StreamServers.isConfigured, "needs the local Icecast and HLS station (make test starts them)"))
struct StreamCaptureTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let mp3Frame = 1152.0 / 44100
    static let aacFrame = 1024.0 / 44100

    /// pipelines/radio.yaml, run as the example: two stations behind playlists whose first entry is
    /// dead (.pls and .m3u), MP3 and AAC; segments within one frame of 4 s whose wall-clock grid
    /// matches the audio; ICY titles changed mid-stream at the right offsets; each segment
    /// processed while the next records; no gaps, no temporaries.
    @Test func radioExampleRecordsIcecastAndProcessesEachSegmentDuringTheWindow() throws {
        let dir = try TempDir()
        let classic = StreamServers.mount("classic", "mp3"), news = StreamServers.mount("news", "aac")
        let f1 = try IcecastFeeder(mount: classic, codec: "mp3")
        let f2 = try IcecastFeeder(mount: news, codec: "aac", frequency: 660)
        defer { f1.stop(); f2.stop() }
        let pls = try StreamServers.servePlaylist("\(UUID().uuidString).pls",
            "[playlist]\nNumberOfEntries=2\nFile1=http://127.0.0.1:9/dead.mp3\nFile2=\(StreamServers.icecast)\(classic)\nTitle2=Classic\n")
        let m3u = try StreamServers.servePlaylist("\(UUID().uuidString).m3u",
            "#EXTM3U\n#EXTINF:-1,dead\nhttp://127.0.0.1:9/dead.aac\n#EXTINF:-1,News\n\(StreamServers.icecast)\(news)\n")
        try StreamServers.setTitle(classic, "Overture")
        let env = ["SEGNO_RADIO_CLASSIC": pls, "SEGNO_RADIO_NEWS": m3u, "SEGNO_RADIO_DURATION": "12s", "SEGNO_RADIO_SEGMENT": "4s",
                   "SEGNO_OUTPUT": dir["radio"], "SEGNO_ARCHIVE": dir["archive"]]
        let spec = Self.repo.appendingPathComponent("pipelines/radio.yaml").path
        let run = try BackgroundRun(["run", spec, "--report", dir["report.json"]], environment: env, in: dir)
        // The titles change at fixed moments of the 12 s window (the timeline is what is tested).
        Thread.sleep(until: run.started.addingTimeInterval(2.5))
        let songA = try StreamServers.setTitle(classic, "Song A")
        Thread.sleep(until: run.started.addingTimeInterval(6.5))
        let songB = try StreamServers.setTitle(classic, "Song B")
        let result = run.wait()
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir["report.json"]))) as? [String: Any]
        #expect((report?["counts"] as? [String: Any])?["done"] as? Int == 6, "\(String(describing: report?["counts"]))")

        let capture = dir["radio/captures"]
        for (station, frame) in [("classic", Self.mp3Frame), ("news", Self.aacFrame)] {
            let segs = CapturedSegment.all(capture, station: station)
            #expect(segs.count == 3, "\(station): \(segs.map(\.path))")
            for (i, s) in segs.enumerated() {
                #expect(abs(s.duration - 4) <= frame, "\(station) segment \(i): \(s.duration) s")
                #expect(abs(try s.probedDuration() - s.duration) <= frame, "\(station) segment \(i) probed")
                #expect(s.gaps.isEmpty, "\(station): \(s.gaps)")
                // The audio grid is the wall clock's: a segment is complete about 4 s after it began.
                let wall = s.finished.timeIntervalSince(s.started)
                #expect(abs(wall - s.duration) < 0.5, "\(station) segment \(i): \(s.duration) s of audio took \(wall) s")
                if i > 0 { #expect(abs(s.started.timeIntervalSince(segs[i - 1].started) - 4) <= frame + 0.05) }
                #expect((s.cue["url"] as? String)?.hasPrefix(StreamServers.icecast) == true, "the dead first entry was skipped")
            }
            #expect(abs(segs.first!.started.timeIntervalSince(run.started)) < 1.5)
            // Processed while the window was still open: the first segment's outputs exist before the last segment did.
            let stem = (segs[0].path as NSString).lastPathComponent.split(separator: ".")[0]
            let day = ((segs[0].path as NSString).deletingLastPathComponent as NSString).lastPathComponent
            let waveform = dir["radio/processed"] + "/\(station)/\(day)/\(stem).json"
            var st = stat()
            #expect(stat(waveform, &st) == 0, "\(waveform)")
            #expect(Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9 < segs.last!.finished.timeIntervalSince1970,
                    "\(station): the first segment was processed only after the window")
        }
        // Titles at their offsets (±1 s of when the admin changed them), carried into the next segment.
        let segs = CapturedSegment.all(capture, station: "classic")
        func when(_ title: String) -> Date? {
            for s in segs { if let t = s.titles.first(where: { $0.title == title && ($0.offset > 0 || s.path == segs[0].path) }) {
                return s.started.addingTimeInterval(t.offset) } }
            return nil
        }
        let a = try #require(when("Song A")), b = try #require(when("Song B"))
        #expect(abs(a.timeIntervalSince(songA)) <= 1, "Song A at \(a.timeIntervalSince(songA)) s from its update")
        #expect(abs(b.timeIntervalSince(songB)) <= 1, "Song B at \(b.timeIntervalSince(songB)) s from its update")
        #expect(segs[0].titles.first?.title == "Overture")
        #expect(segs[0].cue["title"] as? String == "classic - Overture")
        #expect(segs[2].cue["title"] as? String == "classic - Song B")
        #expect(segs[2].titles.first.map { $0.offset == 0 && $0.title == "Song B" } == true, "\(segs[2].titles)")
        // Uploaded with the title template from the cue.
        let archived = FileManager.default.enumerator(atPath: dir["archive"])?.allObjects as? [String] ?? []
        #expect(archived.filter { $0.hasSuffix(".mp3") }.count == 6, "\(archived)")
        let temps = (FileManager.default.enumerator(atPath: capture)?.allObjects as? [String] ?? []).filter { $0.contains(".segno-tmp-") }
        #expect(temps.isEmpty, "\(temps)")
        print("radio.yaml: classic durations \(segs.map(\.duration)), Song A offset error \(a.timeIntervalSince(songA)) s, Song B \(b.timeIntervalSince(songB)) s")
    }

    /// The Icecast source stops for 3 s mid-window: the capture reconnects and the gap is in the
    /// cue sidecar where it happened. A station whose server accepts but never answers fails with
    /// one line; the other still records (exit 1).
    @Test func droppedSourceIsReconnectedWithTheGapRecorded() throws {
        let dir = try TempDir()
        let mount = StreamServers.mount("gap", "mp3")
        var feeder = try IcecastFeeder(mount: mount, codec: "mp3")
        let silent = try SilentListener()
        try """
            version: 1
            input:
              streams:
                - { name: gappy, url: "\(StreamServers.icecast)\(mount)" }
                - { name: silent, url: "http://127.0.0.1:\(silent.port)/live" }
              record: { duration: 12s, segment: 4s, capture: captures, timeout: 2s }
            output:
              root: out
            stages:
              - waveform: { path: "{dir}/{stem}.json" }
            """.write(toFile: dir["spec.yaml"], atomically: true, encoding: .utf8)
        let run = try BackgroundRun(["run", dir["spec.yaml"]], environment: [:], in: dir)
        // The source drops at a fixed moment of the window and comes back 3 s later (the timeline
        // is what is tested).
        Thread.sleep(until: run.started.addingTimeInterval(4.5))
        feeder.stop()
        let dropped = Date()
        Thread.sleep(until: run.started.addingTimeInterval(7.5))
        feeder = try IcecastFeeder(mount: mount, codec: "mp3")
        defer { feeder.stop() }
        let back = Date()
        let result = run.wait()
        #expect(result.status == 1, "\(result.stderr)")
        let silentLines = result.stderrLines.filter { $0.contains("silent") }
        #expect(silentLines.count == 1 && silentLines[0].hasPrefix("segno: stream silent: http://127.0.0.1:\(silent.port)/live"), "\(result.stderr)")
        let segs = CapturedSegment.all(dir["captures"], station: "gappy")
        #expect(segs.count == 3, "\(segs.map(\.path))")
        let gaps = segs.flatMap { s in s.gaps.map { (at: s.started.addingTimeInterval($0.at), seconds: $0.seconds) } }
        let total = gaps.reduce(0) { $0 + $1.seconds }
        let outage = back.timeIntervalSince(dropped)
        // The capture finds the station again at its next attempt, at most `maxBackoff` after it
        // is back, plus a second for the connection and the first frame on a loaded machine.
        #expect(gaps.count >= 1 && total >= outage - 0.5 && total <= outage + StationRecorder.maxBackoff + 1,
                "gaps \(gaps), source was away \(outage) s")
        if let first = gaps.first { #expect(abs(first.at.timeIntervalSince(dropped)) < 1, "gap at \(first.at.timeIntervalSince(dropped)) s from the drop") }
        let audio = segs.reduce(0) { $0 + $1.duration }
        #expect(abs(audio + total - 12) < 0.3, "audio \(audio) s + gaps \(total) s")
        #expect(result.stdout.contains("3 done"), "\(result.stdout)")
        print("gap: source away \(outage) s, recorded \(gaps.map(\.seconds)) at \(gaps.map { $0.at.timeIntervalSince(dropped) }) s from the drop; audio \(audio) s")
    }

    /// HLS (master playlist, two renditions): the higher-bandwidth rendition is recorded, and the
    /// captured audio is the source without a lost or repeated segment across both HLS segment
    /// boundaries and segno's own (cross-correlated with the streamed WAV).
    @Test func hlsCaptureIsContinuous() throws {
        let dir = try TempDir()
        try """
            version: 1
            input:
              streams: [{ name: live, url: "\(StreamServers.env["HLS_TEST_URL"]!)" }]
              record: { duration: 9s, segment: 3s, capture: captures, timeout: 3s }
            output:
              root: out
            stages:
              - waveform: { path: "{dir}/{stem}.json" }
            """.write(toFile: dir["spec.yaml"], atomically: true, encoding: .utf8)
        let result = try CLI.run(try CLI.segnoPath(), ["run", dir["spec.yaml"]])
        #expect(result.status == 0, "\(result.stderr)")
        let segs = CapturedSegment.all(dir["captures"], station: "live")
        #expect(segs.count == 3, "\(segs.map(\.path))")
        #expect(segs.allSatisfy { ($0.cue["url"] as? String)?.contains("/v1/") == true }, "the 128 kb/s rendition")
        let xc = try CLI.tool("python3", [Self.repo.appendingPathComponent("Tests/support/xcorr.py").path,
                                          StreamServers.env["HLS_TEST_SOURCE"]!] + segs.map(\.path))
        #expect(xc.status == 0, "\(xc.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(xc.stdout.utf8)) as? [String: Any]
        let blocks = json?["blocks"] as? [[String: Any]] ?? []
        #expect(blocks.count >= 16)
        // The station loops its source: shifts compare modulo its period.
        let period = json?["period"] as? Double ?? 1e9
        let shifts = blocks.compactMap { b -> Double? in (b["lag"] as? Double).map { $0 - (b["at"] as? Double ?? 0) } }
            .map { remainder($0, period) }
        let peaks = blocks.compactMap { $0["peak"] as? Double }
        #expect(shifts.count == blocks.count)
        // One shift for the whole capture: within 2 ms (an AAC frame is 23 ms, an HLS segment 1 s).
        #expect((shifts.max() ?? 0) - (shifts.min() ?? 1) < 0.002, "shifts \(shifts)")
        #expect(peaks.allSatisfy { $0 > 0.8 }, "peaks \(peaks)")
        print("hls: \(blocks.count) blocks, shift \(shifts.first ?? -1) s, spread \((shifts.max() ?? 0) - (shifts.min() ?? 0)) s, min peak \(peaks.min() ?? 0)")
    }

    /// SIGTERM mid-window: the current segment is closed and renamed whole, the run exits 143, a
    /// second start meanwhile exits 75, and the next run processes what was captured.
    @Test func sigtermClosesTheSegmentForTheNextRun() throws {
        let dir = try TempDir()
        let mount = StreamServers.mount("term", "aac")
        let feeder = try IcecastFeeder(mount: mount, codec: "aac")
        defer { feeder.stop() }
        func spec(_ duration: String, segment: String = "4s") throws {
            try """
                version: 1
                input:
                  streams: [{ name: term, url: "\(StreamServers.icecast)\(mount)" }]
                  record: { duration: \(duration), segment: \(segment), capture: captures }
                output:
                  root: out
                stages:
                  - waveform: { path: "{dir}/{stem}.json" }
                """.write(toFile: dir["spec.yaml"], atomically: true, encoding: .utf8)
        }
        try spec("60s")
        let run = try BackgroundRun(["run", dir["spec.yaml"]], environment: [:], in: dir)
        // Moments of the window: the second start comes mid-segment, SIGTERM 2 s into the second
        // segment (the timeline is what is tested).
        Thread.sleep(until: run.started.addingTimeInterval(3))
        let second = try CLI.run(try CLI.segnoPath(), ["run", dir["spec.yaml"]])
        #expect(second.status == 75, "\(second.stderr)")
        Thread.sleep(until: run.started.addingTimeInterval(6))
        kill(run.process.processIdentifier, SIGTERM)
        let result = run.wait(limit: 15)
        #expect(result.status == 143, "\(result.stderr)")
        #expect(Date().timeIntervalSince(run.started) < 12)
        let segs = CapturedSegment.all(dir["captures"], station: "term")
        #expect(segs.count == 2, "\(segs.map(\.path))")
        #expect(segs.count == 2 && segs[1].duration > 1.5 && segs[1].duration < 2.5, "the second segment holds the 2 s before SIGTERM")
        let temps = (FileManager.default.enumerator(atPath: dir["captures"])?.allObjects as? [String] ?? []).filter { $0.contains(".segno-tmp-") }
        #expect(temps.isEmpty, "\(temps)")
        // The first segment was processed during the window; the next run (a short window)
        // processes the one SIGTERM closed, plus its own.
        #expect(result.stdout.contains("1 done"), "\(result.stdout)")
        try spec("2s", segment: "2s")
        let next = try CLI.run(try CLI.segnoPath(), ["run", dir["spec.yaml"], "--report", dir["report.json"]])
        #expect(next.status == 0, "\(next.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir["report.json"]))) as? [String: Any]
        let counts = report?["counts"] as? [String: Any]
        #expect(counts?["done"] as? Int == 2 && counts?["skipped"] as? Int == 1, "\(String(describing: counts))")
    }
}

extension StreamCaptureTests {
    /// `--max-time` shorter than the window ends the capture too: segments closed whole, exit 0
    /// with the time-up line, nothing left half-written.
    @Test func maxTimeEndsTheCaptureCleanly() throws {
        let dir = try TempDir()
        let mount = StreamServers.mount("maxtime", "mp3")
        let feeder = try IcecastFeeder(mount: mount, codec: "mp3")
        defer { feeder.stop() }
        try """
            version: 1
            input:
              streams: [{ name: short, url: "\(StreamServers.icecast)\(mount)" }]
              record: { duration: 60s, segment: 3s, capture: captures }
            output:
              root: out
            stages:
              - waveform: { path: "{dir}/{stem}.json" }
            """.write(toFile: dir["spec.yaml"], atomically: true, encoding: .utf8)
        let started = Date()
        let r = try CLI.run(try CLI.segnoPath(), ["run", dir["spec.yaml"], "--max-time", "5s"])
        let took = Date().timeIntervalSince(started)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(took < 9, "took \(took) s")
        #expect(r.stdout.contains("--max-time reached"), "\(r.stdout)")
        let segs = CapturedSegment.all(dir["captures"], station: "short")
        #expect(segs.count == 2 && abs(segs[0].duration - 3) <= Self.mp3Frame, "\(segs.map(\.duration))")
        let temps = (FileManager.default.enumerator(atPath: dir["captures"])?.allObjects as? [String] ?? []).filter { $0.contains(".segno-tmp-") }
        #expect(temps.isEmpty, "\(temps)")
    }
}

/// A TCP port on 127.0.0.1 that accepts connections (the kernel's backlog) and never answers.
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard ok else { close(fd); throw CLITestError("cannot listen on 127.0.0.1") }
        self.fd = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    deinit { close(fd) }
}
