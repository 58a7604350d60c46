import Foundation
@testable import SegnoCore
import Testing

/// Issue 33: `OutputOwners` names the recording an output belongs to, from the state and from
/// this run's claims; keys that share a hash never hide each other.
@Suite struct OutputOwnersTests {
    static let identity = FileIdentity(size: 1, mtimeNs: 2, inode: 3)

    static func done(_ path: String, outputs: [String]) -> RecordingState {
        let json = "[" + outputs.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        let step = StepState(stage: "encode:x", fingerprint: "fp", source: identity.key, output: json,
                             outputHash: Data(), outputSize: 1, finishedAt: 1, detail: nil)
        return RecordingState(id: 1, path: path, identity: identity, contentHash: nil, duration: nil, status: .done,
                              attempts: 0, error: nil, updatedAt: 1, steps: ["encode:x": step])
    }

    static let state = StateIndex([
        "a.wav": done("a.wav", outputs: ["New Recording.flac", "a.json"]),
        "b.wav": done("b.wav", outputs: ["b.flac", "s3://bucket/memos/b.flac"]),
    ])

    @Test(arguments: [false, true])
    func theRecordedOwnerAndThisRunsClaimsAreKept(everyHashCollides: Bool) {
        let owners = everyHashCollides
            ? OutputOwners(state: Self.state, outputRoot: "/out", hash: { _ in 7 })
            : OutputOwners(state: Self.state, outputRoot: "/out")
        // Recorded outputs belong to their recording, relative ones under the output root.
        #expect(owners.claim("/out/New Recording.flac", for: "c.wav") == "a.wav")
        #expect(owners.claim("/out/New Recording.flac", for: "a.wav") == nil)
        #expect(owners.claim("s3://bucket/memos/b.flac", for: "a.wav") == "b.wav")
        #expect(owners.claim("/out/b.flac", for: "b.wav") == nil)
        // A key nobody recorded goes to the first to claim it in this run.
        #expect(owners.claim("/out/x.flac", for: "c.wav") == nil)
        #expect(owners.claim("/out/x.flac", for: "d.wav") == "c.wav")
        #expect(owners.claim("/out/x.flac", for: "c.wav") == nil)
    }

    @Test func aPrunedRecordingsOutputsAreFreeAgain() {
        let owners = OutputOwners(state: Self.state, outputRoot: "/out", pruned: ["a.wav"], hash: { _ in 7 })
        #expect(owners.claim("/out/New Recording.flac", for: "c.wav") == nil)
        #expect(owners.claim("/out/b.flac", for: "c.wav") == "b.wav", "a pruned neighbour under one hash does not hide b's")
    }
}
