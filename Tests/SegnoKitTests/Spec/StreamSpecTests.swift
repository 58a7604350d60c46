import Foundation
@testable import SegnoCore
import SegnoTestSupport
import Testing

/// `input.streams` + `input.record`: what loads, and every refusal with its line and column.
@Suite struct StreamSpecTests {
    static func spec(_ input: String) -> String {
        """
        version: 1
        input:
        \(input)
        output:
          root: out
        stages:
          - waveform: { path: "{dir}/{stem}.json" }
        """
    }

    func load(_ yaml: String) throws(SpecError) -> JobSpec {
        try SpecLoader.parse(yaml, file: "spec.yaml", baseDirectory: "/base", registry: .forTests, environment: ["NEWS": "https://n.example/master.m3u8"])
    }

    @Test func streamsLoadWithDefaults() throws {
        let s = try load(Self.spec("""
              streams:
                - { name: kbs-classic, url: "http://r.example/listen.pls" }
                - { name: news, url: "${NEWS}" }
              record: { duration: 60m, segment: 15m, capture: ./captures }
            """))
        let st = try #require(s.input.streams)
        #expect(st.stations.map(\.name) == ["kbs-classic", "news"])
        #expect(st.stations[1].url.absoluteString == "https://n.example/master.m3u8")
        #expect(st.duration == 3600 && st.segment == 900 && st.timeout == 10)
        #expect(st.capture == "/base/captures" && s.input.root == "/base/captures")
        #expect(s.input.settle == 0)
        #expect(PlanPrinter.describe(s).contains("kbs-classic  http://r.example/listen.pls"))
    }

    @Test func segmentDefaultsToTheWholeWindow() throws {
        let s = try load(Self.spec("""
              streams: [{ name: a, url: "http://a.example/s" }]
              record: { duration: 30s }
            """))
        #expect(s.input.streams?.segment == 30)
        #expect(s.input.streams?.capture == "/base/captures")
    }

    @Test(arguments: [
        ("  root: in\n  streams: [{ name: a, url: \"http://a.example/\" }]\n  record: { duration: 1m }", 4, "not both"),
        ("  include: [\"*.wav\"]", 3, "needs root"),
        ("  streams: []\n  record: { duration: 1m }", 3, "no stations"),
        ("  streams: [{ name: a, url: \"ftp://a.example/\" }]\n  record: { duration: 1m }", 3, "http:// or https://"),
        ("  streams: [{ name: \"a/b\", url: \"http://a.example/\" }]\n  record: { duration: 1m }", 3, "only letters"),
        ("  streams: [{ name: a, url: \"http://a.example/\" }, { name: a, url: \"http://b.example/\" }]\n  record: { duration: 1m }", 3, "named twice"),
        ("  streams: [{ name: a, url: \"http://a.example/\" }]", 3, "needs record"),
        ("  streams: [{ name: .hidden, url: \"http://a.example/\" }]\n  record: { duration: 1m }", 3, "dot"),
        ("  streams: [{ name: a, url: \"http://a.example/\" }]\n  record: { duration: 1m, segment: 2m }", 4, "longer than duration"),
        ("  streams: [{ name: a, url: \"http://a.example/\" }]\n  record: { duration: 0s }", 4, "between 1 s and 24 h"),
        ("  streams: [{ name: a, url: \"http://a.example/\" }]\n  record: { duration: 1m, timeout: 0s }", 4, "timeout"),
        ("  streams: [{ name: a, url: \"http://a.example/\" }]\n  record: { duration: 1m, sleep: 5m }", 4, "sleep"),
        ("  root: in\n  record: { duration: 1m }", 4, "record belongs to input.streams"),
        ("  streams: [{ name: a, url: \"http://a.example/\" }]\n  record: { duration: 1m, capture: out/caps }", 3, "inside output.root"),
    ] as [(String, Int, String)])
    func refusalsNameTheirLine(_ input: String, line: Int, words: String) {
        do {
            _ = try load(Self.spec(input))
            Issue.record("loaded: \(input)")
        } catch {
            #expect(error.message.contains(words) || "\(error)".contains(words), "\(error)")
            #expect(error.line == line, "\(error)")
            #expect(!"\(error)".contains("\n"))
        }
    }
}
