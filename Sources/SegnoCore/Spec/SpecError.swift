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

    public init(file: String, line: Int = 0, column: Int = 0, keyPath: String = "", message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.keyPath = keyPath
        self.message = message
    }

    public var description: String {
        var s = AudioError.quoted(file)
        if line > 0 { s += ":\(line):\(column)" }
        s += ": "
        if !keyPath.isEmpty { s += keyPath + ": " }
        return s + message
    }
}
