import Concurrency
@testable import Models
import Testing
import TestSupport

/// The scheduler's thread, with an `advance` of the test's own.
@Suite struct JobSchedulerTests {
    @Test func aJobIsAdvancedEveryIntervalUntilItIsNoLongerRunning() throws {
        let scheduler = JobScheduler()
        let advanced = Locked<[String]>([])
        scheduler.start { ids in
            advanced.withLock { $0 += ids }
            // Running for three advances.
            return advanced.withLock { $0.count } < 3 ? Set(ids) : []
        }
        defer { scheduler.stop() }
        scheduler.schedule("a", intervalMs: 10)
        try waitUntil { scheduler.scheduledCount == 0 }
        #expect(advanced.withLock { $0 } == ["a", "a", "a"])
    }

    @Test func schedulingAJobTwiceSchedulesItOnce() {
        let scheduler = JobScheduler()
        scheduler.schedule("a", intervalMs: 1000)
        scheduler.schedule("a", intervalMs: 10)
        scheduler.schedule("b", intervalMs: 1000)
        #expect(scheduler.scheduledCount == 2)
        scheduler.unschedule("a")
        #expect(scheduler.scheduledCount == 1)
    }

    @Test func aStoppedSchedulerTakesNoMoreJobs() {
        let scheduler = JobScheduler()
        scheduler.start { Set($0) }
        let start = ContinuousClock.now
        scheduler.stop()
        #expect(ContinuousClock.now - start < .seconds(5), "stop waited for the scheduler's sleep")
        scheduler.schedule("a", intervalMs: 10)
        #expect(scheduler.scheduledCount == 0)
    }
}
