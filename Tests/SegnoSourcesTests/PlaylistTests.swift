import Foundation
@testable import SegnoSources
import Testing

/// `.pls`, `.m3u`, `.m3u8` (plain and HLS master/media) parsing: order, relative URLs, fallbacks,
/// rendition choice, and one-line refusals.
@Suite struct PlaylistTests {
    let base = URL(string: "http://radio.example/listen/station.pls")!

    @Test func plsEntriesInNumberOrderWithRelativeURLs() throws {
        let text = """
            [playlist]
            NumberOfEntries=3
            File2=http://backup.example:8000/live.mp3
            Title2=Backup
            File1=http://dead.example:8000/live.mp3
            File3=relay.aac
            Length1=-1
            Version=2
            """
        #expect(try Playlist.parse(text, base: base) == .entries([
            URL(string: "http://dead.example:8000/live.mp3")!,
            URL(string: "http://backup.example:8000/live.mp3")!,
            URL(string: "http://radio.example/listen/relay.aac")!,
        ]))
    }

    @Test func plsWithWindowsLineEndsAndBOM() throws {
        let text = "\u{FEFF}[Playlist]\r\nFile1=http://a.example/s\r\n"
        #expect(try Playlist.parse(text, base: base) == .entries([URL(string: "http://a.example/s")!]))
    }

    @Test func m3uSkipsCommentsAndBlankLines() throws {
        let text = """
            #EXTM3U
            #EXTINF:-1,Station One
            http://one.example/stream

            # a comment
            https://two.example/stream.aac
            ftp://ignored.example/x
            """
        #expect(try Playlist.parse(text, base: base) == .entries([
            URL(string: "http://one.example/stream")!, URL(string: "https://two.example/stream.aac")!,
        ]))
    }

    @Test func plainM3U8ListIsEntriesNotHLS() throws {
        let text = "#EXTM3U\n#EXTINF:-1,라디오\nhttp://kr.example/live\n"
        #expect(try Playlist.parse(text, base: base) == .entries([URL(string: "http://kr.example/live")!]))
    }

    @Test func hlsMasterPicksHighestBandwidthAudioFirst() throws {
        let text = """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=70400,CODECS="mp4a.40.2"
            v0/index.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=140800,CODECS="mp4a.40.2"
            v1/index.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=140800,CODECS="avc1.4d401f,mp4a.40.2"
            video/index.m3u8
            """
        let master = URL(string: "https://cdn.example/news/master.m3u8")!
        guard case .hlsMaster(let v) = try Playlist.parse(text, base: master) else { Issue.record("not a master"); return }
        #expect(v.map(\.url.absoluteString) == ["https://cdn.example/news/v1/index.m3u8", "https://cdn.example/news/video/index.m3u8",
                                                "https://cdn.example/news/v0/index.m3u8"])
        #expect(v[0].bandwidth == 140800 && v[0].codecs == "mp4a.40.2")
    }

    @Test func hlsMasterAudioRenditionsComeFirst() throws {
        let text = """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="lo",NAME="low",DEFAULT=YES,URI="audio/lo.m3u8"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="hi",NAME="high, stereo",URI="audio/hi.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=800000,AUDIO="lo"
            video/lo.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=2000000,AUDIO="hi"
            video/hi.m3u8
            """
        guard case .hlsMaster(let v) = try Playlist.parse(text, base: base) else { Issue.record("not a master"); return }
        #expect(v.prefix(2).map(\.url.lastPathComponent) == ["hi.m3u8", "lo.m3u8"])
        #expect(v.prefix(2).allSatisfy { $0.url.path.contains("/audio/") })
    }

    @Test func hlsMediaPlaylistSequencesDurationsAndTitles() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:4
            #EXT-X-MEDIA-SEQUENCE:120
            #EXTINF:3.998,Morning News
            seg120.ts
            #EXTINF:4.0,
            seg121.ts
            """
        guard case .hlsMedia(let m) = try Playlist.parse(text, base: URL(string: "http://h.example/a/index.m3u8")!) else {
            Issue.record("not a media playlist"); return
        }
        #expect(m.targetDuration == 4 && !m.ended)
        #expect(m.segments.map(\.sequence) == [120, 121])
        #expect(m.segments.map(\.title) == ["Morning News", nil])
        #expect(m.segments[0].duration == 3.998)
        #expect(m.segments[1].url.absoluteString == "http://h.example/a/seg121.ts")
    }

    @Test func unsupportedHLSAndEmptyPlaylistsAreOneLineErrors() {
        for (text, words) in [
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:2,\na.m4s\n", "fragmented MP4"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXTINF:2,\na.ts\n", "encrypted"),
            ("[playlist]\nNumberOfEntries=0\n", "no stream URL"),
            ("#EXTM3U\n# nothing\n", "no stream URL"),
        ] {
            do {
                _ = try Playlist.parse(text, base: base)
                Issue.record("accepted: \(text)")
            } catch {
                #expect("\(error)".contains(words), "\(error)")
                #expect(!"\(error)".contains("\n"))
            }
        }
    }

    @Test func playlistOrAudioByContentTypeThenExtension() {
        let u = URL(string: "http://x.example/live")!
        #expect(Playlist.isPlaylist(contentType: "audio/x-scpls", url: u))
        #expect(Playlist.isPlaylist(contentType: "application/vnd.apple.mpegurl; charset=utf-8", url: u))
        #expect(!Playlist.isPlaylist(contentType: "audio/mpeg", url: URL(string: "http://x.example/live.m3u")!))
        #expect(Playlist.isPlaylist(contentType: "text/plain", url: URL(string: "http://x.example/live.pls")!))
        #expect(!Playlist.isPlaylist(contentType: "application/octet-stream", url: u))
    }
}
