import SegnoCore

/// Specs for the loader's tests, against one registry: the smallest spec that loads (one stage,
/// `stage`), a spec with given stages, loading it from `/base`, and the error a spec must raise.
package struct SpecFixture: Sendable {
    package let registry: StageRegistry
    /// The one stage of `minimal`, as a YAML list item's text (`collect: { path: "{stem}.flac" }`).
    package let stage: String

    package init(registry: StageRegistry, stage: String) {
        self.registry = registry
        self.stage = stage
    }

    /// The smallest spec that loads.
    package var minimal: String { withStages("  - " + stage) }

    /// A spec with `stages:` replaced by `stages` (each line indented by the caller).
    package func withStages(_ stages: String) -> String {
        """
        version: 1
        input:
          root: in
        output:
          root: out
        stages:
        \(stages)
        """
    }

    /// Loads `yaml` as `spec.yaml` in `/base`, with `env` as the environment.
    package func load(_ yaml: String, env: [String: String] = [:]) throws(SpecError) -> JobSpec {
        try SpecLoader.parse(yaml, file: "spec.yaml", baseDirectory: "/base", registry: registry, environment: env)
    }

    /// The error a spec must raise; nil when it loads (callers `#require` or compare it, so a spec
    /// that loads fails the test). No `import Testing` here: a release build builds this target too.
    package func failure(_ yaml: String, env: [String: String] = [:]) -> SpecError? {
        do {
            _ = try load(yaml, env: env)
            return nil
        } catch {
            return error
        }
    }
}
