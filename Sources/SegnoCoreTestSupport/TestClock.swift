import Foundation
import SegnoCore
import Synchronization

/// A clock the test moves by hand (`advance(by:)`), as SwiftNIO's `EmbeddedEventLoop` does:
/// what measures elapsed time is given `clock` and sees exactly the seconds the test says.
package final class TestClock: Sendable {
    private let current: Mutex<Date>

    /// Starts at `start` (14 November 2023 by default: no test depends on the real date).
    package init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) { current = Mutex(start) }

    /// The time on this clock.
    package var now: Date { current.withLock { $0 } }

    /// Moves the clock on by `seconds`.
    package func advance(by seconds: Double) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }

    /// This clock as the library takes one.
    package var clock: WallClock { WallClock { [self] in now } }
}
