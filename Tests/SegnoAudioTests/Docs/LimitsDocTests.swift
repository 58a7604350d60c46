import Foundation
@testable import SegnoAudio
@testable import SegnoCore
import Testing

/// One number, one constant: docs/reference/limits.md names the constant behind each limit, and
/// its row must quote the constant's value as the code has it.
@Suite struct LimitsDocTests {
    static let limits = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/reference/limits.md").path

    /// "1,000", "16 MiB", "192 MiB": how the page writes a count or a size.
    static func written(_ n: Int, bytes: Bool) -> String {
        if bytes, n % (1 << 20) == 0 { return "\(n >> 20) MiB" }
        let f = NumberFormatter()
        f.numberStyle = .decimal
        f.groupingSeparator = ","
        f.usesGroupingSeparator = true
        return f.string(from: NSNumber(value: n)) ?? "\(n)"
    }

    @Test func everyLimitOnThePageIsTheCodesConstant() throws {
        let page = try String(contentsOfFile: Self.limits, encoding: .utf8)
        let constants: [(String, Int, Bool)] = [
            ("TagLimits.readerMemory", TagLimits.readerMemory, true),
            ("TagLimits.readerSeconds", TagLimits.readerSeconds, false),
            ("TagLimits.valueBytes", TagLimits.valueBytes, true),
            ("TagLimits.values", TagLimits.values, false),
            ("TagLimits.totalBytes", TagLimits.totalBytes, true),
            ("TagReader.pictureLimit", TagReader.pictureLimit, true),
            ("SpecContext.nodeBudget", SpecContext.nodeBudget, false),
            ("OutputFile.nameMax", OutputFile.nameMax, false),
            ("TagPlan.flacBlockLimit", TagPlan.flacBlockLimit + 1, true),
            ("TagPlan.id3v2TagLimit", TagPlan.id3v2TagLimit + 1, true),
        ]
        for (name, value, bytes) in constants {
            let row = page.split(separator: "\n").first { $0.contains("`\(name)`") }
            #expect(row != nil, "limits.md names \(name)")
            let text = Self.written(value, bytes: bytes)
            #expect(row?.contains(text) == true, "limits.md's row for \(name) says \(text): \(row ?? "")")
        }
    }
}
