import Concurrency
import Dispatch
import Foundation
import Testing

@Suite struct LockedTests {
    @Test func concurrentUpdatesAreNotLost() {
        let counter = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 {
                counter.withLock { $0 += 1 }
            }
        }
        #expect(counter.withLock { $0 } == 80_000)
    }

    @Test func withLockReturnsTheBodysResultAndRethrows() {
        struct Refused: Error {}
        let value = Locked([1, 2])
        #expect(value.withLock { $0.reduce(0, +) } == 3)
        #expect(throws: Refused.self) { try value.withLock { _ in throw Refused() } }
        // A throwing body leaves the lock free.
        #expect(value.withLock { $0.count } == 2)
    }

    @Test func aWeakSlotDoesNotKeepItsObjectAlive() {
        final class Object {}
        var object: Object? = Object()
        let slot = Locked(Weak(object))
        #expect(slot.withLock { $0.object } != nil)
        object = nil
        #expect(slot.withLock { $0.object } == nil)
    }
}

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

@Suite struct ServerClockTests {
    @Test func anInstantAdvancedByADurationIsThatDurationAway() {
        let now = ServerClock.now
        let later = now.advanced(by: .milliseconds(1500))
        #expect(now.duration(to: later) == .milliseconds(1500))
        #expect(later.duration(to: now) == .milliseconds(-1500))
        #expect(now < later)
        #expect(later.advanced(by: .milliseconds(-1500)) == now)
    }

    @Test func theMonotonicClockNeverGoesBack() {
        var previous = ServerClock.now
        for _ in 0..<1000 {
            let next = ServerClock.now
            #expect(next >= previous)
            previous = next
        }
    }
}

@Suite struct BackgroundThreadTests {
    @Test func sleepUntilTellsWhetherTheConditionCameToHold() {
        #expect(BackgroundThread.sleep(until: { true }, timeout: .milliseconds(10)))
        #expect(!BackgroundThread.sleep(until: { false }, timeout: .milliseconds(20)))
        let ran = Locked(false)
        BackgroundThread.start(name: "test.once") { ran.withLock { $0 = true } }
        #expect(BackgroundThread.sleep(until: { ran.withLock { $0 } }, timeout: .seconds(10)))
    }
}
