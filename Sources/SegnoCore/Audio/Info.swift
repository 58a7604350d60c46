/// `segno info`: what a file holds, or why it cannot be read.
public enum FileInfo {
    /// Opens `path`, reads the header and closes it. Never throws: failures become `.failure`.
    public static func inspect(path: String) -> Result<SourceInfo, AudioError> {
        do {
            let d = try DecoderFactory.open(path: path)
            defer { d.close() }
            return .success(d.info)
        } catch let e as AudioError {
            return .failure(e)
        } catch {
            return .failure(.decodeFailed(path: path, detail: "\(error)"))
        }
    }

    /// One line of `info --json`: `{"path":…,"ok":true,"container":…,…}` or `{"path":…,"ok":false,"error":…}`.
    public static func json(path: String, _ result: Result<SourceInfo, AudioError>) -> String {
        switch result {
        case .success(let i):
            var fields: [(String, JSONValue)] = [
                ("path", .string(path)), ("ok", .bool(true)), ("container", .string(i.container)),
                ("codec", .string(i.codec)), ("sample_rate", .int(i.sampleRate)), ("channels", .int(i.channels)),
                ("frames", .int(i.frames)), ("duration", JSONValue.rounded(i.duration, places: 3)),
            ]
            if let tags = i.tags, !tags.isEmpty {
                fields.append(("tags", .object(tags.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })))
            }
            return JSONValue.object(fields).serialized()
        case .failure(let e):
            return JSONValue.object([("path", .string(path)), ("ok", .bool(false)), ("error", .string(e.description))]).serialized()
        }
    }

    /// One human line: `memo.wav: WAV PCM_16, 44100 Hz, 2 ch, 88200 frames, 2.000 s`, then the
    /// tags when the file has some: `, title="Kitchen idea", date="2024-05-01"` (sorted by key).
    public static func text(path: String, _ result: Result<SourceInfo, AudioError>) -> String {
        switch result {
        case .success(let i):
            var line = "\(AudioError.quoted(path)): \(i.container) \(i.codec), \(i.sampleRate) Hz, \(i.channels) ch, \(i.frames) frames, \(String(format: "%.3f", i.duration)) s"
            for (k, v) in (i.tags ?? [:]).sorted(by: { $0.key < $1.key }) {
                line += ", \(AudioError.quoted(k))=" + JSONValue.string(v).serialized()
            }
            return line
        case .failure(let e):
            return e.description
        }
    }
}
