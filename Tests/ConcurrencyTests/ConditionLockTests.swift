import Concurrency
import Testing
import TestSupport

@Suite struct ConditionLockTests {
    @Test func aTimedWaitReturnsAtItsDeadline() {
        let lock = ConditionLock()
        let start = ServerClock.now
        let deadline = start.advanced(by: .milliseconds(50))
        lock.withLock {
            // A spurious wake-up may end a wait early: wait until the deadline has passed.
            while ServerClock.now < deadline { lock.wait(until: deadline) }
        }
        let waited = start.duration(to: ServerClock.now)
        #expect(waited >= .milliseconds(50))
        #expect(waited < .seconds(5))
    }

    /// A flag guarded by a `ConditionLock`.
    final class Flag: @unchecked Sendable {
        // Safe to share: `isSet` is only touched under `lock`.
        let lock = ConditionLock()
        var isSet = false
    }

    @Test func aSignalWakesAWaiterLongBeforeItsDeadline() throws {
        let flag = Flag()
        let waited = Locked<Duration?>(nil)
        let waiter = ServiceThread.start(name: "test.waiter") { _ in
            let start = ServerClock.now
            let deadline = start.advanced(by: .seconds(60))
            flag.lock.withLock {
                while !flag.isSet && ServerClock.now < deadline { flag.lock.wait(until: deadline) }
            }
            waited.withLock { $0 = start.duration(to: ServerClock.now) }
        }
        defer { waiter.stop() }
        flag.lock.withLock { flag.isSet = true }
        flag.lock.signal()
        try waitUntil { waited.withLock { $0 } != nil }
        let result = try #require(waited.withLock { $0 })
        #expect(result < .seconds(5))
    }
}
