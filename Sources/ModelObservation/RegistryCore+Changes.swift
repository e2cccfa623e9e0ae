import DequeModule
import HeapModule

// The change log: changes published and matched to their readers, polls,
// cursors and waiters, and housekeeping (expiry, what to persist).
extension RegistryCore {
    // MARK: - Changes

    /// Appends committed changes (in `seq` order) to the log and returns the
    /// parked waiters of the observers that receive any of them, removed
    /// from the registry: the caller answers them after this returns.
    /// With `collectingImplied`, the reads each insert adds to each of its
    /// receivers are returned too (`implied`).
    mutating func publish(_ changes: [Change], collectingImplied: Bool = false)
        -> (woken: [(observer: String, waiter: ChangeWaiter)], implied: [ObserverReads])
    {
        var implied: [ObserverReads] = []
        guard !changes.isEmpty else { return ([], implied) }
        var woken: [(observer: String, waiter: ChangeWaiter)] = []
        for change in changes {
            s.log.append(change)
            s.logBytes += change.weight
            s.memory.log += MemoryEstimate.of(change)
            s.lastSeq = change.seq
            // One key (most changes) has each reader once: no set to build.
            // Through shapes an observer may be named twice (a shape of
            // its group's and one of its own): its inbox takes a `seq`
            // once, its waiter is woken once, and implied reads are set once.
            var receivers: [ObserverKey]
            // The first `keyReaders` read a key of the change; the others a
            // shape, which covers the inserted element already: no implied reads.
            var keyReaders = Int.max
            if change.places.isEmpty {
                receivers = change.keys.count == 1
                    ? s.readers(of: change.keys[0], before: change.seq)
                    : Array(Set(change.keys.flatMap { s.readers(of: $0, before: change.seq) }))
            } else {
                receivers = []
                let plain = change.keys.filter(\.isReadable)
                if plain.count == 1 {
                    receivers = s.readers(of: plain[0], before: change.seq)
                } else if plain.count > 1 {
                    receivers = Array(Set(plain.flatMap { s.readers(of: $0, before: change.seq) }))
                }
                keyReaders = receivers.count
                for place in change.places { s.readers(of: place, in: change, into: &receivers) }
            }
            // Per receiver, nothing that copies the change: this loop runs
            // once for every observer a change reaches.
            let seq = change.seq
            let impliedReads = change.impliedReads
            for (index, id) in receivers.enumerated() {
                if let position = s.inboxes.index(forKey: id) {
                    if s.inboxes.values[position].seqs.last != seq {
                        s.inboxes.values[position].seqs.append(seq)
                        s.memory.inboxEntries += 1
                        let count = s.inboxes.values[position].seqs.count
                        if count > Inbox.limit || (count > Inbox.limitPastCap && s.memory.bytes > maxBytes) {
                            // Not polled for long, or the registry past its
                            // cap: this change alone (see `Inbox.limit`).
                            s.memory.inboxEntries -= s.inboxes.values[position].seqs.count - 1
                            var inbox = Inbox(floor: seq - 1)
                            inbox.seqs.append(seq)
                            s.inboxes.values[position] = inbox
                        }
                    }
                } else {
                    var inbox = Inbox(floor: seq - 1)
                    inbox.seqs.append(seq)
                    s.inboxes[id] = inbox
                    s.memory.inboxEntries += 1
                }
                if !impliedReads.isEmpty, index < keyReaders, PlantedFault.current != .dropImpliedReads,
                   let position = s.observers.index(forKey: id)
                {
                    let slot = s.observers.values[position].slot
                    let epoch = s.slots.epoch(of: slot)
                    var added: [PropertyKey] = []
                    // A key already read keeps its `seq` (an appended row
                    // implies the rows' membership its reader read): moved
                    // later, a replay from before would pass over changes.
                    for key in impliedReads where s.observers.values[position].reads[key] == nil {
                        s.ownReads(at: position)
                        s.observers.values[position].setRead(key, at: seq)
                        s.index(key, at: seq, slot: slot, epoch: epoch)
                        s.charge(MemoryEstimate.read(key), at: position)
                        if collectingImplied { added.append(key) }
                    }
                    if !added.isEmpty { implied.append(ObserverReads(observer: id.id, seq: seq, keys: added)) }
                }
                if !s.waiters.isEmpty, let waiter = s.waiters.removeValue(forKey: id) {
                    woken.append((id.id, waiter))
                }
            }
        }
        prune()
        if PlantedFault.current == .wakeEveryPoll {
            for (id, waiter) in s.waiters where !woken.contains(where: { $0.observer == id.id }) { woken.append((id.id, waiter)) }
            s.waiters.removeAll()
        }
        return (woken, implied)
    }

    /// Drops the oldest changes while more than `retain` are kept, or they
    /// weigh more than `retainBytes` (keeping the newest).
    mutating func prune() {
        while s.log.count > retain || (s.logBytes > retainBytes && s.log.count > 1), let first = s.log.popFirst() {
            s.logBytes -= first.weight
            s.memory.log -= MemoryEstimate.of(first)
            s.prunedThrough = first.seq
        }
    }

    /// The changes observer `id` receives after `since` (its own cursor when
    /// nil), at most `limit` unless that would split a transaction. With
    /// `coalesce`, they are folded (`Change.coalesce`), and a page of
    /// `limit` that folds to nothing is passed over for the next one: the
    /// answer says something, or reaches the newest change. When there is
    /// nothing to say, `parking` decides (see `Parking`); a waiter parked
    /// displaces the one parked before, returned so the caller can answer
    /// it. Without `displacing`, a waiter is parked only where none is, and
    /// the poll is answered otherwise (a woken poll parking again yields to
    /// a newer one).
    mutating func poll(_ id: String, since: Int64?, limit: Int, coalesce: Bool = false, now: Double, displacing: Bool = true,
                       parking: Parking = .never) -> (poll: Poll, displaced: ChangeWaiter?)
    {
        let id = ObserverKey(id)
        // Found once by position and updated in place: a poll is on the
        // path of every wake-up, and each lookup hashes the id again.
        guard let position = s.observers.index(forKey: id) else { return (.unknownObserver, nil) }
        s.use(at: position, now: now)
        let observer = s.observers.values[position]
        let since = since ?? observer.cursor
        if since < s.prunedThrough { return (.gone(oldestAvailable: s.prunedThrough), nil) }
        if since > s.lastSeq { return (.ahead(newest: s.lastSeq), nil) }
        let inboxPosition = s.inboxes.index(forKey: id)
        if let inboxPosition, since >= s.inboxes.values[inboxPosition].floor {
            s.memory.inboxEntries -= s.inboxes.values[inboxPosition].acknowledge(through: max(since, s.prunedThrough))
        }
        let inbox = inboxPosition.map { s.inboxes.values[$0] }
        var (found, cursor) = s.page(observer, inbox: inbox, after: since, limit: limit)
        if coalesce {
            found = Change.coalesce(found)
            while found.isEmpty && cursor < s.lastSeq {
                (found, cursor) = s.page(observer, inbox: inbox, after: cursor, limit: limit)
                found = Change.coalesce(found)
            }
        }
        if found.isEmpty {
            switch parking {
            case .never:
                break
            case .ask:
                // Nothing moves: the caller parks, then asks again.
                return (.nothingYet, nil)
            case .waiter(let waiter):
                // Parked already (a stream's delivery queued behind the one
                // that parked it): it stays, as no other consumer took its place.
                if let current = s.waiters[id], current === waiter { return (.parked, nil) }
                if displacing || s.waiters[id] == nil {
                    let displaced = s.waiters.updateValue(waiter, forKey: id)
                    return (.parked, displaced)
                }
            }
        }
        // The cursor last answered, whatever `since` was, is where a poll
        // without `since` goes on: saved at the next housekeeping, and so
        // by a clean stop.
        if observer.cursor != cursor, PlantedFault.current != .forgetCursor {
            s.observers.values[position].cursor = cursor
            s.dirty.insert(id)
        }
        return (.changes(found, cursor: cursor), nil)
    }

    /// Makes `cursor` observer `id`'s cursor, the default `since`: the one
    /// last answered to it (a repair's), or saved by another instance.
    /// Saved at the next housekeeping when it moved.
    mutating func setCursor(of id: String, to cursor: Int64) {
        let id = ObserverKey(id)
        guard let position = s.observers.index(forKey: id), PlantedFault.current != .forgetCursor else { return }
        let cursor = min(cursor, s.lastSeq)
        guard s.observers.values[position].cursor != cursor else { return }
        s.observers.values[position].cursor = cursor
        s.dirty.insert(id)
    }

    /// Observer `id`'s parked waiter, if any.
    func waiter(of id: String) -> ChangeWaiter? {
        s.waiters[ObserverKey(id)]
    }

    /// Removes and returns observer `id`'s parked waiter, if any.
    mutating func takeWaiter(of id: String) -> ChangeWaiter? {
        s.waiters.removeValue(forKey: ObserverKey(id))
    }

    /// Removes `waiter` if it is still observer `id`'s waiter.
    mutating func withdraw(_ waiter: ChangeWaiter, of id: String) {
        let id = ObserverKey(id)
        if let current = s.waiters[id], current === waiter { s.waiters[id] = nil }
    }

    // MARK: - Housekeeping

    /// Removes observers unused for longer than their TTL (a parked
    /// long-poll counts as use) and returns their ids.
    mutating func expire(now: Double) -> [String] {
        var expired: [String] = []
        var again: [Expiry] = []
        while let due = s.expiries.min, due.time < now {
            _ = s.expiries.removeMin()
            guard let observer = s.observers[due.id] else { continue }
            let time = observer.lastUsed + Double(observer.ttlSeconds)
            if time < now && s.waiters[due.id] == nil {
                expired.append(due.id.id)
            } else {
                // Used since, or parked (a parked poll counts as use: looked
                // at again in a second, as a walk would).
                again.append(Expiry(at: time < now ? now + 1 : time, due.id))
            }
        }
        for expiry in again { s.expiries.insert(expiry) }
        for id in expired.map(ObserverKey.init) {
            if let observer = s.observers.removeValue(forKey: id) {
                droppedReadRecords += Self.records(of: observer)
                s.unindex(observer, releasing: true)
                s.forget(observer)
            }
            s.dirty.remove(id)
            s.replaceInbox(of: id, with: nil)
        }
        return expired
    }

    /// Observers to save since the last call: those whose implicit cursor
    /// was used, and those whose saved use is stale (`use(at:)`). A parked
    /// observer is not rewritten every second: its poll's answer marks it
    /// used, and expiry skips it while it is parked. With `touchingParked`,
    /// a parked observer whose saved use is past half its TTL counts as
    /// used now (where other processes decide expiry on what is saved).
    mutating func takeDirty(now: Double, touchingParked: Bool = false) -> [ObserverSnapshot] {
        if touchingParked {
            for id in s.waiters.keys {
                guard let observer = s.observers[id], observer.savedUse + Double(observer.ttlSeconds) / 2 < now else { continue }
                s.observers[id]!.lastUsed = now
                s.dirty.insert(id)
            }
        }
        var snapshots: [ObserverSnapshot] = []
        snapshots.reserveCapacity(s.dirty.count)
        for id in s.dirty {
            guard let position = s.observers.index(forKey: id) else { continue }
            s.observers.values[position].savedUse = s.observers.values[position].lastUsed
            snapshots.append(s.observers.values[position])
        }
        s.dirty.removeAll(keepingCapacity: true)
        return snapshots
    }
}
