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

/// Stops process `pid` with `SIGSTOP` and waits until it is stopped (its
/// state in /proc is `T`): a signal is delivered when the process next
/// runs, so what the test does next would otherwise race with it.
public func stopProcess(_ pid: Int32, sourceLocation: SourceLocation = #_sourceLocation) throws {
    kill(pid, SIGSTOP)
    try waitUntil(timeout: 10, sourceLocation: sourceLocation) { processState(pid) == "T" }
}

/// A process's state letter (`R`, `S`, `T` when stopped) from /proc; nil once it is gone.
public func processState(_ pid: Int32) -> String? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return nil }
    return stat[stat.index(after: close)...].split(separator: " ").first.map(String.init)
}
