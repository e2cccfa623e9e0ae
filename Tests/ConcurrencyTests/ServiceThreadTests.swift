import Concurrency
import Foundation
import Testing
import TestSupport

/// The one way a background thread runs and stops: `stop` wakes it from
/// `sleep` and returns once its body has.
@Suite struct ServiceThreadTests {
    @Test func stopWakesASleepingThreadAndReturnsOnceItsBodyHas() {
        let ended = Locked(false)
        let thread = ServiceThread.start(name: "test.sleeper") { thread in
            while !thread.isStopping {
                thread.sleep(seconds: 3600)
            }
            ended.withLock { $0 = true }
        }
        let start = ContinuousClock.now
        #expect(thread.stop(timeout: .seconds(10)))
        #expect(ContinuousClock.now - start < .seconds(5), "stop waited for the sleep instead of ending it")
        // Joined: the body's last line has run by the time stop returns.
        #expect(ended.withLock { $0 })
        #expect(thread.isStopping)
    }

    @Test func aWakeThatComesBeforeTheSleepIsNotLost() throws {
        let woken = DispatchSemaphore(value: 0)
        let slept = Locked<Bool?>(nil)
        let thread = ServiceThread.start(name: "test.waker") { thread in
            woken.wait()
            // The wake came before this sleep began: it returns at once.
            slept.withLock { $0 = thread.sleep(seconds: 3600) }
            while !thread.isStopping { thread.sleep(seconds: 3600) }
        }
        defer { thread.stop() }
        thread.wake()
        woken.signal()
        try waitUntil { slept.withLock { $0 } != nil }
        #expect(slept.withLock { $0 } == false, "a wake is not a stop")
    }

    @Test func sleepEndsAtItsDeadlineWhenNobodyWakesIt() throws {
        let slept = Locked<(stopping: Bool, waited: Duration)?>(nil)
        let thread = ServiceThread.start(name: "test.nap") { thread in
            let start = ServerClock.now
            let stopping = thread.sleep(until: start.advanced(by: .milliseconds(50)))
            slept.withLock { $0 = (stopping, start.duration(to: ServerClock.now)) }
        }
        defer { thread.stop() }
        try waitUntil { slept.withLock { $0 } != nil }
        let result = try #require(slept.withLock { $0 })
        #expect(!result.stopping)
        #expect(result.waited >= .milliseconds(50))
        #expect(result.waited < .seconds(5))
    }

    @Test func joinGivesUpAtItsTimeoutOnABodyThatHasNotEnded() {
        let release = DispatchSemaphore(value: 0)
        let thread = ServiceThread.start(name: "test.busy") { _ in release.wait() }
        // `join` does not ask the body to end: this one waits for the test.
        #expect(!thread.join(timeout: .milliseconds(50)))
        release.signal()
        #expect(thread.join(timeout: .seconds(10)))
    }
}

@Suite struct WaitingTests {
    @Test func waitTellsWhetherTheConditionCameToHold() {
        #expect(ServiceThread.wait(until: { true }, timeout: .milliseconds(10)))
        #expect(!ServiceThread.wait(until: { false }, timeout: .milliseconds(20)))
        let ran = Locked(false)
        ServiceThread.start(name: "test.once") { _ in ran.withLock { $0 = true } }
        #expect(ServiceThread.wait(until: { ran.withLock { $0 } }, timeout: .seconds(10)))
    }
}
