import Concurrency
import HeapModule

/// Every parked connection, by id and by deadline.
struct ParkingLot {
    private struct Entry: Comparable {
        let deadline: ServerClock.Instant
        let id: UInt64
        static func < (a: Entry, b: Entry) -> Bool {
            a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
        }
    }

    private var byID: [UInt64: ParkedConnection] = [:]
    private var deadlines = Heap<Entry>()

    var count: Int { byID.count }

    /// The earliest deadline (perhaps of a connection answered since).
    var nextDeadline: ServerClock.Instant? { deadlines.min?.deadline }

    mutating func insert(_ parked: ParkedConnection) {
        byID[parked.id] = parked
        deadlines.insert(Entry(deadline: parked.deadline, id: parked.id))
    }

    /// Removes `parked`; returns false when it was not here (already resumed).
    mutating func remove(_ parked: ParkedConnection) -> Bool {
        byID.removeValue(forKey: parked.id) != nil
    }

    /// Removes and returns every connection whose deadline is at or before `now`.
    mutating func removeExpired(now: ServerClock.Instant) -> [ParkedConnection] {
        var expired: [ParkedConnection] = []
        while let first = deadlines.min, first.deadline <= now {
            deadlines.removeMin()
            if let parked = byID.removeValue(forKey: first.id) { expired.append(parked) }
        }
        // Entries of connections answered early stay in the heap until their
        // deadline; rebuild when they dominate so memory stays bounded.
        if deadlines.count > 1024 && deadlines.count > 4 * byID.count {
            deadlines = Heap(byID.values.map { Entry(deadline: $0.deadline, id: $0.id) })
        }
        return expired
    }

    mutating func removeAll() -> [ParkedConnection] {
        let all = Array(byID.values)
        byID.removeAll()
        deadlines = Heap()
        return all
    }
}
