import Foundation
import SegnoTestSupport
import SegnoWaveform
import Testing

/// `segno waveform` with audiowaveform's command line (issue 12): each flag changes the output
/// the way audiowaveform 1.10.3 does, or is refused with a message naming it.
@Suite struct AudiowaveformFlagsTests {
    /// A 3 s, 16 kHz stereo tone with noise (48,000 frames).
    static func workspace() throws -> RunWorkspace {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["a.wav"], rate: 16000, channels: 2, seconds: 3)
        return ws
    }

    static func bytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }
    static func json(_ path: String) throws -> WaveformData { try WaveformJSON.decode(bytes(path)) }
    /// A PNG's IHDR width and height.
    static func size(_ png: [UInt8]) -> (Int, Int) {
        func be(_ i: Int) -> Int { Int(png[i]) << 24 | Int(png[i + 1]) << 16 | Int(png[i + 2]) << 8 | Int(png[i + 3]) }
        return (be(16), be(20))
    }

    @Test func dashHIsTheHeightAndHelpIsLongOnly() throws {
        let ws = try Self.workspace()
        let r = try ws.segno(["waveform", "-i", ws["a.wav"], "-o", ws["a.png"], "-w", "321", "-h", "123"])
        #expect(r.exited(0), "\(r.stderr)")
        #expect(Self.size(try Self.bytes(ws["a.png"])) == (321, 123))
        let help = try ws.segno(["waveform", "--help"])
        #expect(help.exited(0) && help.stdout.contains("-h, --height"), "\(help.stdout)")
        #expect(try ws.segno(["waveform", ws["a.wav"], "-h"]).exited(2))
        #expect(try ws.segno(["-h"]).stdout.contains("waveform"))  // the other commands keep -h for help
    }

    @Test func inputOutputAndFormatsAsAudiowaveformNamesThem() throws {
        let ws = try Self.workspace()
        #expect(try ws.segno(["waveform", ws["a.wav"], "-o", ws["ref.dat"], "-z", "128", "-b", "16"]).exited(0))
        let dropIn = try ws.segno(["waveform", "-i", ws["a.wav"], "--output-filename", ws["b.dat"], "-z", "128", "-b", "16", "-q"])
        #expect(dropIn.exited(0) && dropIn.stdout.isEmpty && dropIn.stderr.isEmpty, "\(dropIn.stderr)")
        #expect(try Self.bytes(ws["b.dat"]) == Self.bytes(ws["ref.dat"]))
        // --output-format to standard output, and standard input with --input-format.
        let bin = try CLI.segnoPath()
        let piped = try CLI.tool("sh", ["-c", "'\(bin)' waveform -i - --input-format wav -o - --output-format dat -z 128 -b 16 < '\(ws["a.wav"])' > '\(ws["c.dat"])'"])
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(try Self.bytes(ws["c.dat"]) == Self.bytes(ws["ref.dat"]))
        // --input-format dat reads a data file whatever its name; --output-format json converts it.
        try FileManager.default.copyItem(atPath: ws["ref.dat"], toPath: ws["ref.peaks"])
        let conv = try ws.segno(["waveform", "-i", ws["ref.peaks"], "--input-format", "dat", "--output-format", "json", "-o", ws["ref.out"], "-b", "16"])
        #expect(conv.exited(0), "\(conv.stderr)")
        #expect(try Self.json(ws["ref.out"]) == WaveformDat.decode(Self.bytes(ws["ref.dat"])))
    }

    @Test func rawInputIsReadAsDescribed() throws {
        let ws = try Self.workspace()
        #expect(try ws.segno(["waveform", ws["a.wav"], "-o", ws["ref.json"], "-z", "128", "-b", "16"]).exited(0))
        let sox = try CLI.tool("sox", [ws["a.wav"], "-t", "raw", "-e", "signed", "-b", "16", "-L", ws["a.pcm"]])
        #expect(sox.status == 0, "\(sox.stderr)")
        let r = try ws.segno(["waveform", "-i", ws["a.pcm"], "--input-format", "raw", "--raw-samplerate", "16000", "--raw-channels", "2",
                              "--raw-format", "s16le", "-o", ws["raw.json"], "-z", "128", "-b", "16"])
        #expect(r.exited(0), "\(r.stderr)")
        #expect(try Self.json(ws["raw.json"]) == Self.json(ws["ref.json"]))
        // Read as big-endian the same bytes are other numbers: the description is used.
        #expect(try ws.segno(["waveform", "-i", ws["a.pcm"], "--input-format", "raw", "--raw-samplerate", "16000", "--raw-channels", "2",
                              "--raw-format", "s16be", "-o", ws["be.json"], "-z", "128", "-b", "16"]).exited(0))
        #expect(try Self.json(ws["be.json"]) != Self.json(ws["ref.json"]))
    }

    @Test func endSetsTheDataZoomFromStartEndAndWidth() throws {
        let ws = try Self.workspace()
        // (1.5 − 0.5) s × 16000 Hz / 100 = 160 samples per pixel; the whole file, as audiowaveform writes it.
        let r = try ws.segno(["waveform", "-i", ws["a.wav"], "-o", ws["e.json"], "-s", "0.5", "-e", "1.5", "-w", "100", "-b", "16"])
        #expect(r.exited(0), "\(r.stderr)")
        let d = try Self.json(ws["e.json"])
        #expect(d.samplesPerPixel == 160 && d.length == 48000 / 160)
        #expect(try ws.segno(["waveform", ws["a.wav"], "-o", ws["z.json"], "-z", "160", "-b", "16"]).exited(0))
        #expect(try Self.json(ws["z.json"]) == d)
        let alone = try ws.segno(["waveform", ws["a.wav"], "-o", ws["s.json"], "-s", "1"])
        #expect(alone.exited(2) && alone.stderr.contains("--start"), "\(alone.stderr)")
        let both = try ws.segno(["waveform", ws["a.wav"], "-o", ws["s.json"], "-e", "2", "-z", "64"])
        #expect(both.exited(2) && both.stderr.contains("--end or --zoom"), "\(both.stderr)")
    }

    @Test func amplitudeScaleMultipliesDataWithClipping() throws {
        let ws = try Self.workspace()
        #expect(try ws.segno(["waveform", ws["a.wav"], "-o", ws["one.json"], "-b", "16"]).exited(0))
        let one = try Self.json(ws["one.json"])
        #expect(try ws.segno(["waveform", ws["a.wav"], "-o", ws["two.json"], "-b", "16", "--amplitude-scale", "3"]).exited(0))
        let two = try Self.json(ws["two.json"])
        #expect(two.data == one.data.map { Int16(max(-32768, min(32767, 3 * Int($0)))) })
        #expect(two.data.contains(32767) && !one.data.contains(32767), "the tone's 0.45 peaks clip at 3×")
        // 8 bits: scaled at 16 bits first, then divided by 256 (audiowaveform's order).
        #expect(try ws.segno(["waveform", ws["a.wav"], "-o", ws["two8.json"], "-b", "8", "--amplitude-scale", "3"]).exited(0))
        #expect(try Self.json(ws["two8.json"]).data == two.data.map { $0 / 256 })
        // auto: audiowaveform's factor |min(32767 / max, 32767 / min)|.
        #expect(try ws.segno(["waveform", ws["a.wav"], "-o", ws["auto.json"], "-b", "16", "--amplitude-scale", "auto"]).exited(0))
        let lo = Double(one.data.min()!), hi = Double(one.data.max()!)
        let factor = abs(min(32767 / hi, 32767 / lo))
        #expect(try Self.json(ws["auto.json"]).data == one.data.map { Int16(max(-32768, min(32767, Double($0) * factor))) })
    }

    /// The PNG segno writes equals the library's picture of the same peaks: the flags reach it.
    static func render(_ ws: RunWorkspace, zoom: String, _ configure: (inout WaveformPicture) throws -> Void) throws -> [UInt8] {
        #expect(try ws.segno(["waveform", ws["a.wav"], "-o", ws["ref-\(zoom).json"], "-z", zoom, "-b", "8", "--overwrite"]).exited(0))
        var p = try WaveformPicture(width: 1000, height: 200)
        try configure(&p)
        return p.png(try json(ws["ref-\(zoom).json"]))
    }

    @Test func picturesTakeAudiowaveformsLayoutColoursAndStyle() throws {
        let ws = try Self.workspace()
        func png(_ args: [String]) throws -> [UInt8] {
            let r = try ws.segno(["waveform", ws["a.wav"], "-o", ws["p.png"], "--overwrite"] + args)
            #expect(r.exited(0), "\(args): \(r.stderr)")
            return try Self.bytes(ws["p.png"])
        }
        // -z N: one point per column from the start (columns past the end stay background).
        let plain = try png(["-z", "64"])
        #expect(plain == (try Self.render(ws, zoom: "64") { $0.window = 0 }))
        // --start: the first column is point ⌊start × rate / spp⌋ = 1 × 16000 / 64 = 250.
        #expect(try png(["-z", "64", "-s", "1"]) == Self.render(ws, zoom: "64") { $0.window = 250 })
        // --end: the zoom fits 1…2 s into 200 columns (80 samples per pixel), starting at point 200.
        #expect(try png(["-s", "1", "-e", "2", "-w", "200"]) == Self.render(ws, zoom: "80") { p in
            p = try WaveformPicture(width: 200, height: 200); p.window = 200 })
        // -z auto: the whole file across the width (48000 / 1000 = 48 samples per pixel).
        #expect(try png(["-z", "auto"]) == Self.render(ws, zoom: "48") { $0.window = 0 })
        // Colour schemes and colours.
        #expect(try png(["-z", "64", "-c", "audition"]) == Self.render(ws, zoom: "64") { p in
            p = try WaveformPicture(width: 1000, height: 200, background: RGBAColor(red: 0, green: 63, blue: 34),
                                    waveform: RGBAColor(red: 134, green: 252, blue: 199)); p.window = 0 })
        #expect(try png(["-z", "64", "--background-color", "112233", "--waveform-color", "445566aa", "--no-axis-labels"]) == Self.render(ws, zoom: "64") { p in
            p = try WaveformPicture(width: 1000, height: 200, background: RGBAColor(hex: "112233"), waveform: RGBAColor(hex: "445566aa")); p.window = 0 })
        // Bars differ from the normal style, and are the library's bars.
        let bars = try png(["-z", "64", "--waveform-style", "bars", "--bar-width", "3", "--bar-gap", "2", "--bar-style", "square"])
        #expect(bars != plain)
        #expect(bars == (try Self.render(ws, zoom: "64") { p in p.window = 0; p.barStyle = try WaveformPicture.BarStyle(width: 3, gap: 2) }))
        // Axis labels: a border, ticks and times from --start, in the scheme's or the given colours.
        #expect(try png(["-z", "64", "-s", "1", "--with-axis-labels", "-c", "audition", "--axis-label-color", "ffff00"]) == Self.render(ws, zoom: "64") { p in
            p = try WaveformPicture(width: 1000, height: 200, background: RGBAColor(red: 0, green: 63, blue: 34),
                                    waveform: RGBAColor(red: 134, green: 252, blue: 199))
            p.window = 250
            p.axisLabels = .init(border: RGBAColor(red: 157, green: 157, blue: 157), text: try RGBAColor(hex: "ffff00"), startSeconds: 1) })
        // Labels alone lay the whole file out as -z auto.
        #expect(try png(["--with-axis-labels"]) == Self.render(ws, zoom: "48") { p in
            p.window = 0; p.axisLabels = .init(border: RGBAColor(red: 0, green: 0, blue: 0), text: RGBAColor(red: 0, green: 0, blue: 0), startSeconds: 0) })
        let rounded = try png(["-z", "64", "--waveform-style", "bars", "--bar-width", "12", "--bar-style", "rounded"])
        #expect(rounded == (try Self.render(ws, zoom: "64") { p in p.window = 0; p.barStyle = try WaveformPicture.BarStyle(width: 12, gap: 4, rounded: true) }))
        #expect(rounded != (try png(["-z", "64", "--waveform-style", "bars", "--bar-width", "12"])))
        // Amplitude scale on a picture.
        #expect(try png(["-z", "64", "--amplitude-scale", "auto"]) == Self.render(ws, zoom: "64") { p in p.window = 0; p.autoAmplitude = true })
        // Without zoom or time flags a PNG still fits the whole file to the width (segno's default).
        #expect(try png([]) == Self.render(ws, zoom: "256") { _ in })
    }

    @Test(arguments: [
        (["--border-color", "000000"], "--with-axis-labels"), (["--axis-label-color", "000000"], "--with-axis-labels"),
        (["--waveform-style", "bars", "--bar-style", "oval"], "--bar-style"),
        (["--compression", "9"], "--compression"), (["--input-format", "raw"], "--raw-samplerate"), (["--raw-channels", "2"], "--input-format raw"),
        (["--input-format", "raw", "--raw-samplerate", "8000", "--raw-channels", "2", "--raw-format", "s12le"], "s12le"),
        (["--output-format", "wav"], "segno convert"), (["--colors", "dark"], "--colors"), (["--waveform-color", "12"], "--waveform-color"),
        (["--bar-width", "4"], "--waveform-style bars"), (["--amplitude-scale", "-1"], "--amplitude-scale"),
    ])
    func refusesWhatItDoesNotDraw(flags: [String], named: String) throws {
        let ws = try Self.workspace()
        let r = try ws.segno(["waveform", ws["a.wav"], "-o", ws["x.png"]] + flags)
        #expect(r.exited(2) && r.stderr.contains(named), "\(flags): \(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws["x.png"]))
    }

    @Test func refusesPictureFlagsOnData() throws {
        let ws = try Self.workspace()
        for flags in [["-z", "auto"], ["-c", "audacity"], ["--waveform-style", "bars"], ["-h", "100"], ["--with-axis-labels"]] {
            let r = try ws.segno(["waveform", ws["a.wav"], "-o", ws["x.json"]] + flags)
            #expect(r.exited(2) && !r.stderr.isEmpty, "\(flags): \(r.stderr)")
        }
        let svgBars = try ws.segno(["waveform", ws["a.wav"], "-o", ws["x.svg"], "--waveform-style", "bars"])
        #expect(svgBars.exited(2) && svgBars.stderr.contains("PNG only"), "\(svgBars.stderr)")
        #expect(try ws.segno(["waveform", ws["a.wav"], "-o", ws["ok.png"], "--compression", "-1", "-q", "--no-axis-labels"]).exited(0))
    }
}
