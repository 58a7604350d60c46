import Foundation

/// Temporary files a killed run left: every file segno writes goes through `OutputFile`, whose
/// temporary names start with `OutputFile.tempPrefix`, so one walk finds them all.
enum Temporaries {
    /// Deletes `.segno-tmp-*` files under `root`. Called under the run lock, before work starts.
    static func remove(under root: String) {
        guard let e = FileManager.default.enumerator(atPath: root) else { return }
        while let rel = e.nextObject() as? String {
            if (rel as NSString).lastPathComponent.starts(with: OutputFile.tempPrefix) { unlink(root + "/" + rel) }
        }
    }
}
