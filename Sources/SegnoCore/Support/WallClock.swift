import Foundation

/// Where a piece of the core reads the time of day: the system's clock in a run, a clock the
/// test moves by hand in the core's tests (`TestClock`, SegnoCoreTestSupport), as SwiftNIO's
/// `EmbeddedEventLoop.advanceTime(by:)` does. Given to what measures elapsed time (the claim
/// queue's batch size); a value, so it is passed like any other option.
public struct WallClock: Sendable {
    /// The time now.
    public let now: @Sendable () -> Date

    public init(now: @escaping @Sendable () -> Date) { self.now = now }

    /// The system's clock.
    public static let system = WallClock { Date() }
}
