/// Lines of text kept as one buffer of UTF-8 bytes and their end offsets: a dry run's plan over
/// 1,000,000 recordings (`run NAME` each) takes some 30 MB this way, not the 80 MB of an array of
/// strings (a string of more than 15 bytes is an allocation of its own). A line is made into a
/// `String` when read.
public struct TextList: Sendable, Equatable, RandomAccessCollection, ExpressibleByArrayLiteral {
    private var bytes: [UInt8] = []
    /// Where each line ends in `bytes`.
    private var ends: [Int] = []

    public init() {}
    public init(arrayLiteral lines: String...) { for l in lines { append(l) } }
    public init<S: Sequence>(_ lines: S) where S.Element == String { for l in lines { append(l) } }

    public var startIndex: Int { 0 }
    public var endIndex: Int { ends.count }
    public subscript(i: Int) -> String {
        String(decoding: bytes[(i == 0 ? 0 : ends[i - 1]) ..< ends[i]], as: UTF8.self)
    }

    public mutating func append(_ line: String) {
        bytes.append(contentsOf: line.utf8)
        ends.append(bytes.count)
    }

    public static func += (list: inout TextList, more: TextList) {
        for line in more { list.append(line) }
    }
}
