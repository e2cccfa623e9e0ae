import Foundation
import Observation
import Synchronization
import Testing

/// Waits on the caller's actor, without blocking it, until `condition`
/// holds; fails after `timeout` seconds.
public func eventually(isolation: isolated (any Actor)? = #isolation, timeout: Double = 30,
                sourceLocation: SourceLocation = #_sourceLocation, _ what: String = "", _ condition: () -> Bool) async throws
{
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        guard Date() < deadline else {
            Issue.record("not within \(timeout) s: \(what)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// Checks on the caller's actor, for `duration` seconds, that `condition`
/// keeps holding: fails the moment it does not.
public func holds(isolation: isolated (any Actor)? = #isolation, for duration: Double,
           sourceLocation: SourceLocation = #_sourceLocation, _ what: String = "", _ condition: () -> Bool) async throws
{
    let end = Date().addingTimeInterval(duration)
    while Date() < end {
        guard condition() else {
            Issue.record("stopped holding: \(what)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// Counts the invalidations `withObservationTracking` reports for what
/// `read` reads, tracking again after each.
@MainActor
public final class Invalidations {
    private final class Counter: Sendable {
        let value = Mutex(0)
    }

    private let counter = Counter()
    private let read: @MainActor () -> Void
    public var count: Int { counter.value.withLock { $0 } }

    public init(_ read: @escaping @MainActor () -> Void) {
        self.read = read
        arm()
    }

    private func arm() {
        withObservationTracking { read() } onChange: { [counter] in
            counter.value.withLock { $0 += 1 }
            Task { @MainActor in self.arm() }
        }
    }
}
