import Foundation
import Testing

/// A condition that did not come to hold in time.
struct ConditionTimedOut: Error, CustomStringConvertible {
    let timeout: Double
    let sourceLocation: SourceLocation
    var description: String { "condition not met within \(timeout) s (waited at \(sourceLocation))" }
}

/// Waits until `condition` holds, checking it every `step` seconds; throws
/// `ConditionTimedOut` when it still does not after `timeout` seconds. The
/// one way the tests wait for something to happen: on an observable fact,
/// with a deadline, never for a fixed time.
func waitUntil(timeout: Double = 10, every step: Double = 0.005, sourceLocation: SourceLocation = #_sourceLocation,
               _ condition: () throws -> Bool) throws
{
    let deadline = Date().addingTimeInterval(timeout)
    while try !condition() {
        guard Date() < deadline else { throw ConditionTimedOut(timeout: timeout, sourceLocation: sourceLocation) }
        Thread.sleep(forTimeInterval: step)
    }
}

extension TestServer {
    /// Waits until exactly `count` long-polls are parked.
    func waitUntil(parked count: Int, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try EndToEndTests.waitUntil(timeout: timeout, sourceLocation: sourceLocation) { application.daemon.parkedCount == count }
    }
}

extension TestClient {
    /// The value of an unlabelled metric in `/metrics`, e.g. `observable_longpolls_parked`.
    func metric(_ name: String) throws -> Int64? {
        let text = try get("/metrics").text
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Int64($0.dropFirst(name.count + 1)) }
    }

    /// Waits until the server (in this process or another) has exactly
    /// `count` long-polls parked, as its `/metrics` say.
    func waitUntil(parked count: Int, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try EndToEndTests.waitUntil(timeout: timeout, sourceLocation: sourceLocation) {
            try metric("observable_longpolls_parked") == Int64(count)
        }
    }
}
