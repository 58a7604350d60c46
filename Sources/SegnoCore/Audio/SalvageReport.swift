import Foundation

/// What to do with a recording that is damaged (cut short by a crash, sizes never written, lost
/// frames): `input.damaged` in a spec, `--salvage` on `convert` and `waveform`.
public enum DamagedPolicy: String, Sendable, CaseIterable, Codable {
    /// The recording fails (an input failure) with a message naming the way out. The default.
    case fail
    /// Every sample that can be decoded is kept; gaps inside the stream become silence of the
    /// right length; the recording is marked `salvaged`.
    case salvage
}

/// What a salvaging decoder did to a damaged recording: a typed value the runner stores
/// (`salvaged` in the state, the metadata tap, `status`, `outputs`, the report) and `info` and
/// `repair` print. Made by the decoder while it reads; complete after the last block.
public struct SalvageReport: Sendable, Equatable, Codable {
    /// Why audio is missing at one place.
    public enum Cause: String, Sendable, Codable {
        /// The file ends before the size its header declares (a crash before the header was finished).
        case truncated
        /// The header leaves the size unwritten (0, 0xFFFFFFFF, CAF's −1): read to the end of the file.
        case sizeUnknown = "size-unknown"
        /// Bytes that are not a frame of the stream, skipped to the next frame header.
        case lostSync = "lost-sync"
        /// A frame whose header or checksum is wrong, or that does not decode.
        case badFrame = "bad-frame"
        /// The last frame is cut off by the end of the file.
        case cutFrame = "cut-frame"
        /// The container's index is missing and was rebuilt from the audio data (`moov`).
        case indexRebuilt = "index-rebuilt"
    }

    /// One place where audio was lost or the file was read other than its header says.
    public struct Loss: Sendable, Equatable, Codable {
        /// Where, in frames from the start of what the decoder yields (the output's time).
        public var at: Int
        /// Frames lost there (0 when nothing was lost, e.g. a size that was merely unknown).
        public var frames: Int
        /// True when the lost frames were replaced by silence, so later audio keeps its time.
        public var filled: Bool
        public var cause: Cause
        /// One line for people: "200 bytes of junk at byte 123456".
        public var detail: String

        public init(at: Int, frames: Int, filled: Bool, cause: Cause, detail: String) {
            self.at = at
            self.frames = frames
            self.filled = filled
            self.cause = cause
            self.detail = detail
        }
    }

    /// How the recording was read: "read to the end of the file", "libFLAC resynchronised", …
    public var method: String
    public var losses: [Loss] = []
    /// Frames of decoded audio yielded, silence put into gaps included (the output's length).
    public var framesYielded = 0
    /// Frames the header declared, when it declared a length.
    public var declaredFrames: Int?

    public init(method: String, declaredFrames: Int? = nil) {
        self.method = method
        self.declaredFrames = declaredFrames
    }

    /// Frames lost in all, inside the stream and at its end.
    public var framesLost: Int { losses.reduce(0) { $0 + $1.frames } }
    /// Where the first loss is (frames), nil when nothing was lost.
    public var firstLossAt: Int? { losses.first { $0.frames > 0 }?.at }
    /// True when the read differed from a plain one at all.
    public var isEmpty: Bool { losses.isEmpty }
    /// The report when something was lost, skipped or read other than the header says; nil when
    /// the salvaging decoder met a healthy file (read whole, as a plain decoder reads it), which is
    /// then not "salvaged" anywhere. What every salvaging decoder's `salvage` returns.
    public var ifSalvaged: SalvageReport? { isEmpty ? nil : self }

    /// Records a loss; `frames` ≥ 0.
    public mutating func add(at: Int, frames: Int, filled: Bool, cause: Cause, _ detail: String) {
        losses.append(Loss(at: at, frames: max(0, frames), filled: filled, cause: cause, detail: detail))
    }

    /// Records a loss, or lengthens the last one when this one continues it (same cause and
    /// filling, starting where it ends); at most `maxLosses` are kept, so a file of junk cannot
    /// grow the report without bound. Called by the packet salvagers (Ogg, ADTS) per lost stretch.
    public mutating func addOrExtend(at: Int, frames: Int, filled: Bool, cause: Cause, _ detail: String) {
        if let last = losses.last, last.cause == cause, last.filled == filled, last.at + last.frames == at, frames > 0 {
            losses[losses.count - 1].frames += frames
            return
        }
        if losses.count < Self.maxLosses { add(at: at, frames: frames, filled: filled, cause: cause, detail) }
    }

    /// Losses kept by `addOrExtend`.
    public static let maxLosses = 1000

    /// One line: "salvaged: 2.270 s read to the end of the file; header declared 5.000 s (truncated)".
    public func summary(sampleRate: Int) -> String {
        let rate = Double(max(sampleRate, 1))
        var parts = ["\(Self.seconds(Double(framesYielded) / rate)) recovered (\(method))"]
        let filled = losses.filter { $0.filled }.reduce(0) { $0 + $1.frames }
        if filled > 0 { parts.append("\(Self.seconds(Double(filled) / rate)) of gaps filled with silence") }
        if let declared = declaredFrames, declared > framesYielded {
            parts.append("header declared \(Self.seconds(Double(declared) / rate))")
        }
        let causes = Array(Set(losses.map(\.cause.rawValue))).sorted()
        if !causes.isEmpty { parts.append(causes.joined(separator: ", ")) }
        return parts.joined(separator: "; ")
    }

    /// The report as a JSON object for the state and the metadata tap:
    /// `{"frames_lost":…,"at":…,"frames":…,"method":…,"causes":[…]}` (`at` in seconds, null when nothing was lost).
    public func json(sampleRate: Int) -> JSONValue {
        let rate = Double(max(sampleRate, 1))
        return .object([
            ("frames_lost", .int(framesLost)),
            ("at", firstLossAt.map { .double((Double($0) / rate * 1000).rounded() / 1000) } ?? .null),
            ("frames", .int(framesYielded)),
            ("method", .string(method)),
            ("causes", .array(Array(Set(losses.map(\.cause.rawValue))).sorted().map { .string($0) })),
        ])
    }

    static package func seconds(_ s: Double) -> String {
        if s >= 60 {
            let m = Int(s) / 60
            return String(format: "%d:%06.3f", m, s - Double(m * 60))
        }
        return String(format: "%.3f s", s)
    }
}
