import Foundation
import Testing

/// A condition that did not come to hold in time.
public struct ConditionTimedOut: Error, CustomStringConvertible {
    public let timeout: Double
    public let sourceLocation: SourceLocation
    public var description: String { "condition not met within \(timeout) s (waited at \(sourceLocation))" }
}

/// Waits until `condition` holds, checking it every `step` seconds; throws
/// `ConditionTimedOut` when it still does not after `timeout` seconds. The
/// one way the tests wait for something to happen: on an observable fact,
/// with a deadline, never for a fixed time.
public func waitUntil(timeout: Double = 10, every step: Double = 0.005, sourceLocation: SourceLocation = #_sourceLocation,
               _ condition: () throws -> Bool) throws
{
    let deadline = Date().addingTimeInterval(timeout)
    while try !condition() {
        guard Date() < deadline else { throw ConditionTimedOut(timeout: timeout, sourceLocation: sourceLocation) }
        Thread.sleep(forTimeInterval: step)
    }
}
