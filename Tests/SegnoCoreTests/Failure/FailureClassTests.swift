import Foundation
@testable import SegnoCore
import SegnoCoreTestSupport
import Testing

/// The one known-failure rule, and an output name refused before anything is written. (Every
/// error's class, uploads' included, is SegnoKitTests'.)
@Suite struct FailureClassTests {
    @Test func onlyInputAndSpecFailuresWithNothingChangedAreKnown() {
        let id = FileIdentity(size: 1, mtimeNs: 2, inode: 3)
        func state(_ cls: FailureClass?, status: RecordingStatus = .failed, recipe: String = "r") -> RecordingState {
            RecordingState(id: 1, path: "a", identity: id, contentHash: nil, duration: nil, status: status, attempts: 1, error: "e",
                           updatedAt: 0, steps: [:], failedRecipe: recipe, failureClass: cls)
        }
        #expect(state(.input).isKnownFailure(identity: id, recipe: "r"))
        #expect(state(.spec, status: .partial).isKnownFailure(identity: id, recipe: "r"))
        #expect(!state(.environment).isKnownFailure(identity: id, recipe: "r"))
        #expect(!state(.transient).isKnownFailure(identity: id, recipe: "r"))
        #expect(!state(.input).isKnownFailure(identity: FileIdentity(size: 1, mtimeNs: 9, inode: 3), recipe: "r"), "the file changed")
        #expect(!state(.spec).isKnownFailure(identity: id, recipe: "other"), "the spec changed")
        #expect(!state(.input, status: .done).isKnownFailure(identity: id, recipe: "r"))
    }

    @Test func outputNamesOverTheLimitAreRefusedBeforeWriting() throws {
        let dir = try TempDir()
        let name = String(repeating: "x", count: 256)
        #expect(throws: AudioError.refused(path: dir.path + "/" + name, detail: "output name too long (256 bytes, limit 255)")) {
            _ = try OutputFile(finalPath: dir.path + "/" + name)
        }
        try OutputFile.write(Array("hi".utf8), to: dir.path + "/small.txt")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["small.txt"], "no temporary left")
    }
}
