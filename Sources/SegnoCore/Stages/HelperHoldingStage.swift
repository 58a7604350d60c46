/// A stage whose config keeps helper processes for the run (`transcribe`, `speakers`): the runner
/// stops the idle ones when the run ends, so they are reaped (their CPU time counts in segno's)
/// and none outlives it.
public protocol HelperHoldingStage {
    /// Stops and reaps the idle helpers. Called once, at the end of `segno run`.
    func stopIdleHelpers()
}
