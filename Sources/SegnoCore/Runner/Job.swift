import Crypto
import Foundation

/// A tap of a job with what does not depend on the recording worked out once: its identity in
/// the state store, its recipe (the tap's options, every upstream transform's options, versions)
/// and the fingerprint of that recipe.
public struct JobTap: Sendable {
    /// Index in `JobSpec.stages`.
    public var index: Int
    public var config: any TapConfig
    /// "encode:{dir}/{stem}.flac": stable when other stages are added or moved.
    public var identity: String
    /// One line per upstream transform, then the tap: what the output depends on.
    public var recipe: String
    /// First 128 bits of SHA-256(recipe), hex.
    public var fingerprint: String
}

/// An upload stage of a job: which taps' files it sends, and its recipe. Its fingerprint for a
/// recording also covers the SHA-256 of every file it sends (`fingerprint(fileHashes:)`).
public struct JobUpload: Sendable {
    /// Index in `JobSpec.stages`.
    public var index: Int
    public var config: any UploadStageConfig
    /// "upload:s3://bucket/{dir}/"
    public var identity: String
    public var recipe: String
    /// Indices into `Job.taps` of the taps whose files go up, in order.
    public var sourceTaps: [Int]

    /// The fingerprint of uploading files with these digests (in `sourceTaps` order).
    public func fingerprint(fileHashes: [Data]) -> String {
        Job.fingerprint(recipe + "\n" + fileHashes.map(FileHash.hex).joined(separator: "\n"))
    }
}

/// A spec compiled for running: the taps with their fingerprints, and the uploads.
public struct Job: Sendable {
    public var spec: JobSpec
    public var taps: [JobTap]
    public var uploads: [JobUpload] = []
    /// True when a tap writes the source's pictures (their bytes are read with the tags).
    public var keepsPictures: Bool { taps.contains { $0.config.carriesPictures } }

    public init(spec: JobSpec) {
        self.spec = spec
        var taps: [JobTap] = []
        var upstream: [String] = []
        for (i, placed) in spec.stages.enumerated() {
            switch placed.config {
            case let tap as any TapConfig:
                let recipe = (["segno-recipe 1"] + upstream + ["tap " + tap.canonical]).joined(separator: "\n")
                taps.append(JobTap(index: i, config: tap, identity: "\(tap.name):\(tap.pathTemplate.text)",
                                   recipe: recipe, fingerprint: Self.fingerprint(recipe)))
            case let up as any UploadStageConfig:
                let sources = taps.indices.filter { up.files?.contains(taps[$0].config.name) ?? true }
                uploads.append(JobUpload(index: i, config: up, identity: "upload:\(up.to)",
                                         recipe: "segno-upload 1\n" + up.canonical, sourceTaps: sources))
            default:
                if placed.config.kind == .transform { upstream.append(placed.config.canonical) }
            }
        }
        self.taps = taps
        // Salvage on (or another reference) retries recordings parked as damaged; off, the
        // fingerprint is what it always was.
        let salvage = spec.input.damaged == .salvage ? ["input.damaged salvage" + (spec.input.reference.map { " reference " + $0 } ?? "")] : []
        recipeFingerprint = Self.fingerprint((taps.map(\.fingerprint) + uploads.map(\.recipe) + salvage).joined(separator: "\n"))
        readingFingerprint = Self.fingerprint((["segno-reading 1"] + salvage).joined(separator: "\n"))
        // Name taps by kind in messages, or by identity when a kind appears twice.
        var counts: [String: Int] = [:]
        for t in taps { counts[t.config.name, default: 0] += 1 }
        labels = taps.map { counts[$0.config.name]! > 1 ? $0.identity : $0.config.name }
    }

    /// Fingerprint of every tap and upload: a failure recorded with another one was made by
    /// other stages, so a fixed spec tries the recording again.
    public var recipeFingerprint: String = ""
    /// Fingerprint of how sources are read (`input.damaged`, `input.reference`) and nothing else:
    /// what an *input* failure is recorded with, so it waits until the file changes — or until
    /// salvage is turned on for it — whatever else the spec changes.
    public var readingFingerprint: String = ""

    /// What a failure of class `cls` is recorded with (`RecordingState.failedRecipe`).
    public func parkingRecipe(for cls: FailureClass) -> String { cls == .input ? readingFingerprint : recipeFingerprint }
    /// How messages name each tap: its kind ("encode"), or its identity when a kind appears twice.
    public var labels: [String] = []

    static package func fingerprint(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    /// Why `old` and `new` recipes differ, in words: "lowpass frequency 3400 → 3000", "stage added: gain db=3".
    public static func explainChange(old: String, new: String) -> String {
        let o = old.split(separator: "\n").dropFirst().map(String.init)
        let n = new.split(separator: "\n").dropFirst().map(String.init)
        func parse(_ line: String) -> (String, [(String, String)]) {
            var parts = line.split(separator: " ").map(String.init)
            if parts.first == "tap" { parts.removeFirst() }
            let head = parts.first ?? ""
            let opts = parts.dropFirst().map { p -> (String, String) in
                let kv = p.split(separator: "=", maxSplits: 1).map(String.init)
                return (kv[0], kv.count > 1 ? kv[1] : "")
            }
            return (head, opts)
        }
        var changes: [String] = []
        let count = max(o.count, n.count)
        for i in 0..<count {
            if i >= o.count { changes.append("stage added: \(n[i])"); continue }
            if i >= n.count { changes.append("stage removed: \(o[i])"); continue }
            if o[i] == n[i] { continue }
            let (oh, oo) = parse(o[i]), (nh, no) = parse(n[i])
            if oh != nh { changes.append("\(oh.split(separator: "@").first ?? "") → \(nh.split(separator: "@").first ?? "")"); continue }
            let name = nh.split(separator: "@").first.map(String.init) ?? nh
            let od = Dictionary(oo, uniquingKeysWith: { a, _ in a }), nd = Dictionary(no, uniquingKeysWith: { a, _ in a })
            for key in Set(od.keys).union(nd.keys).sorted() where od[key] != nd[key] {
                changes.append("\(name) \(key) \(od[key] ?? "(default)") → \(nd[key] ?? "(default)")")
            }
            if od == nd { changes.append("\(name) version changed") }
        }
        return changes.isEmpty ? "recipe changed" : changes.joined(separator: "; ")
    }
}
