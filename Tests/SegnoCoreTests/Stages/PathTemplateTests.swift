import Foundation
import SegnoCore
import Testing

@Suite struct PathTemplateTests {
    /// 2024-03-05 23:59:30 UTC.
    static let modified = Date(timeIntervalSince1970: 1_709_683_170)

    func context(_ relativePath: String, frames: Int = 88200, rate: Int = 44100, root: String = "/out") -> RecordingContext {
        RecordingContext(sourcePath: "/in/" + relativePath, relativePath: relativePath, modified: Self.modified,
                         source: SourceInfo(container: "WAV", codec: "PCM_16", sampleRate: rate, channels: 2,
                                            frames: frames, sampleKind: .integer),
                         outputRoot: root)
    }

    func resolve(_ template: String, _ relativePath: String, root: String = "/out") throws -> String {
        try PathTemplate(template).resolve(context(relativePath, root: root))
    }

    @Test func variables() throws {
        let rel = "2024/march/memo 1.take.m4a"
        #expect(try resolve("{stem}.flac", rel) == "/out/memo 1.take.flac")
        #expect(try resolve("{name}", rel) == "/out/memo 1.take.m4a")
        #expect(try resolve("{stem}-{ext}.wav", rel) == "/out/memo 1.take-m4a.wav")
        #expect(try resolve("{dir}/{stem}.wav", rel) == "/out/2024/march/memo 1.take.wav")
        #expect(try resolve("copy/{relpath}", rel) == "/out/copy/2024/march/memo 1.take.m4a")
        #expect(try resolve("{date:%Y/%m/%d}/{stem}.wav", rel) == "/out/2024/03/05/memo 1.take.wav")
        #expect(try resolve("{date}/{stem}.wav", rel) == "/out/2024-03-05/memo 1.take.wav")
        #expect(try resolve("{stem}-{duration}s-{rate}-{channels}.wav", rel) == "/out/memo 1.take-2.000s-44100-2.wav")
    }

    @Test func durationHasThreeDecimals() throws {
        let c = context("a.wav", frames: 1, rate: 8000)
        #expect(try PathTemplate("{duration}.txt").resolve(c) == "/out/0.000.txt")
        let d = context("a.wav", frames: 12345, rate: 8000)
        #expect(try PathTemplate("{duration}.txt").resolve(d) == "/out/1.543.txt")
    }

    @Test func topLevelFileHasAnEmptyDir() throws {
        #expect(try resolve("{dir}/{stem}.flac", "memo.wav") == "/out/memo.flac")
        #expect(try resolve("./x/{stem}.flac", "memo.wav") == "/out/x/memo.flac")
        #expect(try resolve("{stem}.flac", "memo.wav", root: "/out/") == "/out/memo.flac")
    }

    @Test func namesWithoutOrWithOddExtensions() throws {
        #expect(try resolve("{stem}|{ext}", "README") == "/out/README|")
        #expect(try resolve("{stem}|{ext}", ".hidden") == "/out/.hidden|")
        #expect(try resolve("{stem}|{ext}", "a.b.c") == "/out/a.b|c")
    }

    @Test(arguments: ["/abs/{stem}.wav", "~/{stem}.wav", "../{stem}.wav", "a/../../{stem}.wav", "{dir}/../x.wav", ".."])
    func refusesPathsThatLeaveTheRoot(template: String) {
        let e = #expect(throws: TemplateError.self) { try PathTemplate(template) }
        #expect(e?.description.contains(template) == true, "\(e?.description ?? "")")
    }

    @Test(arguments: ["{stm}.wav", "{date:%Y}/{nope}", "{stem:%Y}.wav", "{stem.wav", "stem}.wav", ""])
    func refusesUnknownVariablesAndBadSyntax(template: String) {
        #expect(throws: TemplateError.self) { try PathTemplate(template) }
    }

    @Test func unknownVariableMessageListsTheKnownOnes() {
        let e = #expect(throws: TemplateError.self) { try PathTemplate("{stm}.wav") }
        #expect(e?.description.contains("{stm}") == true)
        #expect(e?.description.contains("{stem}") == true)
    }

    @Test func extraVariablesOfAStage() throws {
        let t = try PathTemplate("{stem}-{zoom}.json", extraVariables: ["zoom"])
        #expect(t.uses("zoom") && !t.uses("dir"))
        var c = context("a.wav")
        #expect(throws: TemplateError.self) { try t.resolve(c) }
        c.extra["zoom"] = "256"
        #expect(try t.resolve(c) == "/out/a-256.json")
    }

    /// A file named "...wav" has stem "..": used as a folder it would climb out of the root.
    @Test func stemOfDotDotCannotEscape() throws {
        let c = context("...wav")
        #expect(c.stem == "..")
        #expect(c.ext == "wav")
        #expect(throws: TemplateError.self) { try PathTemplate("{stem}/peaks.json").resolve(c) }
        #expect(throws: TemplateError.self) { try PathTemplate("{stem}").resolve(c) }
        #expect(throws: TemplateError.self) { try PathTemplate("x/{stem}/{stem}/y.wav").resolve(c) }
        // As part of a longer name it is harmless.
        #expect(try PathTemplate("{stem}.flac").resolve(c) == "/out/...flac")
    }

    @Test func hostileSourceNamesStayInsideTheRoot() throws {
        for rel in ["../../etc/passwd", "a/../../b.wav", "./../x.wav"] {
            let c = context(rel)
            for template in ["{relpath}", "{dir}/{name}", "{dir}/{stem}.flac"] {
                switch Result(catching: { () throws(TemplateError) -> String in try PathTemplate(template).resolve(c) }) {
                case .success(let path):
                    #expect(path.hasPrefix("/out/") && !path.split(separator: "/").contains(".."), "\(template) on \(rel) → \(path)")
                case .failure:
                    break  // refusing is fine
                }
            }
        }
    }

    @Test func resultMustNameAFile() {
        #expect(throws: TemplateError.self) { try PathTemplate("{dir}").resolve(context("top.wav")) }
        #expect(throws: TemplateError.self) { try PathTemplate("x/").resolve(context("top.wav")) }
    }

    @Test func dateIsUTC() throws {
        // 23:59:30 UTC is already the next day east of Greenwich; the template must not care.
        #expect(try resolve("{date:%Y-%m-%dT%H:%M:%S}.txt", "a.wav") == "/out/2024-03-05T23:59:30.txt")
    }
}
