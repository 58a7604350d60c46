/// A stage that runs something installed outside segno (a speech engine's library, a model, a
/// helper program): `validate` and `run` ask it before any work whether this machine has it,
/// so a name that does not exist is refused at once instead of failing every recording as an
/// environment failure (decision 0066).
public protocol NeedsInstalledParts: StageConfig {
    /// What this machine lacks for the stage, one line each: what is missing, the names the stage
    /// knows and where it looked. Empty when everything is there. A few `stat` calls.
    func missingParts() -> [String]
}

extension JobSpec {
    /// Every stage's missing parts, as `FILE:LINE: STAGE: …` lines, in the spec's order.
    public func missingParts() -> [String] {
        var out: [String] = []
        for p in stages {
            guard let needs = p.config as? any NeedsInstalledParts else { continue }
            out += needs.missingParts().map { "\(file):\(p.line): \(p.config.name): \($0)" }
        }
        return out
    }
}
