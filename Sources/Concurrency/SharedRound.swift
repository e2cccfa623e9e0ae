/// Work that many callers need done *after* they arrived, done once for
/// all who wait at that moment: a caller joins the next round to start,
/// and one of the callers runs it while the others wait for its outcome.
///
/// (A read that must reflect every write committed before it began asks
/// the database for its newest version: one question serves every read
/// waiting while it is asked.)
public final class SharedRound: @unchecked Sendable {
    private let lock = ConditionLock()
    private var started: Int64 = 0
    private var finished: Int64 = 0
    private var running = false
    private var outcome: Result<Void, any Error> = .success(())

    public init() {}

    /// Returns once a run of `body` that started after this call has
    /// ended, rethrowing its error; runs it on this thread when none is
    /// running.
    public func pass(_ body: () throws -> Void) throws {
        let round: Int64? = lock.withLock { () -> Int64? in
            let needed = started + 1
            while finished < needed {
                if !running { return claim() }
                lock.wait()
            }
            return nil
        }
        guard let round else {
            try lock.withLock { outcome }.get()
            return
        }
        let result = Result { try body() }
        lock.withLock {
            finished = round
            outcome = result
            running = false
            lock.broadcast()
        }
        try result.get()
    }

    /// Takes the next round; call holding the lock.
    private func claim() -> Int64 {
        running = true
        started += 1
        return started
    }
}
