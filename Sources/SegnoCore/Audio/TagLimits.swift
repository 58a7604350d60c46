/// The bounds on what segno takes from a recording's tags, so that a hostile file fails its own
/// tags and never the process or the run (issue 33). Each hit is a one-line warning naming the
/// file and the tag; the audio is processed as usual. docs/reference/limits.md quotes these.
public enum TagLimits {
    /// Memory the tag reader (a child process per file) may map beyond segno's own, in bytes
    /// (192 MiB): compressed ID3v2 frames inflate about 1000:1 and TagLib holds about 14 bytes
    /// per inflated byte, so this is where a compression bomb stops.
    public static let readerMemory = 192 << 20
    /// CPU seconds the tag reader may use for one file.
    public static let readerSeconds = 20
    /// Longest tag value carried, in bytes of UTF-8 (1 MiB); a longer one is dropped.
    public static let valueBytes = 1 << 20
    /// Most tag values carried per recording, under normalised names and under the container's
    /// own keys each; the rest are dropped.
    public static let values = 1000
    /// Most bytes of tag text carried per recording (4 MiB), under normalised names and under the
    /// container's own keys each; a value that would go past it is dropped. What bounds the
    /// memory of reading and writing one recording's tags (TagLib holds about 9 bytes per byte
    /// written), since `values` values of `valueBytes` each would be 1,000 MiB.
    public static let totalBytes = 4 << 20
}
