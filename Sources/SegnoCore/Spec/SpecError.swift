/// A problem with a job spec, located at the spec's file, line and column and the key's path,
/// e.g. `spec.yaml:12:20: stages[3].lowpass.frequency: 30000 Hz is above …`. Exit code 2.
public struct SpecError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The spec file.
    public var file: String
    /// 1-based line, 0 when unknown.
    public var line: Int
    /// 1-based column, 0 when unknown.
    public var column: Int
    /// Where in the document: `stages[3].lowpass.frequency`; empty for the whole document.
    public var keyPath: String
    /// What is wrong and, where possible, what would be right.
    public var message: String
    /// Further errors found in the same load (every stage's option errors are collected).
    public var more: [SpecError] = []

    public init(file: String, line: Int = 0, column: Int = 0, keyPath: String = "", message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.keyPath = keyPath
        self.message = message
    }

    public var description: String {
        var s = AudioError.quoted(file)
        if line > 0 { s += column > 0 ? ":\(line):\(column)" : ":\(line)" }
        s += ": "
        if !keyPath.isEmpty { s += keyPath + ": " }
        // One error per line, each with its own location.
        return ([s + message] + more.map(\.description)).joined(separator: "\n")
    }

    /// All errors of a load as one (`more` holds the rest); nil when `errors` is empty.
    public static func combined(_ errors: [SpecError]) -> SpecError? {
        guard var first = errors.first else { return nil }
        first.more = Array(errors.dropFirst())
        return first
    }

    /// The name in `candidates` closest to `word` by edit distance (a typo: "normalise" →
    /// "normalize"), or nil when none is within a third of the word's length (at least 1).
    public static func suggestion(for word: String, among candidates: some Sequence<String>) -> String? {
        let limit = max(1, word.count / 3)
        var best: (String, Int)?
        for c in candidates {
            let d = editDistance(word.lowercased(), c.lowercased())
            if d <= limit, d < (best?.1 ?? .max) { best = (c, d) }
        }
        return best?.0
    }

    /// Levenshtein distance (insertions, deletions, substitutions).
    static package func editDistance(_ a: String, _ b: String) -> Int {
        let x = Array(a), y = Array(b)
        if x.isEmpty { return y.count }
        var row = Array(0...y.count)
        for i in 1...x.count {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: y.count, by: 1) {
                let saved = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (x[i - 1] == y[j - 1] ? 0 : 1))
                previous = saved
            }
        }
        return row[y.count]
    }
}
