import Foundation
@testable import SegnoAudio
@testable import SegnoCore
import Testing

/// What an encode writes: carried tags, `set` templates, `tags: none`, the BWF time reference
/// and iXML rate fields after a rate change.
@Suite struct TagPlanTests {
    static func context(_ tags: [TagEntry], rate: Int = 48000) -> RecordingContext {
        var c = RecordingContext(sourcePath: "/in/memo.wav", relativePath: "memo.wav", modified: Date(timeIntervalSince1970: 0),
                                 source: SourceInfo(container: "WAV", codec: "PCM_16", sampleRate: rate, channels: 1, frames: 10, sampleKind: .integer),
                                 outputRoot: "/out")
        var m = RecordingMetadata()
        for t in tags { m.add(t.key, t.value) }
        m.raw = [TagEntry("TIT2", tags.first { $0.key == "title" }?.value ?? "")]
        c.carry(m)
        return c
    }

    @Test func setReplacesCarriedValuesAndAnEmptyResultRemovesTheName() throws {
        let c = Self.context([TagEntry("title", "Memo"), TagEntry("artist", "A"), TagEntry("artist", "B"), TagEntry("encoding", "Lavf")])
        let policy = TagPolicy(set: [("artist", try PathTemplate("{tag:title} by me", isPath: false)), ("comment", try PathTemplate("", isPath: false))])
        let plan = try TagPlan(policy: policy, context: c)
        #expect(plan.tags == [TagEntry("title", "Memo"), TagEntry("artist", "Memo by me")])
        let none = try TagPlan(policy: TagPolicy(keep: false, set: [("title", try PathTemplate("{stem}", isPath: false))]), context: c)
        #expect(none.tags == [TagEntry("title", "memo")] && none.pictures.isEmpty)
    }

    @Test func aBroadcastOriginationBecomesTheDateOfOtherContainers() throws {
        var c = Self.context([TagEntry("title", "Take")])
        var m = c.metadata
        m.add("origination", "2024-05-01T09:30:12")
        c.carry(m)
        #expect(c.recorded == "2024-05-01T09:30:12Z")
        let plan = try TagPlan(policy: TagPolicy(), context: c)
        #expect(plan.value("date") == "2024-05-01T09:30:12")
        #expect(!plan.tags.contains { $0.key == "origination" })
    }

    @Test func timeReferencesAreScaledToTheNearestSample() {
        #expect(BroadcastInfo.scaled(1_728_000_000, from: 48000, to: 16000) == 576_000_000)
        #expect(BroadcastInfo.scaled(1_728_000_123, from: 48000, to: 16000) == 576_000_041)
        #expect(BroadcastInfo.scaled(3, from: 44100, to: 48000) == 3)
        #expect(BroadcastInfo.scaled(44100 * 86399, from: 44100, to: 48000) == 48000 * 86399)
        #expect(BroadcastInfo.scaled(UInt64(1) << 60, from: 48000, to: 48000) == UInt64(1) << 60)
    }

    @Test func iXMLKeepsEveryByteButTheRateFields() {
        let xml = Array("<BWFXML><SCENE>1</SCENE><SPEED><FILE_SAMPLE_RATE>48000</FILE_SAMPLE_RATE><TIMESTAMP_SAMPLE_RATE>48000</TIMESTAMP_SAMPLE_RATE></SPEED><BEXT><BWF_TIME_REFERENCE_HIGH>1</BWF_TIME_REFERENCE_HIGH><BWF_TIME_REFERENCE_LOW>3</BWF_TIME_REFERENCE_LOW></BEXT></BWFXML>".utf8)
        #expect(IXMLRate.adjusted(xml, from: 48000, to: 48000) == xml)
        let out = String(decoding: IXMLRate.adjusted(xml, from: 48000, to: 16000), as: UTF8.self)
        // (2^32 + 3) / 3 = 1431655766.33… → 1431655766 = 0x5555_5556: high 0, low 1431655766.
        #expect(out == "<BWFXML><SCENE>1</SCENE><SPEED><FILE_SAMPLE_RATE>16000</FILE_SAMPLE_RATE><TIMESTAMP_SAMPLE_RATE>48000</TIMESTAMP_SAMPLE_RATE></SPEED><BEXT><BWF_TIME_REFERENCE_HIGH>0</BWF_TIME_REFERENCE_HIGH><BWF_TIME_REFERENCE_LOW>1431655766</BWF_TIME_REFERENCE_LOW></BEXT></BWFXML>")
    }

    @Test func tagTemplatesReadNormalisedNamesAndRawKeysAndAreSafeInPaths() throws {
        let c = Self.context([TagEntry("title", "a/b: memo"), TagEntry("album", "Notes")])
        // A name SMB shares and FAT cards take too: `:` becomes `-` (issue 31 item 16).
        #expect(try PathTemplate("{tag:album}/{tag:TIT2}.flac").resolve(c) == "/out/Notes/a-b- memo.flac")
        #expect(try PathTemplate("{tag:TIT2} ({tag:missing})", isPath: false).resolveRelative(c) == "a/b: memo ()")
        #expect(throws: TemplateError.self) { try PathTemplate("{tag}.flac") }
    }

    /// Issue 31 item 16: what Windows refuses in a name (and so an SMB share or a FAT card) never
    /// comes out of a tag in a path.
    @Test func tagValuesBecomeNamesWindowsTakes() {
        #expect(PathTemplate.pathComponent(#"a?b*<c>|d"e:f\g/h"#, fallback: "x") == "abc-d'e-f-g-h")
        #expect(PathTemplate.pathComponent("notes. . ", fallback: "x") == "notes")
        #expect(PathTemplate.pathComponent("con", fallback: "x") == "con_")
        #expect(PathTemplate.pathComponent("COM1.take", fallback: "x") == "COM1_.take")
        #expect(PathTemplate.pathComponent("Concert", fallback: "x") == "Concert")
        #expect(PathTemplate.pathComponent("???", fallback: "x") == "x")
    }
}
