/// audiowaveform's text data (`--output-format txt`): one line per point, each channel's minimum
/// and maximum in channel order, comma-separated (`-53,64` for one channel, `0,0,0,0` for two),
/// at the data's bit depth; every line ends with `\n`. Written only, as audiowaveform does.
public enum WaveformText {
    /// The bytes of the text file for `data`.
    public static func encode(_ data: WaveformData) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(data.data.count * 4)
        for i in 0..<data.length {
            for c in 0..<data.channels {
                if c > 0 { out.append(UInt8(ascii: ",")) }
                out += String(data.min(channel: c, at: i)).utf8
                out.append(UInt8(ascii: ","))
                out += String(data.max(channel: c, at: i)).utf8
            }
            out.append(UInt8(ascii: "\n"))
        }
        return out
    }
}
