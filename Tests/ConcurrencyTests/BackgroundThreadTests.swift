import Concurrency
import Testing

@Suite struct BackgroundThreadTests {
    @Test func sleepUntilTellsWhetherTheConditionCameToHold() {
        #expect(BackgroundThread.sleep(until: { true }, timeout: .milliseconds(10)))
        #expect(!BackgroundThread.sleep(until: { false }, timeout: .milliseconds(20)))
        let ran = Locked(false)
        BackgroundThread.start(name: "test.once") { ran.withLock { $0 = true } }
        #expect(BackgroundThread.sleep(until: { ran.withLock { $0 } }, timeout: .seconds(10)))
    }
}
