import DequeModule
import Concurrency

/// Knows every observer and the property keys it has read, indexes the
/// reverse (key → observers), and keeps the recent change log in memory.
///
/// A committed change is matched through the reverse index, so its cost
/// grows with the observers that read its keys, not with all observers.
/// Like the standard library's `ObservationRegistrar`, it collects whom to
/// wake under its lock and leaves waking to the caller, after the lock.
public final class ObservationRegistry: Sendable {
    struct State {
        var observers: [String: ObserverSnapshot] = [:]
        var waiters: [String: any ChangeWaiter] = [:]
        var index: [PropertyKey: Set<String>] = [:]
        var log = Deque<Change>()
        var lastSeq: Int64 = 0
        /// Changes up to this `seq` are no longer kept.
        var prunedThrough: Int64 = 0
        var dirty: Set<String> = []
        /// Per observer, the seqs of the changes it receives, appended at
        /// publish time through the reverse index, so a poll reads its own
        /// short list instead of scanning the log.
        var inboxes: [String: Inbox] = [:]

        /// The observers a change to `key` at `seq` reaches: those that read
        /// `key` before it.
        func readers(of key: PropertyKey, before seq: Int64) -> [String] {
            guard let ids = index[key] else { return [] }
            return ids.filter { (observers[$0]?.reads[key] ?? .max) < seq }
        }

        /// The changes `observer` receives after `since` (no older than the
        /// oldest kept), at most `limit` unless that would split a
        /// transaction, and the cursor after them.
        func page(_ id: String, _ observer: ObserverSnapshot, after since: Int64, limit: Int) -> (changes: [Change], cursor: Int64) {
            var found: [Change] = []
            var cursor = lastSeq
            let firstSeq = log.first?.seq ?? (lastSeq + 1)
            if let inbox = inboxes[id], since >= inbox.floor {
                for seq in inbox.seqs where seq > since {
                    let change = log[Int(seq - firstSeq)]
                    if found.count >= limit, let last = found.last, change.transaction != last.transaction {
                        cursor = change.seq - 1
                        break
                    }
                    found.append(change)
                }
            } else {
                var position = max(0, Int(since + 1 - firstSeq))
                while position < log.count {
                    let change = log[position]
                    position += 1
                    if found.count >= limit, let last = found.last, change.transaction != last.transaction {
                        cursor = change.seq - 1
                        break
                    }
                    if observer.receives(change) { found.append(change) }
                }
            }
            return (found, cursor)
        }
    }

    /// The seqs of the changes one observer receives after `floor`. A poll
    /// from before `floor` scans the log instead (after a restart, or when
    /// a read lands after changes it should have seen).
    struct Inbox {
        var seqs: [Int64] = []
        var floor: Int64

        init(floor: Int64) {
            self.floor = floor
        }

        /// Forgets entries up to `seq`: a poll from `seq` acknowledged them.
        mutating func acknowledge(through seq: Int64) {
            guard seq > floor else { return }
            if let first = seqs.firstIndex(where: { $0 > seq }) {
                seqs.removeFirst(first)
            } else {
                seqs.removeAll(keepingCapacity: true)
            }
            floor = seq
        }
    }

    /// The outcome of asking for an observer's changes.
    public enum Poll: Sendable {
        case unknownObserver
        /// `since` is older than the oldest change kept.
        case gone(oldestAvailable: Int64)
        /// `since` is ahead of the newest change.
        case ahead(newest: Int64)
        /// Changes for this observer (possibly none) and the next cursor.
        case changes([Change], cursor: Int64)
        /// Nothing new yet: the waiter from `park` is now registered.
        case parked
    }

    public let retain: Int
    /// Most property keys one observer may have read.
    public let maxReadsPerObserver: Int
    private let state = Locked(State())

    public init(retain: Int, maxReadsPerObserver: Int = 100_000) {
        self.retain = max(1, retain)
        self.maxReadsPerObserver = maxReadsPerObserver
    }

    // MARK: - Start-up

    /// Loads persisted observers and the retained tail of the change log.
    public func restore(observers: [ObserverSnapshot], changes: [Change], lastSeq: Int64) {
        state.withLock { s in
            s.lastSeq = lastSeq
            s.log = Deque(changes.suffix(retain))
            s.prunedThrough = (s.log.first?.seq ?? lastSeq + 1) - 1
            for observer in observers {
                s.observers[observer.id] = observer
                s.inboxes[observer.id] = Inbox(floor: lastSeq)
                for key in observer.reads.keys { s.index[key, default: []].insert(observer.id) }
            }
        }
    }

    // MARK: - Facts

    public var lastSeq: Int64 { state.withLock { $0.lastSeq } }
    public var observerCount: Int { state.withLock { $0.observers.count } }
    public var oldestAvailableSeq: Int64 { state.withLock { $0.prunedThrough } }

    public func observer(_ id: String) -> ObserverSnapshot? {
        state.withLock { $0.observers[id] }
    }

    /// Observers that read `key` before `seq`: those a change to it at `seq` reaches.
    public func readers(of key: PropertyKey, before seq: Int64) -> [String] {
        state.withLock { $0.readers(of: key, before: seq) }
    }

    /// Observers that read `key` (for tests and diagnostics).
    public func readers(of key: PropertyKey) -> Set<String> {
        state.withLock { $0.index[key] ?? [] }
    }

    // MARK: - Observers

    public func add(_ observer: ObserverSnapshot) {
        state.withLock { s in
            s.observers[observer.id] = observer
            s.inboxes[observer.id] = Inbox(floor: s.lastSeq)
            for key in observer.reads.keys { s.index[key, default: []].insert(observer.id) }
        }
    }

    /// Removes an observer; returns whether it existed and its parked waiter.
    public func remove(_ id: String) -> (existed: Bool, waiter: (any ChangeWaiter)?) {
        state.withLock { s in
            guard let observer = s.observers.removeValue(forKey: id) else { return (false, nil) }
            Self.unindex(observer, in: &s)
            s.dirty.remove(id)
            s.inboxes[id] = nil
            return (true, s.waiters.removeValue(forKey: id))
        }
    }

    /// Forgets every read of an observer; returns false for an unknown one.
    public func clearReads(_ id: String, now: Double) -> Bool {
        state.withLock { s in
            guard let observer = s.observers[id] else { return false }
            Self.unindex(observer, in: &s)
            s.observers[id]!.reads = [:]
            s.observers[id]!.lastUsed = now
            s.dirty.insert(id)
            s.inboxes[id] = Inbox(floor: s.lastSeq)
            return true
        }
    }

    private static func unindex(_ observer: ObserverSnapshot, in s: inout State) {
        for key in observer.reads.keys {
            s.index[key]?.remove(observer.id)
            if s.index[key]?.isEmpty == true { s.index[key] = nil }
        }
    }

    /// Marks an observer as used now; returns false for an unknown one.
    public func touch(_ id: String, now: Double) -> Bool {
        state.withLock { s in
            guard s.observers[id] != nil else { return false }
            s.observers[id]!.lastUsed = now
            s.dirty.insert(id)
            return true
        }
    }

    // MARK: - Reads

    /// Marks observer `id` as used now and tells whether it has read every
    /// one of `keys` already (false for an unknown observer): such a read
    /// adds nothing, so it has nothing to store.
    public func touch(_ id: String, now: Double, hasRead keys: [PropertyKey]) -> Bool {
        state.withLock { s in
            guard let observer = s.observers[id] else { return false }
            s.observers[id]!.lastUsed = now
            s.dirty.insert(id)
            return keys.allSatisfy { observer.reads[$0] != nil }
        }
    }

    public enum TrackResult: Sendable {
        case unknownObserver
        case tooManyReads(limit: Int)
        /// Reads added (key and the `seq` it counts as read at), and a
        /// parked waiter to wake if the log already holds a change for them
        /// (a write that landed between the read and now).
        case tracked(added: [(PropertyKey, Int64)], wake: (any ChangeWaiter)?)
    }

    /// Records that observer `id` read `keys` in a response that reflected
    /// every change up to `seq`. A key already read keeps its earlier `seq`.
    ///
    /// The reads to add are handed to `persist` first, outside the lock, and
    /// take effect only once it returns: until then no poll can deliver a
    /// change for them, so an observer is never told of a change (or of an
    /// insert, which implies reads) through a read that is not stored yet.
    /// The reads are worked out before `persist` runs, so the caller keeps
    /// commits out until this returns (the store holds its writer lock):
    /// a change published in between would not be replayed.
    public func track(_ id: String, keys: [PropertyKey], at seq: Int64, now: Double,
                      persist: ([(PropertyKey, Int64)]) throws -> Void) rethrows -> TrackResult
    {
        let plan: (added: [(PropertyKey, Int64)], replayed: Bool)
        switch state.withLock({ s in Self.plan(id, keys: keys, at: seq, now: now, limit: maxReadsPerObserver, in: &s) }) {
        case .refused(let result): return result
        case .reads(let added, let replayed): plan = (added, replayed)
        }
        if !plan.added.isEmpty { try persist(plan.added) }
        return state.withLock { s in
            // Expired in between: its stored reads go with it.
            guard s.observers[id] != nil else { return .unknownObserver }
            for (key, readAt) in plan.added where s.observers[id]!.reads[key] == nil {
                s.observers[id]!.reads[key] = readAt
                s.index[key, default: []].insert(id)
            }
            // Changes found by the replay are older than the inbox's newest
            // entries: let polls from before now scan the log.
            if plan.replayed { s.inboxes[id] = Inbox(floor: s.lastSeq) }
            let waiter = plan.replayed ? s.waiters.removeValue(forKey: id) : nil
            return .tracked(added: plan.added, wake: waiter)
        }
    }

    /// `track` for a registry whose reads are stored nowhere else.
    public func track(_ id: String, keys: [PropertyKey], at seq: Int64, now: Double) -> TrackResult {
        track(id, keys: keys, at: seq, now: now, persist: { _ in })
    }

    /// What `track` is to do.
    private enum TrackPlan {
        case refused(TrackResult)
        /// Reads to add, and whether changes already in the log reach the
        /// observer through them.
        case reads([(PropertyKey, Int64)], replayed: Bool)
    }

    /// Works out what `track` adds, without adding it; marks the observer used.
    private static func plan(_ id: String, keys: [PropertyKey], at seq: Int64, now: Double, limit: Int,
                             in s: inout State) -> TrackPlan
    {
        guard var observer = s.observers[id] else { return .refused(.unknownObserver) }
        s.observers[id]!.lastUsed = now
        s.dirty.insert(id)
        var added: [(PropertyKey, Int64)] = []
        for key in keys where observer.reads[key] == nil {
            observer.reads[key] = seq
            added.append((key, seq))
        }
        if observer.reads.count > limit { return .refused(.tooManyReads(limit: limit)) }
        var replayed = false
        if !added.isEmpty && seq < s.lastSeq {
            // Changes committed after the response was built: replay them
            // so inserted elements count as read, and wake a waiter.
            for change in s.log where change.seq > seq && observer.receives(change) {
                replayed = true
                for key in change.impliedReads where observer.reads[key] == nil {
                    observer.reads[key] = change.seq
                    added.append((key, change.seq))
                }
            }
        }
        return .reads(added, replayed: replayed)
    }

    // MARK: - Changes

    /// Appends committed changes (in `seq` order) to the log and returns the
    /// parked waiters of the observers that receive any of them, removed
    /// from the registry: the caller answers them after this returns.
    public func publish(_ changes: [Change]) -> [(observer: String, waiter: any ChangeWaiter)] {
        guard !changes.isEmpty else { return [] }
        return state.withLock { s in
            var woken: [(observer: String, waiter: any ChangeWaiter)] = []
            for change in changes {
                s.log.append(change)
                s.lastSeq = change.seq
                var receivers = Set<String>()
                for key in change.keys { receivers.formUnion(s.readers(of: key, before: change.seq)) }
                for id in receivers {
                    s.inboxes[id, default: Inbox(floor: change.seq - 1)].seqs.append(change.seq)
                    for key in change.impliedReads where s.observers[id]?.reads[key] == nil {
                        s.observers[id]!.reads[key] = change.seq
                        s.index[key, default: []].insert(id)
                    }
                    if let waiter = s.waiters.removeValue(forKey: id) {
                        woken.append((id, waiter))
                    }
                }
            }
            while s.log.count > retain, let first = s.log.popFirst() {
                s.prunedThrough = first.seq
            }
            return woken
        }
    }

    /// The changes observer `id` receives after `since` (its own cursor when
    /// nil), at most `limit` unless that would split a transaction. With
    /// `coalesce`, they are folded (`Change.coalesce`), and a page of
    /// `limit` that folds to nothing is passed over for the next one: the
    /// answer says something, or reaches the newest change. When there is
    /// nothing to say and `park` is given, `park` is called under the lock
    /// (so no change can slip in between) and its waiter registered; a
    /// waiter it displaces is returned so the caller can answer it. Without
    /// `displacing`, a waiter is parked only where none is, and the poll is
    /// answered otherwise (a woken poll parking again yields to a newer one).
    public func poll(_ id: String, since: Int64?, limit: Int, coalesce: Bool = false, now: Double, displacing: Bool = true,
                     park: (() -> (any ChangeWaiter)?)? = nil) -> (poll: Poll, displaced: (any ChangeWaiter)?)
    {
        state.withLock { s in
            guard let observer = s.observers[id] else { return (.unknownObserver, nil) }
            s.observers[id]!.lastUsed = now
            s.dirty.insert(id)
            let since = since ?? observer.cursor
            if since < s.prunedThrough { return (.gone(oldestAvailable: s.prunedThrough), nil) }
            if since > s.lastSeq { return (.ahead(newest: s.lastSeq), nil) }
            if var inbox = s.inboxes[id], since >= inbox.floor {
                inbox.acknowledge(through: max(since, s.prunedThrough))
                s.inboxes[id] = inbox
            }
            var (found, cursor) = s.page(id, observer, after: since, limit: limit)
            if coalesce {
                found = Change.coalesce(found)
                while found.isEmpty && cursor < s.lastSeq {
                    (found, cursor) = s.page(id, observer, after: cursor, limit: limit)
                    found = Change.coalesce(found)
                }
            }
            if found.isEmpty, let park, displacing || s.waiters[id] == nil, let waiter = park() {
                let displaced = s.waiters.updateValue(waiter, forKey: id)
                return (.parked, displaced)
            }
            s.observers[id]!.cursor = cursor
            return (.changes(found, cursor: cursor), nil)
        }
    }

    /// Removes `waiter` if it is still observer `id`'s waiter.
    public func withdraw(_ waiter: any ChangeWaiter, of id: String) {
        state.withLock { s in
            if let current = s.waiters[id], current === waiter { s.waiters[id] = nil }
        }
    }

    // MARK: - Housekeeping

    /// Removes observers unused for longer than their TTL (a parked
    /// long-poll counts as use) and returns their ids.
    public func expire(now: Double) -> [String] {
        state.withLock { s in
            var expired: [String] = []
            for (id, observer) in s.observers where s.waiters[id] == nil && observer.lastUsed + Double(observer.ttlSeconds) < now {
                expired.append(id)
            }
            for id in expired {
                if let observer = s.observers.removeValue(forKey: id) { Self.unindex(observer, in: &s) }
                s.dirty.remove(id)
                s.inboxes[id] = nil
            }
            return expired
        }
    }

    /// Observers whose cursor or last use changed since the last call, for
    /// persisting. A parked observer is not rewritten every second: its
    /// poll's answer marks it used, and expiry skips it while it is parked.
    public func takeDirty(now: Double) -> [ObserverSnapshot] {
        state.withLock { s in
            let snapshots = s.dirty.compactMap { s.observers[$0] }
            s.dirty.removeAll(keepingCapacity: true)
            return snapshots
        }
    }

    /// Every parked waiter, removed (used when the server stops).
    public func removeAllWaiters() -> [(observer: String, waiter: any ChangeWaiter)] {
        state.withLock { s in
            let all = s.waiters.map { (observer: $0.key, waiter: $0.value) }
            s.waiters.removeAll()
            return all
        }
    }
}
