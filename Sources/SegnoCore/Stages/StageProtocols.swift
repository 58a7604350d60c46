import Foundation

/// Why a stage cannot start on a recording's real format; fails that recording only.
public struct StageStartError: Error, Sendable, CustomStringConvertible {
    public let stage: String
    public let message: String
    public init(stage: String, _ message: String) { self.stage = stage; self.message = message }
    public var description: String { "\(stage): \(message)" }
}

/// A stage config that brings other stages with it: the spec loader puts `companionsBefore`
/// just before it, as if the spec had listed them there.
public protocol CompanionStages: StageConfig {
    var companionsBefore: [any StageConfig] { get }
}

/// A tap the spec loader moves to the head of the chain when `observesSource` is set, so it sees
/// the recording as decoded (its fingerprint then holds no upstream transform).
public protocol SourceObservingStage: StageConfig {
    var observesSource: Bool { get }
}
