// The helper's fingerprint request: segno streams a tap's samples here and libchromaprint (linked
// into this program only) turns them into a fingerprint. See the protocol in main.swift.
import CChromaprint
import Glibc

/// Serves one 'P' request: starts chromaprint and answers 'H' (or 'F' and returns), then reads
/// 'S' messages until 'E' and answers 'R' (frames, items) or 'F'. Reads nothing past the 'E'.
/// Exits when segno is gone (end of input) or breaks the protocol.
func serveFingerprint(request payload: [UInt8]) {
    guard payload.count == 12 else {
        send(UInt8(ascii: "F"), Array("segno-decode: bad fingerprint request".utf8))
        exit(2)
    }
    let rate = payload.withUnsafeBytes { Int32(bitPattern: $0.load(fromByteOffset: 0, as: UInt32.self)) }
    let channels = payload.withUnsafeBytes { Int32(bitPattern: $0.load(fromByteOffset: 4, as: UInt32.self)) }
    let algorithm = payload.withUnsafeBytes { Int32(bitPattern: $0.load(fromByteOffset: 8, as: UInt32.self)) }
    // fpcalc's numbering 1…5 is chromaprint's 0…4.
    guard (1...5).contains(algorithm), rate > 0, channels > 0,
          let context = chromaprint_new(algorithm - 1) else {
        send(UInt8(ascii: "F"), Array("chromaprint cannot take algorithm \(algorithm), \(rate) Hz, \(channels) channels".utf8))
        return
    }
    defer { chromaprint_free(context) }
    guard chromaprint_start(context, rate, channels) == 1 else {
        send(UInt8(ascii: "F"), Array("chromaprint cannot take \(rate) Hz, \(channels) channels".utf8))
        return
    }
    send(UInt8(ascii: "H"), bytes(of: UInt32(rate)) + bytes(of: UInt32(channels)))

    // The samples, block after block into one buffer that grows to the largest 'S' (segno's are
    // 128 KiB): chromaprint keeps only its own state, never the audio.
    var buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 17, alignment: 16)
    var capacity = 1 << 17
    defer { buffer.deallocate() }
    var samples: UInt64 = 0
    var failure: String?
    var head = [UInt8](repeating: 0, count: 8)
    while true {
        guard head.withUnsafeMutableBytes({ readFully($0.baseAddress!, 8) }) else { exit(0) }
        let length = head.withUnsafeBytes { Int($0.load(fromByteOffset: 4, as: UInt32.self)) }
        if head[0] == UInt8(ascii: "E") && length == 0 { break }
        guard head[0] == UInt8(ascii: "S"), length % 2 == 0, length <= 1 << 24 else {
            send(UInt8(ascii: "F"), Array("segno-decode: unexpected message in a fingerprint".utf8))
            exit(2)
        }
        if length > capacity {
            buffer.deallocate()
            buffer = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 16)
            capacity = length
        }
        guard readFully(buffer, length) else { exit(0) }
        // After a failure the rest is read and dropped, so segno, which only writes until 'E',
        // never blocks on a helper that stopped reading.
        guard failure == nil else { continue }
        let count = length / 2
        if chromaprint_feed(context, buffer.assumingMemoryBound(to: Int16.self), Int32(count)) != 1 {
            failure = "chromaprint failed on the stream"
        }
        samples += UInt64(count)
    }
    if failure == nil && chromaprint_finish(context) != 1 { failure = "chromaprint failed at the end of the stream" }
    var raw: UnsafeMutablePointer<UInt32>? = nil
    var size: Int32 = 0
    if failure == nil && chromaprint_get_raw_fingerprint(context, &raw, &size) != 1 { failure = "chromaprint has no fingerprint" }
    defer { if let raw { chromaprint_dealloc(raw) } }
    if let failure {
        send(UInt8(ascii: "F"), Array(failure.utf8))
        return
    }
    // 'R': UInt64 frames, then the items.
    let items = Int(max(size, 0))
    var reply = [UInt8](repeating: 0, count: 8 + items * 4)
    reply.withUnsafeMutableBytes { r in
        r.storeBytes(of: samples / UInt64(channels), as: UInt64.self)
        if let raw, items > 0 { (r.baseAddress! + 8).copyMemory(from: raw, byteCount: items * 4) }
    }
    send(UInt8(ascii: "R"), reply)
}

/// chromaprint's version, for the greeting.
func chromaprintVersion() -> String { String(cString: chromaprint_get_version()) }
