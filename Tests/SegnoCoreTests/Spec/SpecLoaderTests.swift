import Foundation
import SegnoCore
import SegnoCoreTestSupport
import Testing

/// Job specs loaded with the tests' own stages (`collect`, `scale`; `StageRegistry.coreTests`):
/// the top-level and input keys, located errors, variables and hostile YAML, none of which needs a
/// stage segno ships. The stages' own options are checked in SegnoKitTests (every stage) and
/// their modules' tests.
@Suite struct SpecLoaderTests {
    /// Specs against coreTests; the smallest one holds `collect: { path: "{stem}.flac" }`.
    static let fixture = SpecFixture(registry: .coreTests, stage: "collect: { path: \"{stem}.flac\" }")

    @Test func minimalSpecGetsTheDocumentedDefaults() throws {
        let spec = try Self.fixture.load(Self.fixture.minimal)
        #expect(spec.name == "spec")
        #expect(spec.input.root == "/base/in")
        #expect(spec.outputRoot == "/base/out")
        #expect(spec.statePath == "/base/out/.segno/state.sqlite")
        #expect(spec.parallel == nil)
        #expect(spec.retries == 2)
        #expect(spec.input.settle == JobSpec.defaultSettle)
        #expect(JobSpec.defaultSettle == 10)
        #expect(spec.input.followLinks == false)
        #expect(spec.input.verify == .metadata)
        #expect(spec.input.include.map(\.text) == JobSpec.defaultInclude)
        #expect(spec.input.exclude.map(\.text) == JobSpec.defaultExclude)
        #expect(spec.stages.count == 1)
        #expect(spec.stages[0].config.name == "collect")
        #expect(spec.stages[0].keyPath == "stages[0]")
        #expect(spec.stages[0].line == 7)
    }

    @Test func parallelAutoMeansActiveProcessors() throws {
        let spec = try Self.fixture.load(Self.fixture.minimal + "\nparallel: auto\n")
        #expect(spec.parallel == nil)
        #expect(spec.workers == ProcessInfo.processInfo.activeProcessorCount)
    }

    @Test func relativePathsAreRelativeToTheSpecFolder() throws {
        let dir = NSTemporaryDirectory() + "segno-spec-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir + "/jobs", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/jobs/job.yaml"
        try Self.fixture.minimal.write(toFile: file, atomically: true, encoding: .utf8)
        let spec = try SpecLoader.load(path: file, registry: .coreTests, environment: [:])
        let base = URL(fileURLWithPath: dir).standardizedFileURL.path
        #expect(spec.input.root == base + "/jobs/in")
        #expect(spec.outputRoot == base + "/jobs/out")
        #expect(spec.name == "job")
    }

    @Test func unknownTopLevelKeyIsLocatedAtTheKey() throws {
        let e = try #require(Self.fixture.failure(Self.fixture.minimal + "\nparalel: 2\n"))
        #expect(e.line == 8)
        #expect(e.column == 1)
        #expect(e.keyPath == "paralel")
        #expect(e.message.contains("unknown key"))
        #expect(e.message.contains("parallel"), "the message lists the allowed keys: \(e.message)")
        #expect(e.description.hasPrefix("spec.yaml:8:1: paralel: unknown key"))
    }

    /// A strftime directive that does not exist is refused when the spec loads.
    @Test func invalidStrftimeDirectiveIsRefusedAtLoad() throws {
        let e = try #require(Self.fixture.failure(Self.fixture.withStages("  - collect: { path: \"{date:%Q}/{stem}.flac\" }")))
        #expect(e.message.contains("%Q is not a strftime directive"), "\(e.message)")
        #expect(throws: Never.self) { _ = try Self.fixture.load(Self.fixture.withStages("  - collect: { path: \"{date:%Y/%-m/%Ed}/{stem}.flac\" }")) }
        #expect(Self.fixture.failure(Self.fixture.withStages("  - collect: { path: \"{date:%Y%}/{stem}.flac\" }"))?.message.contains("unfinished") == true)
    }

    @Test func unknownInputKeyIsLocated() throws {
        let e = try #require(Self.fixture.failure("""
            version: 1
            input:
              root: in
              setle: 30s
            output: { root: out }
            stages: [ { collect: { path: a.wav } } ]
            """))
        #expect(e.keyPath == "input.setle")
        #expect((e.line, e.column) == (4, 3))
    }

    @Test func yamlSyntaxErrorsAreLocated() throws {
        let bracket = try #require(Self.fixture.failure("version: 1\ninput: { root: in\noutput: { root: out }\nstages: []\n"))
        #expect(bracket.message.hasPrefix("YAML: "))
        #expect(bracket.line >= 2)
        #expect(bracket.column > 0)
        #expect(bracket.description.hasPrefix("spec.yaml:\(bracket.line):\(bracket.column): YAML: "))

        let indent = try #require(Self.fixture.failure("version: 1\ninput:\n  root: in\n root: out\n"))
        #expect(indent.message.hasPrefix("YAML: "))
        #expect(indent.line == 4)

        let tab = try #require(Self.fixture.failure("version: 1\ninput:\n\troot: in\n"))
        #expect(tab.line == 3)

        let empty = try #require(Self.fixture.failure("# only a comment\n"))
        #expect(empty.message.contains("empty"))

        let list = try #require(Self.fixture.failure("- version: 1\n"))
        #expect(list.message.contains("expected a mapping"))
    }

    @Test func duplicateKeysAreRefused() throws {
        let e = try #require(Self.fixture.failure(Self.fixture.minimal + "\nversion: 1\n"))
        #expect(e.message.contains("duplicate key \"version\""), "\(e)")
        #expect((e.line, e.column) == (1, 1), "located at the first occurrence")
        #expect(!e.description.contains("\n"), "one line, not the whole document: \(e)")
        let nested = try #require(Self.fixture.failure(Self.fixture.withStages("  - scale: { factor: 2, factor: 3 }\n  - collect: { path: a.wav }")))
        #expect(nested.message.contains("duplicate key \"factor\""))
        #expect(nested.line == 7)
    }

    @Test func missingVariableWithoutDefaultIsNamed() throws {
        let yaml = Self.fixture.minimal.replacingOccurrences(of: "root: in", with: "root: ${SEGNO_TEST_INBOX}/memos")
        let e = try #require(Self.fixture.failure(yaml))
        #expect(e.keyPath == "input.root")
        #expect(e.line == 3)
        #expect(e.message.contains("SEGNO_TEST_INBOX is not set"))
        let spec = try Self.fixture.load(yaml, env: ["SEGNO_TEST_INBOX": "/srv/inbox"])
        #expect(spec.input.root == "/srv/inbox/memos")
    }

    @Test func defaultsApplyWhenTheVariableIsMissingOrEmpty() throws {
        let yaml = Self.fixture.minimal.replacingOccurrences(of: "root: out", with: "root: ${OUT:-/srv/out}/${NAME:-x}")
        #expect(try Self.fixture.load(yaml).outputRoot == "/srv/out/x")
        #expect(try Self.fixture.load(yaml, env: ["OUT": ""]).outputRoot == "/srv/out/x")
        #expect(try Self.fixture.load(yaml, env: ["OUT": "/mnt/o", "NAME": "y"]).outputRoot == "/mnt/o/y")
        let empty = Self.fixture.minimal.replacingOccurrences(of: "root: out", with: "root: out${SUFFIX:-}")
        #expect(try Self.fixture.load(empty).outputRoot == "/base/out")
    }

    @Test func malformedVariableReferencesAreErrors() throws {
        let unclosed = try #require(Self.fixture.failure(Self.fixture.minimal.replacingOccurrences(of: "root: in", with: "root: ${HOME")))
        #expect(unclosed.message.contains("unclosed ${"))
        let name = try #require(Self.fixture.failure(Self.fixture.minimal.replacingOccurrences(of: "root: in", with: "root: \"${A B}\"")))
        #expect(name.message.contains("not a variable name"))
    }

    @Test(.timeLimit(.minutes(20)))
    func billionLaughsIsRefusedBeforeItExpands() throws {
        var yaml = "a0: &a0 [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n"
        for i in 1...9 {
            let refs = Array(repeating: "*a\(i - 1)", count: 9).joined(separator: ", ")
            yaml += "a\(i): &a\(i) [\(refs)]\n"
        }
        yaml += "version: 1\ninput: { root: in }\noutput: { root: out }\nstages: *a9\n"
        let e = try #require(Self.fixture.failure(yaml))
        #expect(e.message.contains("alias bomb"), "\(e)")
    }

    @Test(.timeLimit(.minutes(20)))
    func aliasBombInsideAStageOptionIsRefused() throws {
        var yaml = "version: 1\ninput: { root: in }\noutput: { root: out }\nx0: &x0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
        for i in 1...8 { yaml += "x\(i): &x\(i) [" + Array(repeating: "*x\(i - 1)", count: 10).joined(separator: ", ") + "]\n" }
        yaml += "stages:\n  - collect: { path: a.wav, factor: *x8 }\n"
        let e = try #require(Self.fixture.failure(yaml))
        #expect(e.message.contains("alias bomb") || e.message.contains("unknown key"), "\(e)")
    }

    @Test func explicitTagsAreRefusedWithTheirPlace() throws {
        let python = try #require(Self.fixture.failure(Self.fixture.minimal + "\nname: !!python/object:os.system [\"rm -rf /\"]\n"))
        #expect(python.message.contains("tag:yaml.org,2002:python/object:os.system is not allowed"), "\(python)")
        #expect(python.line == 8)

        let local = try #require(Self.fixture.failure(Self.fixture.withStages("  - collect: !custom { path: a.wav }")))
        #expect(local.message.contains("is not allowed"))
        #expect(local.line == 7)

        let plain = try Self.fixture.load(Self.fixture.minimal.replacingOccurrences(of: "version: 1", with: "version: !!int 1"))
        #expect(plain.stages.count == 1)
    }

    @Test func specsOverOneMegabyteAreRefused() throws {
        let padding = String(repeating: "# padding padding padding padding padding padding padding\n", count: 20_000)
        let big = Self.fixture.minimal + "\n" + padding
        #expect(big.utf8.count > SpecLoader.maxBytes)
        let e = try #require(Self.fixture.failure(big))
        #expect(e.message.contains("1 MB"))

        let file = NSTemporaryDirectory() + "segno-big-\(UInt32.random(in: 0...UInt32.max)).yaml"
        try big.write(toFile: file, atomically: true, encoding: .utf8)
        defer { unlink(file) }
        #expect(throws: SpecError.self) { try SpecLoader.load(path: file, registry: .coreTests, environment: [:]) }
        do { _ = try SpecLoader.load(path: file, registry: .coreTests, environment: [:]) } catch { #expect(error.message.contains("limit")) }

        // Just under the limit is fine.
        let small = Self.fixture.minimal + "\n" + String(padding.prefix(SpecLoader.maxBytes - Self.fixture.minimal.utf8.count - 100))
        #expect(try Self.fixture.load(small).stages.count == 1)
    }

    @Test func unreadableSpecFilesAreReportedWithTheirName() throws {
        do {
            _ = try SpecLoader.load(path: "/nonexistent/segno/spec.yaml", registry: .coreTests, environment: [:])
            Issue.record("a missing spec loaded")
        } catch {
            #expect(error.file == "/nonexistent/segno/spec.yaml")
            #expect(error.message.contains("cannot read spec"))
        }
    }

    @Test func twoTapsWithTheSamePathAreRefused() throws {
        let e = try #require(Self.fixture.failure(Self.fixture.withStages("""
              - collect: { path: "{dir}/{stem}.flac" }
              - scale: { factor: 0.5 }
              - collect: { path: "{dir}/{stem}.flac" }
            """)))
        #expect(e.keyPath == "stages[2]")
        #expect(e.line == 9)
        #expect(e.message.contains("stages[0]"))
        #expect(e.message.contains("its own path"))
    }

    @Test func pathTemplatesThatLeaveTheOutputRootAreRefused() throws {
        for (path, words) in [("/tmp/{stem}.wav", "absolute"), ("../{stem}.wav", "'..'"), ("a/../../{stem}.wav", "'..'"),
                              ("~/{stem}.wav", "absolute"), ("{stemm}.wav", "unknown variable {stemm}"), ("{stem.wav", "unclosed")] {
            let e = try #require(Self.fixture.failure(Self.fixture.withStages("  - collect: { path: \"\(path)\" }")), "\(path)")
            #expect(e.keyPath == "stages[0].collect.path", "\(path)")
            #expect(e.message.contains(words), "\(path): \(e.message)")
        }
    }

    @Test func badIncludePatternsAreLocated() throws {
        let e = try #require(Self.fixture.failure(Self.fixture.minimal.replacingOccurrences(of: "root: in", with: "root: in\n  include: [\"**/*.wav\", \"*.{wav\"]")))
        #expect(e.keyPath == "input.include[1]")
        #expect(e.line == 4)
        #expect(e.message.contains("unclosed '{'"))
    }
}
