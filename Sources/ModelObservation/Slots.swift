/// A small number for each observer, so the reverse index holds 16 bytes
/// a read and is appended to rather than hashed into. A slot's epoch moves
/// on when its observer forgets its reads or goes, which makes every
/// entry made before stale at once; a free slot is given again.
struct Slots {
    private var entries: [(observer: ObserverKey?, epoch: UInt32)] = []
    private var free: [Int32] = []

    mutating func take(_ observer: ObserverKey) -> Int32 {
        if let slot = free.popLast() {
            entries[Int(slot)].observer = observer
            return slot
        }
        entries.append((observer, 0))
        return Int32(entries.count - 1)
    }

    mutating func release(_ slot: Int32) {
        entries[Int(slot)].observer = nil
        entries[Int(slot)].epoch &+= 1
        free.append(slot)
    }

    /// Makes the entries of the observer in `slot` stale; it keeps the slot.
    mutating func renew(_ slot: Int32) {
        entries[Int(slot)].epoch &+= 1
    }

    func epoch(of slot: Int32) -> UInt32 {
        entries[Int(slot)].epoch
    }

    /// The observer in `slot`, nil when `epoch` is no longer the slot's
    /// (the entry naming them is stale).
    func observer(_ slot: Int32, _ epoch: UInt32) -> ObserverKey? {
        let entry = entries[Int(slot)]
        return entry.epoch == epoch ? entry.observer : nil
    }
}
