import Foundation
@testable import SegnoCore
import Testing

/// Names are bytes: a name that is not UTF-8 comes back to the same bytes, and Python's own
/// `os.fsencode(os.fsdecode(…))` (surrogateescape) agrees on which bytes are not UTF-8.
@Suite struct FileNameBytesTests {
    @Test func utf8NamesAreUnchanged() throws {
        for name in ["memo.wav", "한국어 메모.flac", "café.mp3", "a\nb.wav", ""] {
            #expect(FileNameBytes.string(Array(name.utf8)) == name)
            #expect(FileNameBytes.bytes(name) == Array(name.utf8))
            #expect(!FileNameBytes.holdsBytes(name))
        }
    }

    @Test func aLatin1NameKeepsItsBytesAndIsEscapedInMessages() throws {
        let latin1: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".wav".utf8)
        let s = try #require(FileNameBytes.string(latin1))
        #expect(FileNameBytes.holdsBytes(s))
        #expect(FileNameBytes.bytes(s) == latin1)
        #expect(FileNameBytes.escaped(s) == "caf\\xe9.wav")
        #expect(AudioError.missing(path: s).description == "caf\\xe9.wav: no such file")
        #expect(s.hasSuffix(".wav") && (s as NSString).deletingPathExtension.hasPrefix("caf"))  // templates see the stem and extension
    }

    /// Random names (no NUL, no `/`): every one comes back to its bytes, and the bytes taken as
    /// invalid are exactly those Python's surrogateescape decoding takes.
    @Test func randomNamesComeBackToTheirBytes() throws {
        var s: UInt64 = 0x5E6_0
        var names: [[UInt8]] = []
        for _ in 0..<300 {
            let n = 1 + Int(s % 12)
            var b: [UInt8] = []
            for _ in 0..<n {
                s ^= s << 13; s ^= s >> 7; s ^= s << 17
                let v = UInt8(truncatingIfNeeded: s)
                b.append(v == 0 || v == 0x2F ? 0x41 : v)
            }
            names.append(b)
        }
        var hex: [String] = []
        for b in names {
            let str = try #require(FileNameBytes.string(b))
            #expect(FileNameBytes.bytes(str) == b, "\(b)")
            hex.append(b.map { String(format: "%02x", $0) }.joined())
            // The same name through the C path a system call receives.
            let back = FileNameBytes.withCPath(str) { Array(UnsafeRawBufferPointer(start: $0, count: strlen($0))) }
            #expect(back == b)
        }
        // Python: the positions of the bytes surrogateescape could not decode, per name.
        let script = "import sys\nfor h in sys.stdin.read().split():\n    s = bytes.fromhex(h).decode('utf-8', 'surrogateescape')\n    print(','.join(str(ord(c) - 0xDC00) for c in s if 0xDC80 <= ord(c) <= 0xDCFF))"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", script]
        let inPipe = Pipe(), outPipe = Pipe()
        p.standardInput = inPipe
        p.standardOutput = outPipe
        try p.run()
        inPipe.fileHandleForWriting.write(Data(hex.joined(separator: "\n").utf8))
        try inPipe.fileHandleForWriting.close()
        let lines = String(decoding: outPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        p.waitUntilExit()
        for (i, b) in names.enumerated() {
            let str = FileNameBytes.string(b)!
            let ours = str.unicodeScalars.filter(FileNameBytes.isByte).map { String($0.value - FileNameBytes.base) }.joined(separator: ",")
            #expect(ours == String(lines[i]), "\(b)")
        }
    }

    @Test func aNameHoldingTheMappingsCodePointsIsNotTaken() {
        #expect(FileNameBytes.string(Array("x\u{10FFE9}.wav".utf8)) == nil)
        #expect(FileNameBytes.string(Array("x\u{10FFE9}".utf8) + [0xE9]) == nil)
        #expect(FileNameBytes.string(Array("x\u{10FF7F}.wav".utf8)) != nil)  // below the bytes' range
    }
}
