import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoState
import Testing

/// The core's tests use `InMemoryState` where a run uses SQLite: the same updates leave both
/// holding the same recordings, steps, failures, recipes and catalogue, so a core test's state
/// means what it would mean in a run.
@Suite struct InMemoryStateAgreesTests {
    static func id(_ n: Int64) -> FileIdentity { FileIdentity(size: 100 + n, mtimeNs: 1_700_000_000_000_000_000 + n, inode: 7 + n) }

    static func step(_ stage: String, _ output: String, source: FileIdentity) -> StepState {
        StepState(stage: stage, fingerprint: String(repeating: "f", count: 32), source: source.key, output: StepState.encodeOutputs([output]),
                  outputHash: Data(repeating: 1, count: 32), outputSize: 10, finishedAt: 1_700_000_000, detail: "{\"peak\":\"-1.0\"}")
    }

    /// Every kind of update, in the order a run and a later run send them.
    static let updates: [[StateUpdate]] = [
        [.done(path: "a.wav", identity: id(1), contentHash: Data([1, 2]), duration: 1.5,
               steps: [step("encode:{stem}.flac", "a.flac", source: id(1)), step("waveform:{stem}.json", "a.json", source: id(1))],
               recipes: ["ffff": "encode {stem}.flac"]),
         .archived(path: "a.wav", fingerprints: [:], catalog: CatalogEntry(title: "Harbour morning", tags: "gulls", name: "a.wav", recorded: "2024-05-01")),
         .failed(path: "b.wav", identity: id(2), error: "truncated", attempts: 1, recipe: "r1", failureClass: .input),
         .failed(path: "c.wav", identity: id(3), error: "disk full", attempts: 2, recipe: "r2", failureClass: .environment,
                 steps: [step("encode:{stem}.flac", "c.flac", source: id(3))]),
         .salvaged(path: "a.wav", report: "{\"frames_lost\":3}")],
        // The next run: a touched source, a failure that now succeeds without a content hash, a salvage report gone.
        [.touched(path: "a.wav", identity: id(11)),
         .done(path: "b.wav", identity: id(2), contentHash: nil, duration: 2.0, steps: [step("encode:{stem}.flac", "b.flac", source: id(2))], recipes: [:]),
         .salvaged(path: "a.wav", report: nil)],
    ]

    /// What a recording's state says, in a form both stores can be compared by.
    static func summary(_ r: RecordingState) -> String {
        let steps = r.steps.keys.sorted().map { k in "\(k)=\(r.steps[k]!.source)>\(r.steps[k]!.outputs)" }.joined(separator: ",")
        return "\(r.path) \(r.identity.key) \(r.contentHash.map { Array($0) } ?? []) \(r.duration ?? -1) \(r.status) \(r.attempts) "
            + "\(r.error ?? "-") \(r.failedRecipe ?? "-") \(r.failureClass?.rawValue ?? "-") [\(steps)]"
    }

    static func contents(_ store: any StateBackend) throws -> [String] {
        let index = try store.loadAll()
        return index.keys.sorted().map { summary(index[$0]!) }
            + (try store.failures()).map { "failure \($0.path) \($0.status) \($0.failureClass) \($0.error)" }
            + (try store.statusCounts()).sorted { $0.key < $1.key }.map { "count \($0.key)=\($0.value)" }
            + ["recipe \(try store.recipe("ffff") ?? "-")", "salvaged \(try store.salvagedRecordings().map(\.path))"]
            + (try store.search({ var q = CatalogQuery(); q.words = ["harb"]; return q }(), limit: 5)).map { "hit \($0.path) \($0.title)" }
    }

    @Test func theSameUpdatesLeaveTheSameState() throws {
        let sqlite = try StateStore.inMemory()
        let memory = InMemoryState()
        for (n, batch) in Self.updates.enumerated() {
            try sqlite.apply(batch)
            try memory.apply(batch)
            let (s, m) = (try Self.contents(sqlite), try Self.contents(memory))
            #expect(s == m, "after update batch \(n)")
            #expect(s.count > 5)
        }
        // Runs: numbered from 1, a killed one closed as such.
        for store in [sqlite as any StateBackend, memory] {
            let first = try store.startRun(spec: "spec text", specName: "memos")
            try store.finishRun(id: first, status: .done, planned: 3, done: 2, failed: 1, skipped: 0, pruned: 0)
            _ = try store.startRun(spec: "spec text", specName: "memos")
            try store.closeAbandonedRuns()
            let runs = try store.recentRuns(limit: 5)
            #expect(runs.map(\.status) == [.killed, .done] && runs.last?.id == first && runs.last?.planned == 3, "\(type(of: store))")
        }
    }

    /// `recordings(_:)`, what `find --measure` reads instead of the whole state: SQLite's query by
    /// path gives the same recordings, steps and fingerprinted taps as `loadAll`, and leaves out
    /// a path it does not hold; the in-memory state's (the protocol's default) agrees.
    @Test func recordingsAtPathsAreWhatTheWholeStateHolds() throws {
        let sqlite = try StateStore.inMemory()
        let memory = InMemoryState()
        for batch in Self.updates {
            try sqlite.apply(batch)
            try memory.apply(batch)
        }
        try sqlite.apply([.archived(path: "c.wav", fingerprints: ["fingerprint:x": AudioFingerprint(algorithm: 2, items: [1, 2, 3], duration: 1)], catalog: nil)])
        let index = try sqlite.loadAll()
        let paths = ["c.wav", "a.wav", "nowhere.wav", "a.wav"]
        let found = try sqlite.recordings(paths)
        #expect(Set(found.keys) == ["a.wav", "c.wav"])
        for (path, r) in found {
            let whole = try #require(index[path])
            #expect(Self.summary(r) == Self.summary(whole) && r.fingerprinted == whole.fingerprinted && r.id == whole.id, "\(path)")
        }
        #expect(found["c.wav"]?.fingerprinted == ["fingerprint:x"])
        #expect(try memory.recordings(paths).mapValues(Self.summary) == found.mapValues(Self.summary))
        #expect(try sqlite.recordings([]).isEmpty)
    }
}
