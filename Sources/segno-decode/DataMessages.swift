/// The 'D' messages of one decode: samples gathered into blocks of `blockBytes`, each sent as
/// 'D', its length in bytes (both 32-bit), then the bytes. Owned by one decode; `flush` after
/// its last samples.
final class DataMessages {
    private let out = UnsafeMutableRawPointer.allocate(byteCount: 8 + blockBytes, alignment: 16)
    private var outBytes = 0

    deinit { out.deallocate() }

    /// Appends `count` bytes of samples, sending each block as it fills.
    func append(_ p: UnsafeRawPointer, _ count: Int) {
        var off = 0
        while off < count {
            let take = min(count - off, blockBytes - outBytes)
            (out + 8 + outBytes).copyMemory(from: p + off, byteCount: take)
            outBytes += take
            off += take
            if outBytes == blockBytes { flush() }
        }
    }

    /// Sends the pending 'D' message, if any.
    func flush() {
        guard outBytes > 0 else { return }
        out.storeBytes(of: UInt32(UInt8(ascii: "D")), as: UInt32.self)
        (out + 4).storeBytes(of: UInt32(outBytes), as: UInt32.self)
        writeFully(out, 8 + outBytes)
        outBytes = 0
    }
}
