import Foundation
import SegnoCore
import Synchronization

/// Recordings held in memory: a name, an identity the test changes at will, and either samples
/// or an error that opening throws. The runner sees only `RecordingSource`.
package final class MemorySource: RecordingSource, @unchecked Sendable {
    package struct Item {
        package var samples: [Float]
        package var channels: Int = 1
        package var rate: Int = 8000
        package var identity: FileIdentity
        package var openError: AudioError? = nil
        /// Decoding throws after this many frames (a file damaged in the middle); nil: never.
        package var failAfter: Int? = nil
        /// Once this many frames were read, `stop` is set (a run interrupted in the middle); nil: never.
        package var interruptAt: (frames: Int, stop: StopFlag)? = nil
    }
    package init() {}

    private let items = Mutex<[String: Item]>([:])
    private let opened = Mutex(0)
    private let decoded = Mutex(0)

    /// Frames read from every decoder so far (what a resumed run did not decode again).
    package var framesDecoded: Int { decoded.withLock { $0 } }

    /// Adds or replaces a recording; `version` makes a new identity (a changed file).
    /// `rate` Hz (8 kHz by default); a 440 Hz sine, with `noise` white noise added.
    package func put(_ name: String, seconds: Double = 0.25, channels: Int = 1, rate: Int = 8000, noise: Bool = false, version: Int64 = 1,
                     openError: AudioError? = nil, failAfter: Int? = nil, interruptAt: (frames: Int, stop: StopFlag)? = nil) {
        let frames = Int(seconds * Double(rate))
        var samples = Signal.sine(frequency: 440, rate: rate, frames: frames, channels: channels).map { $0 * 0.5 }
        if noise {
            let n = Signal.noise(frames: frames, channels: channels, amplitude: 0.25)
            for i in samples.indices { samples[i] += n[i] }
        }
        items.withLock {
            $0[name] = Item(samples: samples, channels: channels, rate: rate,
                            identity: FileIdentity(size: Int64(frames), mtimeNs: version, inode: Int64(abs(name.hashValue % 100_000))),
                            openError: openError, failAfter: failAfter, interruptAt: interruptAt)
        }
    }

    package func remove(_ name: String) { _ = items.withLock { $0.removeValue(forKey: name) } }

    /// How many decoders were opened so far.
    package var opens: Int { opened.withLock { $0 } }

    package func scan() throws(RunError) -> ScanResult {
        let files = items.withLock { $0 }.map { ScannedFile(relativePath: $0.key, absolutePath: "memory:" + $0.key, identity: $0.value.identity) }
        return ScanResult(files: files.sorted { $0.relativePath < $1.relativePath })
    }

    package func open(_ file: ScannedFile) throws -> any AudioDecoder {
        guard let item = items.withLock({ $0[file.relativePath] }) else { throw AudioError.missing(path: file.relativePath) }
        opened.withLock { $0 += 1 }
        if let e = item.openError { throw e }
        let decoder = MemoryDecoder(item.samples, channels: item.channels, rate: item.rate, failAfter: item.failAfter)
        let interrupt = item.interruptAt
        decoder.onRead = { [weak self] position, n in
            self?.decoded.withLock { $0 += n }
            if let interrupt, position >= interrupt.frames { interrupt.stop.stop(SIGTERM) }
        }
        return decoder
    }

    package func contentHash(_ file: ScannedFile) throws -> Data { Data(file.relativePath.utf8) }

    package func currentIdentity(_ file: ScannedFile) -> FileIdentity? { items.withLock { $0[file.relativePath]?.identity } }
}

