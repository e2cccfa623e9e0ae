import Concurrency
import Testing
import TestSupport

@Suite struct SharedRoundTests {
    /// A caller that arrives while a round runs is not served by that round
    /// (it began before the caller): it waits for the next one, which all
    /// the callers waiting by then share.
    @Test func aCallerArrivingDuringARoundWaitsForTheNextOneWhichLaterCallersShare() throws {
        let round = SharedRound()
        let runs = Locked(0)
        let gate = Locked(false)
        let body: @Sendable () -> Void = {
            let run = runs.withLock { $0 += 1; return $0 }
            // The first round is held open until the others have arrived.
            if run == 1 { _ = ServiceThread.wait(until: { gate.withLock { $0 } }, timeout: .seconds(10)) }
        }
        let finished = Locked(0)
        var threads: [ServiceThread] = []
        threads.append(ServiceThread.start(name: "test.first") { _ in
            try? round.pass(body)
            finished.withLock { $0 += 1 }
        })
        try waitUntil(timeout: 5) { runs.withLock { $0 } == 1 }
        for index in 0..<5 {
            threads.append(ServiceThread.start(name: "test.caller\(index)") { _ in
                try? round.pass(body)
                finished.withLock { $0 += 1 }
            })
        }
        // None of the five is served by the round that began before them.
        _ = ServiceThread.wait(until: { finished.withLock { $0 } > 0 }, timeout: .milliseconds(100))
        #expect(finished.withLock { $0 } == 0)
        gate.withLock { $0 = true }
        try waitUntil(timeout: 10) { finished.withLock { $0 } == 6 }
        for thread in threads { _ = thread.join(timeout: .seconds(5)) }
        // One more round served the five together.
        #expect(runs.withLock { $0 } == 2)
    }

    @Test func anErrorReachesTheCallersOfItsRoundOnly() throws {
        struct Refused: Error {}
        let round = SharedRound()
        #expect(throws: Refused.self) { try round.pass { throw Refused() } }
        try round.pass {}
    }
}
