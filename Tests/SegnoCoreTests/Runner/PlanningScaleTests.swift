import Foundation
@testable import SegnoCore
import Testing

/// The compact forms planning keeps at 1,000,000 recordings (issue 23, item 7) give what the
/// plain forms gave: a path's prefix test across the shared root's join, a plan's stored state
/// behind one pointer. (The scanner's paths and the output collisions are SegnoKitTests'.)
@Suite struct PlanningScaleTests {
    @Test func absolutePathPrefixAcrossTheJoin() {
        let id = FileIdentity(size: 0, mtimeNs: 0, inode: 0)
        let files = [ScannedFile(relativePath: "out/a.wav", root: "/data/in", identity: id),
                     ScannedFile(relativePath: "a.wav", root: "/data/in", identity: id),
                     ScannedFile(relativePath: "a.wav", absolutePath: "/data/in/a.wav", identity: id)]
        let prefixes = ["/", "/data/", "/data/in", "/data/in/", "/data/in/out/", "/data/in/out", "/data/inn/", "/data/in/a.wav",
                        "/data/in/a.wavx", "/other/", ""]
        for f in files {
            for p in prefixes {
                #expect(f.absolutePathHasPrefix(p) == f.absolutePath.utf8.starts(with: p.utf8), "\(f.absolutePath) \(p)")
            }
        }
    }

    /// A plan's stored state is kept whole behind its pointer.
    @Test func planKeepsItsPriorState() {
        let id = FileIdentity(size: 5, mtimeNs: 6, inode: 7)
        let file = ScannedFile(relativePath: "a.wav", root: "/in", identity: id)
        var prior = RecordingState(id: 9, path: "a.wav", identity: id, contentHash: Data([1, 2]), duration: 1.5, status: .failed,
                                   attempts: 2, error: "broken", updatedAt: 3, steps: [:])
        prior.failedRecipe = "r"
        var plan = RecordingPlan(file: file, action: .skip, prior: prior)
        #expect(plan.prior?.error == "broken" && plan.prior?.attempts == 2 && plan.prior?.contentHash == Data([1, 2]) && plan.prior?.failedRecipe == "r")
        plan.prior = nil
        #expect(plan.prior == nil)
    }
}
