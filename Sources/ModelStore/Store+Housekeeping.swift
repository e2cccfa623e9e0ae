import Concurrency
import Logging

/// Once a second: the change log pruned, observers past their TTL dropped,
/// and observers' cursors and last use saved.
extension Store {
    /// Prunes the change log to its retained size, drops observers past their
    /// TTL and persists observers' cursors and last use. Run every second.
    public func maintain(now: Double = ServerClock.wallSeconds) {
        if let sharing {
            maintainShared(sharing.storage, now: now)
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

    /// Seconds past its TTL before an observer used through another
    /// instance is dropped: uses are saved by each instance every second.
    static let sharedExpiryGrace = 2.0

    func maintainShared(_ shared: any SharedStorage, now: Double) {
        let (prunedThrough, _, dirty) = registry.housekeeping(now: now, expiring: false, touchingParked: true)
        do {
            try writer.withLock { storage in
                try storage.housekeep(pruneThrough: prunedThrough, expired: [], used: dirty)
            }
            // Expiry is decided on the uses every instance saved.
            let expired = try writer.withLock { _ in try shared.expiredObservers(now: now, grace: Self.sharedExpiryGrace) }
            if !expired.isEmpty {
                try exclusive { storage in
                    for id in expired {
                        guard let waiter = registry.remove(id).waiter else { try storage.deleteObserver(id); continue }
                        try storage.deleteObserver(id)
                        if let wake = wakeHandler { wake([(id, waiter)]) }
                    }
                }
                logger.debug("observers expired: \(expired.count)")
            }
            if claim("journal") {
                try writer.withLock { _ in try shared.pruneJournal(now: now) }
            }
        } catch {
            logger.error("housekeeping failed: \(error)")
        }
    }
}
