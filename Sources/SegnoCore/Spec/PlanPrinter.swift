import Foundation

/// `segno validate`: the checked spec as a readable plan.
public enum PlanPrinter {
    public static func describe(_ spec: JobSpec) -> String {
        var lines: [String] = []
        lines.append("spec \(AudioError.quoted(spec.file)): \(spec.name) (version 1)")
        if let streams = spec.input.streams {
            lines.append("input   record \(canonicalNumber(streams.duration)) s in \(canonicalNumber(streams.segment)) s segments (timeout \(canonicalNumber(streams.timeout)) s) into \(AudioError.quoted(streams.capture)):")
            for s in streams.stations { lines.append("        \(s.name)  \(s.url.absoluteString)") }
        } else {
            lines.append("input   \(AudioError.quoted(spec.input.root))")
        }
        lines.append("        include \(spec.input.include.map(\.text).joined(separator: ", "))")
        lines.append("        exclude \(spec.input.exclude.map(\.text).joined(separator: ", "))")
        lines.append("        settle \(canonicalNumber(spec.input.settle)) s, verify \(spec.input.verify.rawValue), follow links \(spec.input.followLinks ? "yes" : "no")")
        lines.append("output  \(AudioError.quoted(spec.outputRoot))")
        lines.append("state   \(AudioError.quoted(spec.statePath))")
        lines.append("workers \(spec.parallel.map(String.init) ?? "auto (\(spec.workers))"), retries \(spec.retries)")
        lines.append("stages:")
        let width = spec.stages.map(\.config.name.count).max() ?? 0
        for (i, p) in spec.stages.enumerated() {
            let c = p.config
            let name = c.name.padding(toLength: width, withPad: " ", startingAt: 0)
            let opts = c.options.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
            lines.append(String(format: "%3d. ", i + 1) + "\(name)  \(c.kind.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) \(opts)")
        }
        return lines.joined(separator: "\n")
    }

    /// What `validate` warns about in a spec that loads: stages that undo a normalisation, and
    /// transforms after the last tap (nothing sees their output). One line each, with the line.
    public static func warnings(_ spec: JobSpec) -> [String] {
        var out: [String] = []
        let file = spec.file
        if let n = spec.stages.firstIndex(where: { $0.config.setsLevel }) {
            for p in spec.stages[(n + 1)...] where p.config.changesLevel {
                out.append("\(file):\(p.line): warning: \(p.config.name) after normalize (line \(spec.stages[n].line)) changes the level normalize set; put it before normalize")
            }
        }
        if let lastTap = spec.stages.lastIndex(where: { $0.config.kind == .tap }) {
            for p in spec.stages[(lastTap + 1)...] where p.config.kind == .transform {
                out.append("\(file):\(p.line): warning: \(p.config.name) comes after the last tap, so nothing writes its output")
            }
        }
        // Subtitles on a moved timeline (decision 0072): correct for the shortened stream, not the source.
        if let m = spec.stages.firstIndex(where: { $0.config.movesTime }) {
            for p in spec.stages[(m + 1)...] where p.config.writesStreamTimes {
                out.append("\(file):\(p.line): warning: \(p.config.name) after \(spec.stages[m].config.name) (line \(spec.stages[m].line)) writes its WebVTT and SubRip times on the shortened stream; its JSON gives source times too, and find and the report use them (from: source transcribes the recording as recorded)")
            }
        }
        // Outputs two recordings could share (issue 33): the run fails the second, naming both.
        let ownName = ["stem", "name", "relpath"]
        for p in spec.stages {
            if let tap = p.config as? any TapConfig, tap.pathTemplate != .none, !ownName.contains(where: { tap.pathTemplate.uses($0) }) {
                out.append("\(file):\(p.line): warning: \(p.config.name) path \(tap.pathTemplate.text) names no recording ({stem}, {name} or {relpath}): two recordings that resolve it alike (one {title}) would share one output, and the run fails the second")
            }
            if let up = p.config as? any UploadStageConfig, !["{dir}", "{relpath}"].contains(where: { up.to.contains($0) }) {
                out.append("\(file):\(p.line): warning: upload to \(up.to) has no {dir}: recordings with one file name in two folders would go to one destination, and the run fails the second")
            }
        }
        return out
    }
}
