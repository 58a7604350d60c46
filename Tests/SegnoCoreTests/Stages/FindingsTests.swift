import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import Testing

/// Taps hand what they found to the taps that use it (`FindingTap`, `FindingsUsingTap`): a user
/// finishes after the finders of its kinds whatever their places in the chain, sees what they
/// found, and sees nothing of a finder that failed.
@Suite struct FindingsTests {
    /// Records the order of finishes and what it was given.
    final class Log: @unchecked Sendable { var finishes: [String] = [] }

    final class Finder: FindingTap {
        let name: String, log: Log, found: Findings, failing: Bool
        init(_ name: String, _ log: Log, found: Findings, failing: Bool = false) {
            self.name = name; self.log = log; self.found = found; self.failing = failing
        }
        var finds: Set<Findings.Kind> { found.kinds }
        var findings: Findings { found }
        func start(_ format: AudioFormat) throws {}
        func observe(_ block: AudioBlock) throws {}
        func finish() throws -> [ProducedFile] {
            log.finishes.append(name)
            if failing { throw AudioError.encodeFailed(path: name, detail: "injected") }
            return [ProducedFile(stage: name, path: "", values: [:])]
        }
        func abandon() {}
    }

    final class User: FindingsUsingTap {
        let name: String, log: Log, uses: Set<Findings.Kind>
        var given: Findings?
        var framesSeen = 0
        init(_ name: String, _ log: Log, uses: Set<Findings.Kind>) { self.name = name; self.log = log; self.uses = uses }
        func use(_ findings: Findings) { given = findings }
        func start(_ format: AudioFormat) throws {}
        func observe(_ block: AudioBlock) throws { framesSeen += block.frames }
        func finish() throws -> [ProducedFile] {
            log.finishes.append(name)
            return [ProducedFile(stage: name, path: "", values: [:])]
        }
        func abandon() {}
    }

    static let turns = [Findings.Turn(start: 0, end: 1.5, speaker: "speaker-1", name: "Alice"),
                        Findings.Turn(start: 1.5, end: 2, speaker: "speaker-2")]
    static let segments = [Findings.Segment(start: 0.2, end: 1.9, text: "hello there",
                                            words: [.init(start: 0.2, end: 0.6, text: "hello")])]

    func run(_ taps: [any Tap], isolating: Bool = true) throws -> [Result<[ProducedFile], any Error>] {
        try StageChain(elements: taps.map { .tap($0) }, blockFrames: 1000)
            .runEach(decoder: MemoryDecoder(Signal.sine(frames: 4410, amplitude: 0.5), channels: 1, rate: 44100),
                     isolatingTaps: isolating)
    }

    @Test func aUserBeforeItsFindersFinishesAfterThemAndSeesWhatTheyFound() throws {
        let log = Log()
        let chapters = User("chapters", log, uses: [.turns, .segments])
        let results = try run([chapters,
                               Finder("transcribe", log, found: Findings(segments: Self.segments)),
                               Finder("speakers", log, found: Findings(turns: Self.turns))])
        #expect(log.finishes == ["transcribe", "speakers", "chapters"])
        #expect(chapters.given?.turns == Self.turns)
        #expect(chapters.given?.segments == Self.segments)
        #expect(chapters.given?.pauses == nil, "no tap found pauses")
        #expect(chapters.framesSeen == 4410, "it saw the whole stream before finishing")
        // Results stay in chain order.
        #expect(try results.map { try $0.get().first?.stage } == ["chapters", "transcribe", "speakers"])
    }

    @Test func aTapThatFindsAndUsesComesBetween() throws {
        let log = Log()
        // The transcript waits for the turns and gives segments to the chapters.
        final class Transcript: FindingTap, FindingsUsingTap {
            let log: Log
            var turnsSeen: [Findings.Turn]?
            init(_ log: Log) { self.log = log }
            var finds: Set<Findings.Kind> { [.segments] }
            var uses: Set<Findings.Kind> { [.turns] }
            var findings: Findings { Findings(segments: FindingsTests.segments) }
            func use(_ findings: Findings) { turnsSeen = findings.turns }
            func start(_ format: AudioFormat) throws {}
            func observe(_ block: AudioBlock) throws {}
            func finish() throws -> [ProducedFile] { log.finishes.append("transcribe"); return [] }
            func abandon() {}
        }
        let transcript = Transcript(log)
        let chapters = User("chapters", log, uses: [.segments])
        _ = try run([chapters, transcript, Finder("speakers", log, found: Findings(turns: Self.turns))])
        #expect(log.finishes == ["speakers", "transcribe", "chapters"])
        #expect(transcript.turnsSeen == Self.turns)
        #expect(chapters.given?.segments == Self.segments)
    }

    @Test func aFinderThatFailedGivesNothingAndTheUserStillFinishes() throws {
        let log = Log()
        let user = User("chapters", log, uses: [.turns])
        let results = try run([Finder("speakers", log, found: Findings(turns: Self.turns), failing: true), user])
        #expect(user.given != nil && user.given?.turns == nil)
        #expect((try? results[0].get()) == nil, "the finder's failure is its result")
        #expect(try results[1].get().count == 1)
    }

    @Test func theFirstFinderOfAKindWins() {
        var f = Findings(turns: Self.turns)
        f.add(Findings(turns: [], pauses: [.init(start: 1, end: 2)]))
        #expect(f.turns == Self.turns)
        #expect(f.pauses == [.init(start: 1, end: 2)])
        #expect(f.kinds == [.turns, .pauses])
    }

    @Test func waitsThatMakeACycleKeepChainOrder() {
        final class Both: FindingTap, FindingsUsingTap {
            let finds: Set<Findings.Kind>, uses: Set<Findings.Kind>
            init(finds: Set<Findings.Kind>, uses: Set<Findings.Kind>) { self.finds = finds; self.uses = uses }
            var findings: Findings { Findings() }
            func use(_ findings: Findings) {}
            func start(_ format: AudioFormat) throws {}
            func observe(_ block: AudioBlock) throws {}
            func finish() throws -> [ProducedFile] { [] }
            func abandon() {}
        }
        let a = Both(finds: [.turns], uses: [.segments]), b = Both(finds: [.segments], uses: [.turns])
        #expect(findingsFinishOrder([a, b]) == [0, 1])
        // A tap waiting for nothing is ready before the cycle is broken.
        #expect(findingsFinishOrder([b, a, Both(finds: [], uses: [])]) == [2, 0, 1])
    }
}
