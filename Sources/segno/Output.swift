import Foundation
import SegnoCore

/// Unbuffered line output to stdout/stderr (safe from any thread).
struct FileHandleOutput {
    let fd: Int32
    static let standardError = FileHandleOutput(fd: 2)
    static let standardOutput = FileHandleOutput(fd: 1)

    func write(_ s: String) {
        var bytes = Array(s.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Foundation.write(fd, $0.baseAddress! + off, $0.count - off) }
            if n <= 0 { break }
            off += n
        }
    }
}

/// Standard output, each line through the one escaping rule (`printable`).
func printOut(_ s: String) { FileHandleOutput.standardOutput.write(printable(s) + "\n") }

/// `s` with each of its lines as `AudioError.quoted` writes them: whatever text reaches a line
/// (a title, a transcript, an error built from tags), no ESC sequence, carriage return or bidi
/// override gets to the terminal. Lines stay lines: a value that must not add one (an item of a
/// list) is quoted where it is put into the line.
func printable(_ s: String) -> String {
    s.split(separator: "\n", omittingEmptySubsequences: false).map { AudioError.quoted(String($0)) }.joined(separator: "\n")
}

/// Writes `value` as one line of JSON to standard output, every byte of a name that is not UTF-8
/// written as `\xe9` (`JSONValue.escapingFileNameBytes`): what every `--json` of segno prints.
/// JSON escapes every character the one rule (`printable`) would, as `\u` escapes that keep it
/// valid JSON, so it is written as it is.
func printJSON(_ value: JSONValue) { FileHandleOutput.standardOutput.write(value.escapingFileNameBytes().serialized() + "\n") }

/// Writes a line of JSON made elsewhere (`FileInfo.json`) as `printJSON` would: JSON escapes
/// control characters already; a byte of a name that is not UTF-8 becomes `\\xe9` (an escaped
/// backslash, so the line stays valid JSON).
func printJSONLine(_ line: String) {
    guard FileNameBytes.holdsBytes(line) else { FileHandleOutput.standardOutput.write(line + "\n"); return }
    var out = ""
    for scalar in line.unicodeScalars {
        if FileNameBytes.isByte(scalar) { out += FileNameBytes.escaped(String(scalar)).replacingOccurrences(of: "\\", with: "\\\\") }
        else { out.unicodeScalars.append(scalar) }
    }
    FileHandleOutput.standardOutput.write(out + "\n")
}

/// The folder holding `path` when it does not exist (one-off commands create none, as SoX and
/// ffmpeg: a typo in a folder name is an error, not a new tree); nil when it exists.
func missingFolder(of path: String) -> String? {
    let dir = (path as NSString).deletingLastPathComponent
    if dir.isEmpty || FileNameBytes.isDirectory(dir) { return nil }
    return dir
}
