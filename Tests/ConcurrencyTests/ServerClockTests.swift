import Concurrency
import Testing

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
