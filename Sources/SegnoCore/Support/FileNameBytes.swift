import Foundation

/// A file's name is bytes (DESIGN §6): a name that is not UTF-8 — Latin-1 from an old Windows
/// share, `caf\xe9.wav` — is processed like any other and kept as it is.
///
/// Swift's `String` holds only Unicode, and its bridges to C (`open(path, …)`, `FileManager`,
/// `CommandLine.arguments`) encode as UTF-8 or replace invalid bytes with U+FFFD, which loses the
/// name. So segno carries such a name as a `String` in which each byte of an invalid sequence is
/// the private-use code point U+10FF00 + byte (U+10FF80…U+10FFFF), and turns it back into the
/// same bytes wherever a path reaches the kernel: the `String` overloads of the file calls below
/// (`open`, `stat`, `rename`, …), which the compiler picks over the C functions for any `String`
/// argument, and `withCPath` for a C library's own path argument. The mapped name is valid
/// Unicode, so state, templates and JSON carry it unchanged; messages write each such byte `\xe9`.
/// A real name that already holds one of those code points is not taken (`string` returns nil).
public enum FileNameBytes {
    /// The code point standing for byte 0: a byte `b` of an invalid sequence is `base + b`.
    static package let base: UInt32 = 0x10FF00

    /// The `String` for a name's bytes: valid UTF-8 as it is, each byte of an invalid sequence as
    /// U+10FF00 + byte. Nil when the valid UTF-8 already holds U+10FF80…U+10FFFF (the mapping
    /// would not come back to the same bytes). Called once per name read from the system.
    public static func string<C: Collection>(_ bytes: C) -> String? where C.Element == UInt8 {
        if let s = String(validating: bytes, as: UTF8.self) {
            return s.unicodeScalars.contains(where: isByte) ? nil : s
        }
        let b = Array(bytes)
        var out = String.UnicodeScalarView()
        var i = 0
        while i < b.count {
            // The longest valid UTF-8 sequence starting here (1–4 bytes), else one mapped byte.
            var taken = false
            for n in stride(from: min(4, b.count - i), through: 1, by: -1) {
                if let s = String(validating: b[i..<(i + n)], as: UTF8.self), s.unicodeScalars.count == 1 {
                    let scalar = s.unicodeScalars.first!
                    if isByte(scalar) { return nil }
                    out.append(scalar)
                    i += n
                    taken = true
                    break
                }
            }
            if !taken {
                out.append(Unicode.Scalar(base + UInt32(b[i]))!)
                i += 1
            }
        }
        return String(out)
    }

    /// The `String` for a C string from the system (a `readdir` name, an `argv` word).
    public static func string(cString p: UnsafePointer<CChar>) -> String? {
        string(UnsafeRawBufferPointer(start: p, count: strlen(p)))
    }

    /// The bytes `s` stands for: its UTF-8, with each U+10FF80…U+10FFFF back to its one byte.
    public static func bytes(_ s: String) -> [UInt8] {
        guard s.unicodeScalars.contains(where: isByte) else { return Array(s.utf8) }
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count)
        for scalar in s.unicodeScalars {
            if isByte(scalar) { out.append(UInt8(scalar.value - base)) } else { out += String(scalar).utf8 }
        }
        return out
    }

    /// True when `s` holds bytes that are not UTF-8 (it came from such a name).
    public static func holdsBytes(_ s: String) -> Bool { s.unicodeScalars.contains(where: isByte) }

    /// Calls `body` with the NUL-terminated bytes `path` stands for (for a C library's path argument).
    public static func withCPath<R>(_ path: String, _ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        guard holdsBytes(path) else { return try path.withCString(body) }
        return try (bytes(path) + [0]).withUnsafeBufferPointer {
            try $0.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }

    /// `s` for a message: each mapped byte written `\xe9`.
    public static func escaped(_ s: String) -> String {
        guard holdsBytes(s) else { return s }
        var out = ""
        for scalar in s.unicodeScalars {
            if isByte(scalar) { out += String(format: "\\x%02x", scalar.value - base) } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }

    static package func isByte(_ s: Unicode.Scalar) -> Bool { s.value >= base + 0x80 && s.value <= base + 0xFF }
}

// The file calls segno makes with a `String` path, mapped back to the name's bytes. Swift picks
// these over the C functions (which take the `String` through an implicit conversion), so every
// call with a `String` in segno's modules goes through them. Each returns what the C call returns.

@discardableResult package func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    FileNameBytes.withCPath(path) { Glibc.open($0, flags, mode) }
}

@discardableResult package func stat(_ path: String, _ buf: UnsafeMutablePointer<stat>) -> Int32 {
    FileNameBytes.withCPath(path) { fstatat(AT_FDCWD, $0, buf, 0) }
}

@discardableResult package func lstat(_ path: String, _ buf: UnsafeMutablePointer<stat>) -> Int32 {
    FileNameBytes.withCPath(path) { fstatat(AT_FDCWD, $0, buf, AT_SYMLINK_NOFOLLOW) }
}

@discardableResult package func fstatat(_ dirfd: Int32, _ path: String, _ buf: UnsafeMutablePointer<stat>, _ flags: Int32) -> Int32 {
    FileNameBytes.withCPath(path) { Glibc.fstatat(dirfd, $0, buf, flags) }
}

@discardableResult package func unlink(_ path: String) -> Int32 {
    FileNameBytes.withCPath(path) { Glibc.unlink($0) }
}

@discardableResult package func remove(_ path: String) -> Int32 {
    FileNameBytes.withCPath(path) { Glibc.remove($0) }
}

@discardableResult package func access(_ path: String, _ mode: Int32) -> Int32 {
    FileNameBytes.withCPath(path) { Glibc.access($0, mode) }
}

@discardableResult package func rename(_ from: String, _ to: String) -> Int32 {
    FileNameBytes.withCPath(from) { f in FileNameBytes.withCPath(to) { Glibc.rename(f, $0) } }
}

@discardableResult package func opendir(_ path: String) -> OpaquePointer? {
    FileNameBytes.withCPath(path) { Glibc.opendir($0) }
}

@discardableResult package func mkdir(_ path: String, _ mode: mode_t) -> Int32 {
    FileNameBytes.withCPath(path) { Glibc.mkdir($0, mode) }
}

extension FileNameBytes {
    /// `FileHandle(forReadingAtPath:)` for a name that may not be UTF-8: nil when it cannot be opened.
    public static func reading(_ path: String) -> FileHandle? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        return fd < 0 ? nil : FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    /// True when `path` is a folder (links followed), whatever bytes its name holds.
    public static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }
}


extension FileNameBytes {
    /// `s` with each byte of a name that is not UTF-8 read as Latin-1 (`caf\xe9` → "café"), for
    /// searching only: most such names come from Latin-1 or Windows-1252 systems. Bytes 0x80–0x9F
    /// (control characters in Latin-1) become spaces. Never a path: the bytes are the name.
    public static func latin1Reading(_ s: String) -> String {
        guard holdsBytes(s) else { return s }
        var out = String.UnicodeScalarView()
        for scalar in s.unicodeScalars {
            guard isByte(scalar) else { out.append(scalar); continue }
            let byte = scalar.value - base
            out.append(byte >= 0xA0 ? Unicode.Scalar(UInt8(byte)) : " ")
        }
        return String(out)
    }

    /// `FileManager.fileExists(atPath:)` for a name that may not be UTF-8 (links followed).
    public static func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }
}
