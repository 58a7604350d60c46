import Foundation

/// A file written under a temporary name in its final folder, synced, then renamed into place,
/// so a reader never sees half a file and a crash leaves nothing that looks finished.
/// Temporary names start with `OutputFile.tempPrefix`; the runner removes leftovers on start-up.
public final class OutputFile {
    /// Prefix of every temporary file segno writes.
    public static let tempPrefix = ".segno-tmp-"

    /// The final path.
    public let finalPath: String
    /// Where the bytes go until `commit()`.
    public let tempPath: String
    private var done = false

    /// Creates the folder if needed and picks a temporary name beside `finalPath`.
    /// Called once per output, before the first byte is written.
    public init(finalPath: String) throws {
        self.finalPath = finalPath
        let url = URL(fileURLWithPath: finalPath)
        let dir = url.deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            throw AudioError.io(path: finalPath, detail: "cannot create folder \(AudioError.quoted(dir)): \(error.localizedDescription)")
        }
        let token = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        var base = url.lastPathComponent
        // Keep the temporary name within NAME_MAX (255 bytes) for long final names.
        while base.utf8.count > 200 { base.removeFirst() }
        tempPath = (dir as NSString).appendingPathComponent("\(Self.tempPrefix)\(token)-\(base)")
    }

    deinit { if !done { discard() } }

    /// Syncs the temporary file to disk, renames it to the final name and syncs the folder.
    /// Called once, after the writer has closed the file.
    public func commit() throws {
        let fd = open(tempPath, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw AudioError.io(path: finalPath, detail: "temporary file vanished: \(String(cString: strerror(errno)))") }
        let syncResult = fsync(fd)
        let syncErr = errno
        close(fd)
        if syncResult != 0 {
            throw AudioError.io(path: finalPath, detail: "fsync failed: \(String(cString: strerror(syncErr)))")
        }
        if rename(tempPath, finalPath) != 0 {
            let e = errno
            discard()
            throw AudioError.io(path: finalPath, detail: "rename failed: \(String(cString: strerror(e)))")
        }
        done = true
        Self.syncDirectory(of: finalPath)
    }

    /// Removes the temporary file (abandoned or failed output). Safe to call twice.
    public func discard() {
        done = true
        unlink(tempPath)
    }

    /// fsyncs the folder holding `path`, so a rename survives a power cut.
    static func syncDirectory(of path: String) {
        let dir = (path as NSString).deletingLastPathComponent
        let fd = open(dir.isEmpty ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { fsync(fd); close(fd) }
    }
}
