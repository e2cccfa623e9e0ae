import Concurrency
import Logging

extension Store {
    /// Prunes the change log to its retained size, drops observers past their
    /// TTL and persists observers' cursors and last use. Run every second.
    public func maintain(now: Double = ServerClock.wallSeconds) {
        if let shared {
            maintainShared(shared, now: now)
            return
        }
        let (prunedThrough, expired, dirty) = registry.housekeeping(now: now, expiring: true)
        do {
            try writer.withLock { storage in
                try storage.housekeep(pruneThrough: prunedThrough, expired: expired, used: dirty)
            }
        } catch {
            logger.error("housekeeping failed: \(error)")
        }
        if !expired.isEmpty { logger.debug("observers expired: \(expired.count)") }
    }
}
