import Foundation

/// Waiting in tests for something to happen, never for a fixed time: `until` checks a condition
/// every few milliseconds and returns as soon as it holds.
package enum Wait {
    /// Returns true as soon as `condition` holds, false after `timeout` seconds without it.
    /// `condition` is checked first at once, then every `interval` seconds.
    @discardableResult
    package static func until(timeout: Double, interval: Double = 0.005, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if condition() { return true }
            if Date() >= deadline { return false }
            Thread.sleep(forTimeInterval: interval)
        }
    }
}
