import Foundation

/// What the taps of one recording found, handed from the taps that find it to the taps that use
/// it in the same pass (issues 30 and 32): the speakers tap's turns reach the transcript and the
/// chapters tap, the transcript's segments reach the chapters tap, and so on. Every time is in
/// seconds of the source, the recording's own timeline (decision 0072), whatever moved time
/// between the taps. A kind no tap found (or only a tap that failed) is nil.
public struct Findings: Sendable, Equatable {
    /// A speaker's turn: [start, end) s of the source, the speaker's label (`speaker-1`) and the
    /// name of an enrolled voice it matched, if any.
    public struct Turn: Sendable, Equatable {
        public var start: Double
        public var end: Double
        public var speaker: String
        public var name: String?
        public init(start: Double, end: Double, speaker: String, name: String? = nil) {
            self.start = start; self.end = end; self.speaker = speaker; self.name = name
        }
        /// What a reader is shown: the name when the voice is known, else the label.
        public var shown: String { name ?? speaker }
    }

    /// A word of a transcript: [start, end) s of the source.
    public struct Word: Sendable, Equatable {
        public var start: Double
        public var end: Double
        public var text: String
        public init(start: Double, end: Double, text: String) { self.start = start; self.end = end; self.text = text }
    }

    /// A transcript segment (a cue): [start, end) s of the source, its text and its words (empty
    /// when the engine gave no word times).
    public struct Segment: Sendable, Equatable {
        public var start: Double
        public var end: Double
        public var text: String
        public var words: [Word]
        public init(start: Double, end: Double, text: String, words: [Word] = []) {
            self.start = start; self.end = end; self.text = text; self.words = words
        }
    }

    /// A stretch of silence between speech: [start, end) s of the source.
    public struct Pause: Sendable, Equatable {
        public var start: Double
        public var end: Double
        public init(start: Double, end: Double) { self.start = start; self.end = end }
        public var length: Double { end - start }
    }

    /// The kinds of finding, for declaring who finds and who waits for what.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case turns, segments, pauses, chapters
    }

    public var turns: [Turn]?
    public var segments: [Segment]?
    /// The language of `segments` (ISO 639-1, as the transcript names it: "en", "de"), when known;
    /// it picks the stop words of chapter titles (`StopWords.of`).
    public var language: String?
    public var pauses: [Pause]?
    /// Chapters the `chapters` tap made (`from`), source seconds, each with its end; the encode
    /// taps embed them (decision 0082).
    public var chapters: [Chapter]?

    public init(turns: [Turn]? = nil, segments: [Segment]? = nil, language: String? = nil, pauses: [Pause]? = nil, chapters: [Chapter]? = nil) {
        self.turns = turns; self.segments = segments; self.language = language; self.pauses = pauses; self.chapters = chapters
    }

    /// The kinds this value holds.
    public var kinds: Set<Kind> {
        var k: Set<Kind> = []
        if turns != nil { k.insert(.turns) }
        if segments != nil { k.insert(.segments) }
        if pauses != nil { k.insert(.pauses) }
        if chapters != nil { k.insert(.chapters) }
        return k
    }

    /// Adds what `other` found of the kinds this value does not hold yet: the first finder of a
    /// kind (in finishing order) wins.
    public mutating func add(_ other: Findings) {
        if turns == nil { turns = other.turns }
        if segments == nil { segments = other.segments; language = other.language }
        if pauses == nil { pauses = other.pauses }
        if chapters == nil { chapters = other.chapters }
    }
}

/// A tap that finds something other taps of the same recording use (`Findings`).
/// Lifecycle: `findings` is read once, after a successful `finish`.
public protocol FindingTap: Tap {
    /// The kinds this tap finds; taps that use one of them finish after it. Read before the pass.
    var finds: Set<Findings.Kind> { get }
    /// What it found, of its kinds only. Read once after a successful `finish`.
    var findings: Findings { get }
}

/// A tap that uses what other taps of the same recording found.
/// Lifecycle: `use` once, after the last block and just before `finish`.
public protocol FindingsUsingTap: Tap {
    /// The kinds it waits for: it finishes after every tap that finds one of them (whatever their
    /// places in the chain), unless that would make a cycle. Read before the pass.
    var uses: Set<Findings.Kind> { get }
    /// What the taps that finished before it found (a kind none found, or only failed taps, is nil).
    func use(_ findings: Findings)
}

/// The order in which a chain's taps finish: chain order, except that a tap waiting for a kind
/// (`FindingsUsingTap.uses`) comes after every other tap that finds it (`FindingTap.finds`).
/// `taps` are the taps in chain order; the answer is a permutation of their indices. Where the
/// waits make a cycle, the taps of the cycle keep chain order.
public func findingsFinishOrder(_ taps: [any Tap]) -> [Int] {
    let finds = taps.map { ($0 as? any FindingTap)?.finds ?? [] }
    let uses = taps.map { ($0 as? any FindingsUsingTap)?.uses ?? [] }
    // before[j] holds the taps that must finish before tap j.
    let before: [Set<Int>] = taps.indices.map { j in
        Set(taps.indices.filter { i in i != j && !finds[i].isDisjoint(with: uses[j]) })
    }
    var order: [Int] = []
    var done = Set<Int>()
    while order.count < taps.count {
        // The first tap in chain order whose waits are all finished; on a cycle, the first left.
        let next = taps.indices.first { !done.contains($0) && before[$0].isSubset(of: done) }
            ?? taps.indices.first { !done.contains($0) }!
        order.append(next)
        done.insert(next)
    }
    return order
}
