import Foundation
import SegnoCore
import SegnoTestSupport
import Testing

/// Stages declare themselves (issue 29 item 3): every stage in the registry has a `segno help
/// stage` entry and a generated reference page that matches what the code generates now, its
/// example loads, its declared options are the keys the loader takes, and its declared
/// capabilities are what its config says.
@Suite struct StageDeclarationTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let pages = repo.appendingPathComponent("docs/reference/stages")
    static let declarations = StageRegistry.forTests.declarations

    /// A spec around one stage line, after an encode tap (so a transform or an upload has one).
    static func spec(with stage: String) -> String {
        """
        version: 1
        input: { root: in }
        output: { root: out }
        stages:
          - encode: { path: "{stem}.wav" }
          - \(stage)
        """
    }

    static func load(_ stage: String) throws(SpecError) -> JobSpec {
        try SpecLoader.parseForTests(spec(with: stage))
    }

    @Test(arguments: declarations.map(\.key))
    func generatedPageMatchesTheDeclaration(key: String) throws {
        let page = Self.pages.appendingPathComponent("\(key).md")
        let written = try? String(contentsOf: page, encoding: .utf8)
        let r = try CLI.segno(["help", "stage", key, "--markdown"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(written != nil, "docs/reference/stages/\(key).md is missing: run make docs")
        #expect(written == r.stdout, "docs/reference/stages/\(key).md differs from the declaration: run make docs")
    }

    @Test func stageIndexMatchesTheRegistry() throws {
        let r = try CLI.segno(["help", "stages", "--markdown"])
        #expect(r.status == 0)
        let written = try? String(contentsOf: Self.pages.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(written == r.stdout, "docs/reference/stages/README.md differs: run make docs")
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.pages.path).filter { $0.hasSuffix(".md") }
        let expected = Set(Self.declarations.map { "\($0.key).md" } + ["README.md"])
        #expect(Set(files) == expected, "pages without a stage or stages without a page")
    }

    @Test(arguments: declarations.map(\.key))
    func helpStageDescribesEveryOption(key: String) throws {
        let d = try #require(StageRegistry.forTests.declaration(key))
        let r = try CLI.segno(["help", "stage", key])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("\(key) (\(d.kind.rawValue)): \(d.summary)\n"))
        for (name, option) in d.flatOptions {
            #expect(r.stdout.contains("\n  \(name) "), "\(key): \(name) is not listed")
            #expect(r.stdout.contains(option.help), "\(key): \(name)'s help is not shown")
        }
        #expect(r.stdout.contains("  - \(d.example)\n"))
    }

    @Test func helpStagesListsEveryStage() throws {
        let r = try CLI.segno(["help", "stages"])
        #expect(r.status == 0)
        let rows = r.stdout.split(separator: "\n", omittingEmptySubsequences: false).prefix { !$0.isEmpty }.map { $0.split(separator: " ").map(String.init) }
        #expect(rows.map { $0[0] } == Self.declarations.map(\.key))
        #expect(rows.map { $0[1] } == Self.declarations.map(\.kind.rawValue))
    }

    @Test func unknownStageIsAnErrorWithADidYouMean() throws {
        let r = try CLI.segno(["help", "stage", "lowpas"])
        #expect(r.status == 2)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.hasPrefix("segno: unknown stage \"lowpas\" (did you mean lowpass? stages: "), "\(r.stderr)")
        // `help` of a command stays ArgumentParser's.
        let run = try CLI.segno(["help", "run"])
        #expect(run.status == 0 && run.stdout.contains("USAGE"))
    }

    @Test(arguments: declarations.map(\.key))
    func exampleLoadsAndHasTheDeclaredCapabilities(key: String) throws {
        let d = try #require(StageRegistry.forTests.declaration(key))
        let spec = try Self.load(d.example)
        let config = try #require(spec.stages.map(\.config).last { $0.name == key }, "\(key)'s example did not load as \(key)")
        let caps = d.capabilities
        #expect(config.kind == d.kind)
        #expect(config.changesLevel == caps.contains(.changesLevel), "\(key): changesLevel")
        #expect(config.setsLevel == caps.contains(.setsLevel), "\(key): setsLevel")
        #expect((config.fixedRate != nil) == caps.contains(.fixesRate), "\(key): fixedRate")
        #expect((config.kind == .tap) == caps.contains(.tap), "\(key): tap")
        #expect((config is any UploadStageConfig) == caps.contains(.uploads), "\(key): upload")
        #expect((config is any CompanionStages) == caps.contains(.bringsCompanions), "\(key): companions")
        #expect((config is any SourceObservingStage) == caps.contains(.observesSource), "\(key): observes the source")
        let tap = config as? any TapConfig
        #expect((tap?.storesFingerprints ?? false) == caps.contains(.storesFingerprints), "\(key): storesFingerprints")
        #expect((tap?.providesSpokenText ?? false) == caps.contains(.providesSpokenText), "\(key): providesSpokenText")
        #expect((tap?.findsKinds.contains(.turns) ?? false) == caps.contains(.findsSpeakers), "\(key): finds speakers")
        if d.kind == .tap { #expect(StageRegistry.forTests.tapKinds.contains(key), "\(key) is not a tap kind") }
    }

    /// The keys the loader accepts are the declaration's: a misspelt option is refused with the
    /// declared names as the allowed ones, in their order.
    @Test(arguments: declarations.map(\.key))
    func loaderAllowsExactlyTheDeclaredOptions(key: String) throws {
        let d = try #require(StageRegistry.forTests.declaration(key))
        let names = d.options.map(\.name)
        do {
            _ = try Self.load("\(key): { \(names[0])x: 1 }")
            Issue.record("\(key): an unknown option loaded")
        } catch {
            #expect(error.message.contains("unknown key \"\(names[0])x\" (did you mean \(names[0])? allowed: \(names.joined(separator: ", ")))"),
                    "\(error.message)")
        }
        for (name, option) in d.flatOptions where !option.fields.isEmpty {
            let fields = option.fields.map(\.name)
            let value = option.type == .list ? "[{ \(fields[0])_x: 1 }]" : "{ \(fields[0])_x: 1 }"
            do {
                _ = try Self.load("\(key): { \(name): \(value) }")
                Issue.record("\(key): an unknown key of \(name) loaded")
            } catch {
                #expect(error.message.contains("allowed: \(fields.joined(separator: ", ")))"), "\(error.message)")
            }
        }
    }

    /// An empty mapping is refused for the first required option, in declaration order.
    @Test(arguments: declarations.filter { $0.options.contains(where: \.isRequired) }.map(\.key))
    func requiredOptionsAreRequired(key: String) throws {
        let d = try #require(StageRegistry.forTests.declaration(key))
        let required = d.options.filter(\.isRequired)
        let first = try #require(required.first)
        do {
            _ = try Self.load("\(key): {}")
            Issue.record("\(key) loaded without \(first.name)")
        } catch {
            #expect(error.message.contains("missing required key \"\(first.name)\""), "\(error.message)")
        }
    }
}
