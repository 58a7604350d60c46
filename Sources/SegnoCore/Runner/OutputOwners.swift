import Foundation
import Synchronization

/// Which recording each output file and upload destination belongs to, so that no output is
/// ever shared by two recordings (issue 33): two memos titled "New Recording" with
/// `path: "{title}.flac"`, or two uploads to one key, no longer overwrite each other. The plan
/// catches what needs no decoding (`{stem}` collisions); this catches the rest while the run
/// goes on. One per run, shared by its workers.
package final class OutputOwners: Sendable {
    /// Keys claimed in this run → the recording (relative path) that claimed them.
    private let claims = Mutex<[String: String]>([:])
    /// The state as the run loaded it, and its outputs by key hash → the recordings listing an
    /// output with that hash (made on the first claim: a run with nothing to do never builds it;
    /// a list, so two keys sharing a hash cannot hide each other).
    private let state: StateIndex
    private let outputRoot: String
    private let recorded = Mutex<[Int: [Int32]]?>(nil)
    /// Recordings whose outputs this run pruned before its work (theirs no longer).
    private let pruned: Set<String>
    /// The hash the index is keyed by (`String.hashValue`; tests give a colliding one).
    private let hash: @Sendable (String) -> Int

    package init(state: StateIndex, outputRoot: String, pruned: Set<String> = [],
                 hash: @escaping @Sendable (String) -> Int = { $0.hashValue }) {
        self.state = state
        self.outputRoot = outputRoot
        self.pruned = pruned
        self.hash = hash
    }

    /// The key of a stored output: absolute path for a tap's file (stored relative to the output
    /// root), the URI itself for an upload.
    package func key(ofStored output: String) -> String {
        if case .relative(let rel) = StoredOutput(output) { return outputRoot + "/" + rel }
        return output
    }

    /// Claims `key` (an absolute output path, or an upload's `file://` or `s3://` URI) for the
    /// recording at `recording` (relative path). Returns the other recording that the state
    /// records it for, or that claimed it earlier in this run; nil when it is this recording's
    /// (then it stays claimed until the run ends). Called by a worker before the file is written.
    package func claim(_ key: String, for recording: String) -> String? {
        if let other = recordedOwner(key), other != recording { return other }
        return claims.withLock { c in
            if let other = c[key], other != recording { return other }
            c[key] = recording
            return nil
        }
    }

    /// The recording the state records `key` for, if any.
    private func recordedOwner(_ key: String) -> String? {
        guard !state.isEmpty else { return nil }
        let index = recorded.withLock { r -> [Int: [Int32]] in
            if let r { return r }
            var made: [Int: [Int32]] = [:]
            state.forEachOutput { i, o in
                let owner = Int32(i)
                made[self.hash(self.key(ofStored: o)), default: []].appendUnlessLast(owner)
            }
            r = made
            return made
        }
        // A hash is not proof: the recording must really list it.
        for i in index[hash(key)] ?? [] {
            let path = state.path(at: Int(i))
            guard !pruned.contains(path) else { continue }
            if state.state(at: Int(i)).steps.values.contains(where: { $0.outputs.contains { self.key(ofStored: $0) == key } }) { return path }
        }
        return nil
    }
}

extension Array where Element: Equatable {
    /// Appends `e` unless it is already the last element (one recording listing a key twice).
    fileprivate mutating func appendUnlessLast(_ e: Element) { if last != e { append(e) } }
}

/// An output or upload destination that another recording already has (`OutputOwners`): the
/// later recording fails, naming both; a spec failure (the template must tell them apart).
package struct OutputClash: Error, ClassifiedError, CustomStringConvertible {
    /// The recording that fails (relative path).
    package let recording: String
    /// What would be written: a path relative to the output root, or a URI.
    package let output: String
    package let other: String
    package let template: String
    package init(recording: String, output: String, other: String, template: String) {
        self.recording = recording
        self.output = output
        self.other = other
        self.template = template
    }
    package var failureClass: FailureClass { .spec }
    package var description: String {
        "\(AudioError.quoted(recording)) would write \(AudioError.quoted(output)), which is the output of \(AudioError.quoted(other)); add {stem} or {dir} to \(template) so that each recording has its own"
    }
}
