import Foundation
import SegnoAudio
import SegnoCore
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Job specs with every stage segno ships: every mistake in a stage's options is an error located
/// at the spec's line, column and key path. (What needs no shipped stage — top-level and input
/// keys, variables, hostile YAML, the spec file — is SegnoCoreTests' `SpecLoaderTests`.)
@Suite struct SpecLoaderTests {
    /// Specs against forTests; the smallest one holds `encode: { path: "{stem}.flac" }`.
    static let fixture = SpecFixture(registry: .forTests, stage: "encode: { path: \"{stem}.flac\" }")

    // MARK: a good spec

    @Test func everyTopLevelAndInputKeyIsRead() throws {
        let spec = try Self.fixture.load("""
            version: 1
            name: memos
            input:
              root: /data/in
              include: "**/*.wav"
              exclude: ["**/tmp/**", "**/.*"]
              settle: 1m30s
              follow_links: yes
              verify: content
            output:
              root: ../out/
            state: /var/lib/segno/memos.sqlite
            parallel: 4
            retries: 0
            stages:
              - mix: mono
              - gain: -3
              - resample: { rate: 16000, quality: fast }
              - encode: { path: "{dir}/{stem}.flac", bits: 24 }
            """)
        #expect(spec.name == "memos")
        #expect(spec.input.root == "/data/in")
        #expect(spec.input.include.map(\.text) == ["**/*.wav"])
        #expect(spec.input.exclude.map(\.text) == ["**/tmp/**", "**/.*"])
        #expect(spec.input.settle == 90)
        #expect(spec.input.followLinks)
        #expect(spec.input.verify == .content)
        #expect(spec.outputRoot == "/out")
        #expect(spec.statePath == "/var/lib/segno/memos.sqlite")
        #expect(spec.parallel == 4)
        #expect(spec.workers == 4)
        #expect(spec.retries == 0)
        #expect(spec.stages.map(\.config.name) == ["mix", "gain", "resample", "encode"])
        let resample = try #require(spec.stages[2].config as? ResampleConfig)
        #expect(resample.rate == 16000)
        #expect(resample.quality == .fast)
        let encode = try #require(spec.stages[3].config as? EncodeConfig)
        #expect(encode.bits == .b24)
        #expect(encode.pathTemplate.text == "{dir}/{stem}.flac")
    }

    @Test func oneOptionStagesTakeAShorthandOrAMapping() throws {
        let short = try Self.fixture.load(Self.fixture.withStages("  - mix: stereo\n  - gain: 6\n  - resample: 22050\n  - encode: { path: a.wav }"))
        let long = try Self.fixture.load(Self.fixture.withStages("  - mix: { to: stereo }\n  - gain: { db: 6 }\n  - resample: { rate: 22050 }\n  - encode: { path: a.wav }"))
        #expect(short.stages.map(\.config.canonical) == long.stages.map(\.config.canonical))
    }

    @Test func anchorsAndAliasesThatStaySmallAreFine() throws {
        let spec = try Self.fixture.load("""
            version: 1
            input: &dir
              root: in
            output:
              root: out
            stages:
              - resample: &rate { rate: 16000 }
              - encode: { path: "a/{stem}.wav" }
              - resample: *rate
              - encode: { path: "b/{stem}.wav" }
            """)
        #expect(spec.stages.count == 4)
        #expect((spec.stages[2].config as? ResampleConfig)?.rate == 16000)
    }

    // MARK: located errors

    @Test func unknownStageOptionNamesTheStageAndKey() throws {
        let e = try #require(Self.fixture.failure(Self.fixture.withStages("  - resample: { rate: 16000, qualty: best }\n  - encode: { path: a.wav }")))
        #expect(e.keyPath == "stages[0].resample.qualty")
        #expect(e.line == 7)
        #expect(e.column == 30)
        #expect(e.message.contains("unknown key \"qualty\" (did you mean quality? allowed: rate, quality)"))
    }

    /// Issue 12: every stage's option errors at once, each with its line; "did you mean" for a
    /// misspelt stage; the stage's key column, never column 0.
    @Test func allStageErrorsAreReportedAtOnceWithSuggestions() throws {
        let e = try #require(Self.fixture.failure(Self.fixture.withStages("""
              - normalze: -16
              - lowpass: { frequency: -5 }
              - encode: { path: a.wav }
              - gain: { db: 500 }
            """)))
        let all = [e] + e.more
        #expect(all.count == 3, "\(e)")
        #expect(all.map(\.line) == [7, 8, 10])
        #expect(all[0].message.contains("unknown stage \"normalze\" (did you mean normalize?"), "\(all[0].message)")
        #expect(all[0].column == 5, "the stage key's column")
        #expect(all.allSatisfy { $0.column > 0 })
        let lines = e.description.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines[2].hasPrefix("spec.yaml:10:"))
    }

    @Test func wrongTypesAreNamed() throws {
        let retries = try #require(Self.fixture.failure(Self.fixture.minimal + "\nretries: many\n"))
        #expect(retries.keyPath == "retries")
        #expect(retries.line == 8)
        #expect(retries.column == 10)
        #expect(retries.message.contains("expected a whole number"))

        let input = try #require(Self.fixture.failure(Self.fixture.minimal.replacingOccurrences(of: "input:\n  root: in", with: "input: in")))
        #expect(input.keyPath == "input")
        #expect(input.message.contains("expected a mapping"))
        #expect(input.line == 2)

        let stages = try #require(Self.fixture.failure("version: 1\ninput: { root: in }\noutput: { root: out }\nstages: { encode: { path: a.wav } }\n"))
        #expect(stages.keyPath == "stages")
        #expect(stages.message.contains("expected a list"))
        #expect(stages.line == 4)

        let gain = try #require(Self.fixture.failure(Self.fixture.withStages("  - gain: loud\n  - encode: { path: a.wav }")))
        #expect(gain.keyPath == "stages[0].gain")
        #expect(gain.message.contains("expected a number"))

        let follow = try #require(Self.fixture.failure(Self.fixture.minimal.replacingOccurrences(of: "root: in", with: "root: in\n  follow_links: sometimes")))
        #expect(follow.keyPath == "input.follow_links")
        #expect(follow.message.contains("expected true or false"))

        let settle = try #require(Self.fixture.failure(Self.fixture.minimal.replacingOccurrences(of: "root: in", with: "root: in\n  settle: 30 parsecs")))
        #expect(settle.keyPath == "input.settle")
        #expect(settle.message.contains("duration"))

        let bits = try #require(Self.fixture.failure(Self.fixture.withStages("  - encode: { path: a.flac, bits: 12 }")))
        #expect(bits.keyPath == "stages[0].encode.bits")
        #expect(bits.message.contains("8, 16, 24, 32, float or double"))

        let mix = try #require(Self.fixture.failure(Self.fixture.withStages("  - mix: quad\n  - encode: { path: a.wav }")))
        #expect(mix.keyPath == "stages[0].mix")
        #expect(mix.message.contains("\"quad\" is not one of mono, stereo"))

        let twoKeys = try #require(Self.fixture.failure(Self.fixture.withStages("  - mix: mono\n    gain: 3\n  - encode: { path: a.wav }")))
        #expect(twoKeys.keyPath == "stages[0]")
        #expect(twoKeys.message.contains("one-key mapping"))
    }

    @Test func outOfRangeValuesNameTheRangeAndUnit() throws {
        let rate = try #require(Self.fixture.failure(Self.fixture.withStages("  - resample: 500\n  - encode: { path: a.wav }")))
        #expect(rate.keyPath == "stages[0].resample")
        #expect((rate.line, rate.column) == (7, 15))
        #expect(rate.message == "500 Hz is out of range 1000…384000 Hz")
        #expect(rate.description == "spec.yaml:7:15: stages[0].resample: 500 Hz is out of range 1000…384000 Hz")

        let zero = try #require(Self.fixture.failure(Self.fixture.withStages("  - resample: { rate: 0 }\n  - encode: { path: a.wav }")))
        #expect(zero.keyPath == "stages[0].resample.rate")
        #expect(zero.message.contains("out of range"))

        let gain = try #require(Self.fixture.failure(Self.fixture.withStages("  - gain: { db: 60 }\n  - encode: { path: a.wav }")))
        #expect(gain.keyPath == "stages[0].gain.db")
        #expect(gain.message.contains("60 dB is out of range -96…48 dB"))

        let parallel = try #require(Self.fixture.failure(Self.fixture.minimal + "\nparallel: 0\n"))
        #expect(parallel.keyPath == "parallel")
        #expect(parallel.message.contains("out of range 1…256"))

        let retries = try #require(Self.fixture.failure(Self.fixture.minimal + "\nretries: 11\n"))
        #expect(retries.keyPath == "retries")

        let quality = try #require(Self.fixture.failure(Self.fixture.withStages("  - encode: { path: a.ogg, quality: 1.5 }")))
        #expect(quality.keyPath == "stages[0].encode.quality")

        let version = try #require(Self.fixture.failure(Self.fixture.minimal.replacingOccurrences(of: "version: 1", with: "version: 2")))
        #expect(version.keyPath == "version")
        #expect(version.message.contains("unsupported spec version 2"))
    }

    @Test func unknownStageIsNamedWithTheKnownOnes() throws {
        let e = try #require(Self.fixture.failure(Self.fixture.withStages("  - encode: { path: a.wav }\n  - lowpas: { frequency: 3000 }")))
        #expect(e.keyPath == "stages[1].lowpas")
        #expect(e.line == 8)
        #expect(e.message.contains("unknown stage \"lowpas\""))
        for known in ["mix", "gain", "resample", "encode"] { #expect(e.message.contains(known)) }
    }

    @Test func missingRequiredKeysAreNamed() throws {
        let output = try #require(Self.fixture.failure("version: 1\ninput: { root: in }\nstages: [ { encode: { path: a.wav } } ]\n"))
        #expect(output.keyPath == "")
        #expect(output.message == "missing required key \"output\"")
        #expect(output.line == 1)

        let root = try #require(Self.fixture.failure(Self.fixture.minimal.replacingOccurrences(of: "output:\n  root: out", with: "output: {}")))
        #expect(root.keyPath == "output")
        #expect(root.message == "missing required key \"root\"")
        #expect(root.line == 4)

        let path = try #require(Self.fixture.failure(Self.fixture.withStages("  - encode: { format: flac }")))
        #expect(path.keyPath == "stages[0].encode")
        #expect(path.message == "missing required key \"path\"")
        #expect(path.line == 7)
    }

    @Test func specsThatWouldDoNothingOrTooMuchAreRefused() throws {
        let noStages = try #require(Self.fixture.failure(Self.fixture.withStages("  []").replacingOccurrences(of: "stages:\n  []", with: "stages: []")))
        #expect(noStages.keyPath == "stages")
        let noTap = try #require(Self.fixture.failure(Self.fixture.withStages("  - mix: mono")))
        #expect(noTap.keyPath == "stages")
        #expect(noTap.message.contains("no tap"))
        let rootOut = try #require(Self.fixture.failure(Self.fixture.minimal.replacingOccurrences(of: "root: out", with: "root: /")))
        #expect(rootOut.keyPath == "output.root")
    }

    // MARK: environment variables

    @Test func variablesWorkInNumbersAndStageOptions() throws {
        let yaml = Self.fixture.withStages("  - resample: ${RATE:-16000}\n  - encode: { path: \"${PREFIX:-flac}/{stem}.flac\" }")
        let spec = try Self.fixture.load(yaml, env: ["RATE": "22050"])
        #expect((spec.stages[0].config as? ResampleConfig)?.rate == 22050)
        #expect((spec.stages[1].config as? EncodeConfig)?.pathTemplate.text == "flac/{stem}.flac")
        let bad = try #require(Self.fixture.failure(yaml, env: ["RATE": "fast"]))
        #expect(bad.keyPath == "stages[0].resample")
    }

    // MARK: cross-stage checks

    @Test func opusAfterAResampleToARateItCannotTakeIsRefused() throws {
        let e = try #require(Self.fixture.failure(Self.fixture.withStages("  - resample: 44100\n  - encode: { path: \"{stem}.opus\" }")))
        #expect(e.keyPath == "stages[1].encode.path")
        #expect(e.line == 8)
        #expect(e.message.contains("opus cannot be written at 44100 Hz"))
        #expect(e.message.contains("48000"))
        // The same tap is fine at 48 kHz, and (checked per recording) with no resample upstream.
        #expect(try Self.fixture.load(Self.fixture.withStages("  - resample: 48000\n  - encode: { path: \"{stem}.opus\" }")).stages.count == 2)
        #expect(try Self.fixture.load(Self.fixture.withStages("  - encode: { path: \"{stem}.opus\" }")).stages.count == 1)
        // Only the rate fixed *upstream* counts: a resample after the tap does not.
        #expect(try Self.fixture.load(Self.fixture.withStages("  - encode: { path: \"{stem}.opus\" }\n  - resample: 44100\n  - encode: { path: b.wav }")).stages.count == 3)
    }

    @Test func encodeOptionsThatContradictTheFormatAreRefused() throws {
        let lossyBits = try #require(Self.fixture.failure(Self.fixture.withStages("  - encode: { path: a.mp3, bits: 16 }")))
        #expect(lossyBits.keyPath == "stages[0].encode.bits")
        #expect(lossyBits.message.contains("lossy"))
        let flacFloat = try #require(Self.fixture.failure(Self.fixture.withStages("  - encode: { path: a.flac, bits: float }")))
        #expect(flacFloat.message.contains("flac cannot hold 32-bit float samples"), "\(flacFloat.message)")
        let noFormat = try #require(Self.fixture.failure(Self.fixture.withStages("  - encode: { path: \"{stem}.bin\" }")))
        #expect(noFormat.keyPath == "stages[0].encode.path")
        #expect(noFormat.message.contains("add format"))
        #expect(try Self.fixture.load(Self.fixture.withStages("  - encode: { path: \"{stem}.bin\", format: wav }")).stages.count == 1)
        // MP3 takes LAME's -b (kb/s) as bitrate and its -V as vbr, one at a time.
        let cbr = try #require(try Self.fixture.load(Self.fixture.withStages("  - encode: { path: a.mp3, bitrate: 96 }")).stages.first?.config as? EncodeConfig)
        #expect(cbr.bitrate == 96_000 && cbr.vbr == nil)
        let vbr = try #require(try Self.fixture.load(Self.fixture.withStages("  - encode: { path: a.mp3, vbr: 2 }")).stages.first?.config as? EncodeConfig)
        #expect(vbr.vbr == 2 && vbr.options.contains { $0 == ("vbr", "2") })
        for (stage, key, words) in [("{ path: a.mp3, bitrate: 400 }", "bitrate", "8…320"), ("{ path: a.mp3, vbr: 2, bitrate: 96 }", "vbr", "one of"),
                                    ("{ path: a.ogg, vbr: 2 }", "vbr", "mp3 only"), ("{ path: a.mp3, vbr: 12 }", "vbr", "9")] {
            let e = try #require(Self.fixture.failure(Self.fixture.withStages("  - encode: \(stage)")), "\(stage)")
            #expect(e.keyPath == "stages[0].encode.\(key)" && e.message.contains(words), "\(stage): \(e.keyPath) \(e.message)")
        }
    }

    // MARK: the examples

    /// The repository's `pipelines/` folder, found from this file (through the dev-package symlinks).
    static func pipelinesFolder() throws -> String {
        var dir = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            let candidate = dir.appendingPathComponent("pipelines")
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDir), isDir.boolValue { return candidate.path }
            dir.deleteLastPathComponent()
        }
        throw SpecTestError("no pipelines/ folder above \(#filePath)")
    }

    @Test func everyExamplePipelineValidates() throws {
        let folder = try Self.pipelinesFolder()
        let specs = try FileManager.default.contentsOfDirectory(atPath: folder)
            .filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.sorted()
        #expect(specs.contains("demo.yaml"))
        for name in specs {
            let path = folder + "/" + name
            do {
                let spec = try SpecLoader.load(path: path, registry: .forTests, environment: [:])
                let plan = PlanPrinter.describe(spec)
                for stage in spec.stages { #expect(plan.contains(stage.config.name), "\(name)") }
                #expect(spec.input.root.hasPrefix("/"), "\(name)")
            } catch {
                Issue.record("\(name) does not validate: \(error)")
            }
        }
    }
}

struct SpecTestError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

extension SpecLoaderTests {
    /// Issue 31 item 16: `normalise` is normalize's other spelling (as the prose spells it), and
    /// `encode` takes its path alone.
    @Test func normaliseIsAcceptedAndEncodeTakesAPathAlone() throws {
        let spec = try SpecLoader.parseForTests(Self.fixture.withStages("  - normalise: -16\n  - encode: \"{stem}.flac\""))
        #expect(spec.stages.map(\.config.name) == ["normalize", "encode"])
        #expect(spec.stages.last?.config.options.first { $0.0 == "path" }?.1 == "{stem}.flac")
    }
}
