import SegnoCore

/// `find --measure 'clipped>0'`: a condition on a figure a measuring tap kept for a recording
/// (a name in a declaration's `measures`, e.g. the `stats` tap's). Which steps hold measures is
/// read from their declarations (`reportsMeasures`), never from a stage's name.
struct MeasureFilter: Sendable {
    /// How the figure compares with the value.
    enum Comparison: String, CaseIterable, Sendable {
        case atMost = "<=", atLeast = ">=", below = "<", above = ">", equal = "="
    }

    let name: String
    let comparison: Comparison
    let value: Double

    /// Parses `NAME<VALUE` (also `<=`, `>`, `>=`, `=`); nil for anything else.
    init?(_ text: String) {
        for c in Comparison.allCases {
            guard let r = text.range(of: c.rawValue) else { continue }
            let name = text[..<r.lowerBound].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, let v = Double(text[r.upperBound...].trimmingCharacters(in: .whitespaces)), v.isFinite else { return nil }
            (self.name, comparison, value) = (name, c, v)
            return
        }
        return nil
    }

    /// Every measure name the declarations know, sorted (for the usage error).
    static func names(_ declarations: [String: StageDeclaration]) -> [String] {
        Set(declarations.values.filter { $0.capabilities.contains(.reportsMeasures) }.flatMap { $0.measures.map(\.key) }).sorted()
    }

    /// True when a step of `recording` that reports measures holds this figure and it compares so.
    func matches(_ recording: RecordingState, _ declarations: [String: StageDeclaration]) -> Bool {
        recording.steps.values.contains { step in
            guard let d = declarations[StepIdentity(stored: step.stage).kind], d.capabilities.contains(.reportsMeasures),
                  d.measures.contains(where: { $0.key == name }), let x = step.values[name].flatMap(Double.init) else { return false }
            switch comparison {
            case .atMost: return x <= value
            case .atLeast: return x >= value
            case .below: return x < value
            case .above: return x > value
            case .equal: return x == value
            }
        }
    }
}
