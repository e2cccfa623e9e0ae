import DequeModule
import HeapModule

/// Knows every observer and the property keys it has read, indexes the
/// reverse (key → observers), and keeps the recent change log in memory.
///
/// A committed change is matched through the reverse index, so its cost
/// grows with the observers that read its keys, not with all observers.
/// Like the standard library's `ObservationRegistrar`, it collects whom to
/// wake and leaves waking to the caller. It is a value, and only
/// `ObservationRegistry` holds one, behind its lock.
struct RegistryCore: Sendable {
    typealias Poll = ObservationRegistry.Poll
    typealias TrackResult = ObservationRegistry.TrackResult
    typealias TrackPlan = ObservationRegistry.TrackPlan
    typealias Parking = ObservationRegistry.Parking

    let retain: Int
    /// Most bytes the kept changes may weigh (`Change.weight`): the oldest
    /// go first past it, however few are kept; the newest always stays.
    let retainBytes: Int
    /// About how many stored records of reads no longer count, of
    /// observers removed or whose reads were cleared since the start: one
    /// for each `seq` among an observer's reads. What decides when stored
    /// reads are compacted.
    /// (Set only by the registry's own operations.)
    var droppedReadRecords = 0
    /// Most property keys one observer may have read.
    let maxReadsPerObserver: Int
    /// Most bytes the registry may be estimated to hold before it refuses
    /// new reads (`MemoryEstimate`).
    let maxBytes: Int
    var s = State()
    /// Each observer's open event stream, parked or delivering: the one a
    /// poll or a newer stream of the same observer ends. Kept across a
    /// `reload`, as the streams stay open.
    var streams: [String: StreamWaiter] = [:]

    init(retain: Int, retainBytes: Int = .max, maxReadsPerObserver: Int = 100_000, maxBytes: Int = .max) {
        self.retain = max(1, retain)
        self.retainBytes = max(1, retainBytes)
        self.maxReadsPerObserver = maxReadsPerObserver
        self.maxBytes = maxBytes
    }

    // MARK: - Start-up

    /// Loads persisted observers and the retained tail of the change log.
    mutating func restore(observers: [ObserverSnapshot], changes: [Change], lastSeq: Int64) {
        s.lastSeq = lastSeq
        s.log = Deque(changes.suffix(retain))
        s.logBytes = s.log.reduce(0) { $0 + $1.weight }
        s.memory.log = s.log.reduce(0) { $0 + MemoryEstimate.of($1) }
        s.prunedThrough = (s.log.first?.seq ?? lastSeq + 1) - 1
        prune()
        for observer in observers { s.insert(observer) }
    }

    /// Replaces everything it knows with what was loaded again (see
    /// `restore`), keeping the parked waiters: returned, each with its
    /// observer, for the caller to ask again.
    mutating func reload(observers: [ObserverSnapshot], changes: [Change], lastSeq: Int64) -> [(observer: String, waiter: ChangeWaiter)] {
        let waiters = s.waiters
        s = State()
        restore(observers: observers, changes: changes, lastSeq: lastSeq)
        return waiters.map { ($0.key.id, $0.value) }
    }

    // MARK: - Facts

    var lastSeq: Int64 { s.lastSeq }
    var observerCount: Int { s.observers.count }
    /// Entries queued for expiry, those of observers removed included.
    var queuedForExpiry: Int { s.expiries.count }
    var oldestAvailableSeq: Int64 { s.prunedThrough }
    /// The bytes it is estimated to hold.
    var memoryBytes: Int { s.memory.bytes }
    /// How many observers `owner` holds.
    func observers(of owner: String) -> Int { s.owners[owner] ?? 0 }
    /// How many owners hold observers, and the most one holds.
    var owners: (count: Int, largest: Int) { (s.owners.count, s.owners.values.max() ?? 0) }

    func observer(_ id: String) -> ObserverSnapshot? {
        s.observers[ObserverKey(id)]
    }

    /// Observer `id`'s cursor, the default `since` (without copying it).
    func cursor(of id: String) -> Int64? {
        let id = ObserverKey(id)
        guard let position = s.observers.index(forKey: id) else { return nil }
        return s.observers.values[position].cursor
    }

    /// Whether observer `id` exists (without copying it).
    func knows(_ id: String) -> Bool {
        s.observers.index(forKey: ObserverKey(id)) != nil
    }

    /// Observers that read `key` before `seq`: those a change to it at `seq` reaches.
    func readers(of key: PropertyKey, before seq: Int64) -> [String] {
        s.readers(of: key, before: seq).map(\.id)
    }

    /// The retained changes of `operation` after `seq` that land in any of
    /// `collections` (what `GET /observers/{id}` lists of elements removed
    /// since a shape was read): one pass over the log for all its shapes.
    func changes(after seq: Int64, landingIn collections: Set<String>, operation: Change.Operation) -> [Change] {
        let firstSeq = s.log.first?.seq ?? (s.lastSeq + 1)
        var found: [Change] = []
        var position = max(0, Int(seq + 1 - firstSeq))
        while position < s.log.count {
            let change = s.log[position]
            position += 1
            guard change.operation == operation, !change.places.isEmpty else { continue }
            if change.places.contains(where: { collections.contains($0.collection) }) { found.append(change) }
        }
        return found
    }

    /// Observers that read `key` (for tests and diagnostics).
    func readers(of key: PropertyKey) -> Set<String> {
        Set(s.readers(of: key, before: .max).map(\.id))
    }

    // MARK: - Observers

    mutating func add(_ observer: ObserverSnapshot) {
        s.insert(observer)
    }

    /// Removes an observer; returns whether it existed and its parked waiter.
    mutating func remove(_ id: String) -> (existed: Bool, waiter: ChangeWaiter?) {
        let id = ObserverKey(id)
        guard let observer = s.observers.removeValue(forKey: id) else { return (false, nil) }
        droppedReadRecords += Self.records(of: observer)
        s.unindex(observer, releasing: true)
        s.forget(observer)
        s.dirty.remove(id)
        s.replaceInbox(of: id, with: nil)
        s.requeueIfStale()
        return (true, s.waiters.removeValue(forKey: id))
    }

    /// Forgets every read of an observer; returns false for an unknown one.
    mutating func clearReads(_ id: String, now: Double) -> Bool {
        let id = ObserverKey(id)
        guard let observer = s.observers[id] else { return false }
        droppedReadRecords += Self.records(of: observer)
        s.unindex(observer, releasing: false)
        s.observers[id]!.reads = [:]
        s.observers[id]!.shapes = []
        s.observers[id]!.lastRead = []
        s.observers[id]!.group = -1
        s.observers[id]!.ownsReads = true
        let position = s.observers.index(forKey: id)!
        s.charge(MemoryEstimate.observer - observer.bytes, at: position)
        s.use(at: position, now: now)
        s.replaceInbox(of: id, with: Inbox(floor: s.lastSeq))
        return true
    }

    /// About how many records its reads were stored in: one for each `seq`.
    static func records(of observer: ObserverSnapshot) -> Int {
        guard observer.reads.count > 1 else { return observer.reads.count }
        return Set(observer.reads.values).count
    }

    /// Marks an observer as used now; returns false for an unknown one.
    mutating func touch(_ id: String, now: Double) -> Bool {
        let id = ObserverKey(id)
        guard let position = s.observers.index(forKey: id) else { return false }
        s.use(at: position, now: now)
        return true
    }

    // MARK: - Reads

    /// Marks observer `id` as used now and tells whether it has read every
    /// one of `keys` already (false for an unknown observer): such a read
    /// adds nothing, so it has nothing to store.
    mutating func touch(_ id: String, now: Double, hasRead keys: [PropertyKey]) -> Bool {
        let id = ObserverKey(id)
        guard let position = s.observers.index(forKey: id) else { return false }
        s.use(at: position, now: now)
        let observer = s.observers.values[position]
        return keys.allSatisfy { observer.reads[$0] != nil }
    }

    /// Records that observer `id` read `keys` in a response that reflected
    /// every change up to `seq`: `planTrack`, then `applyTrack`, for a
    /// registry whose reads are stored nowhere else.
    mutating func track(_ id: String, keys: [PropertyKey], at seq: Int64, now: Double) -> TrackResult {
        applyTrack(id, planTrack(id, keys: keys, at: seq, now: now), keys: keys)
    }

    /// Works out the reads that observer `id` adds by reading `keys` in a
    /// response that reflected every change up to `seq` (a key already read
    /// keeps its earlier `seq`), with those implied by inserts committed
    /// since; marks the observer used, and adds nothing yet.
    ///
    /// The caller stores the reads and then calls `applyTrack`, keeping
    /// commits out in between (the store's lock for reads, or its writer
    /// lock): so no poll can deliver a change through a read that is not
    /// stored yet, and no change published in between is missed by the
    /// replay.
    ///
    /// A read that would take the estimate past `maxBytes` is refused,
    /// unless `enforcingMemory` is false: another instance tracked it
    /// already, and this one must know every read that is stored.
    mutating func planTrack(_ id: String, keys: [PropertyKey], at seq: Int64, now: Double, enforcingMemory: Bool = true) -> TrackPlan {
        guard let position = s.observers.index(forKey: ObserverKey(id)) else { return .refused(.unknownObserver) }
        // The same first read as the last one (a new observer reading what
        // the one before it read, with no change since): what it adds is
        // that read's, kept, and its keys the same array.
        if s.observers.inPlace(at: position, { $0.reads.isEmpty }), let first = s.firstReads, first.seq == seq, seq >= s.lastSeq,
           first.keys.count == keys.count, first.keys.count <= maxReadsPerObserver, s.memory.bytes + MemoryEstimate.member <= maxBytes,
           first.keys == keys
        {
            s.use(at: position, now: now)
            // The request's array from now on: the next read of it (a kept
            // answer's) is found equal without comparing the keys.
            if !first.keys.isSameArray(as: keys) { s.firstReads!.keys = keys }
            return .reads(first.added, replayed: false, firstRead: keys)
        }
        return Self.plan(at: position, keys: keys, at: seq, now: now, limit: maxReadsPerObserver,
                         maxBytes: enforcingMemory ? maxBytes : .max, in: &s)
    }

    /// Adds the reads `planTrack` worked out, once they are stored; `keys`
    /// are the keys read (what the next read of the same array is found
    /// equal to).
    mutating func applyTrack(_ id: String, _ plan: TrackPlan, keys: [PropertyKey]? = nil) -> TrackResult {
        guard case .reads(let added, let replayed, let firstRead) = plan else {
            if case .refused(let result) = plan { return result }
            return .unknownObserver
        }
        let id = ObserverKey(id)
        // Expired in between: its stored reads go with it.
        guard let position = s.observers.index(forKey: id) else { return .unknownObserver }
        if let firstRead, s.observers.inPlace(at: position, { $0.reads.isEmpty }), let first = s.firstReads,
           first.keys.isSameArray(as: firstRead)
        {
            // The last first read's, planned as such: joined, its table shared.
            let slot = s.observers.inPlace(at: position) { $0.slot }
            s.joinFirstRead(at: position, slot: slot, epoch: s.slots.epoch(of: slot))
            s.observers.values[position].lastRead = firstRead
            return .tracked(added: first.added, wake: nil)
        }
        guard !added.isEmpty else { return .tracked(added: [], wake: nil) }
        let result = apply(at: position, id, added, replayed: replayed)
        if let keys = firstRead ?? keys { s.observers.values[position].lastRead = keys }
        return result
    }

    /// `applyTrack` for the observer at `position`.
    private mutating func apply(at position: Dictionary<ObserverKey, ObserverSnapshot>.Index, _ id: ObserverKey,
                                _ added: [(PropertyKey, Int64)], replayed: Bool) -> TrackResult
    {
        // Changed in place, the observer looked up once.
        let (slot, firstRead) = s.observers.inPlace(at: position) { ($0.slot, $0.reads.isEmpty) }
        let epoch = s.slots.epoch(of: slot)
        if firstRead {
            // A first read (its keys distinct, see `plan`): often the same
            // as the last one, whose table is then shared.
            if let first = s.firstReads, let seq = first.seq, added.allSatisfy({ $0.1 == seq }),
               first.added.elementsEqual(added, by: { $0.0 == $1.0 })
            {
                s.joinFirstRead(at: position, slot: slot, epoch: epoch)
            } else {
                var reads: [PropertyKey: Int64] = [:]
                reads.reserveCapacity(added.count)
                var bytes = 0
                for (key, readAt) in added {
                    reads[key] = readAt
                    bytes += MemoryEstimate.read(key)
                }
                s.charge(bytes, at: position)
                let first = FirstRead(added, reads: reads)
                s.observers.values[position].reads = reads
                s.observers.values[position].shapes = first.shapes
                s.firstReads = first
                for (key, readAt) in added where !key.isShape {
                    s.index[key, default: Readers()].entries.append(Reader(slot: slot, epoch: epoch, seq: readAt))
                }
                for read in first.shapes { s.index(read.shape, at: read.seq, slot: slot, epoch: epoch) }
            }
        } else {
            s.observers.values[position].reads.reserveCapacity(s.observers.values[position].reads.count + added.count)
            // A key read since the plan (another read of the same observer
            // in the same commit) keeps its first `seq`.
            for (key, readAt) in added where s.observers.values[position].reads[key] == nil {
                s.ownReads(at: position)
                s.observers.values[position].setRead(key, at: readAt)
                s.index(key, at: readAt, slot: slot, epoch: epoch)
                s.charge(MemoryEstimate.read(key), at: position)
            }
        }
        // Changes found by the replay are older than the inbox's newest
        // entries: let polls from before now scan the log.
        if replayed { s.replaceInbox(of: id, with: Inbox(floor: s.lastSeq)) }
        let waiter = replayed ? s.waiters.removeValue(forKey: id) : nil
        return .tracked(added: added, wake: waiter)
    }

    /// Works out what `track` adds, without adding it; marks the observer used.
    private static func plan(_ id: String, keys: [PropertyKey], at seq: Int64, now: Double, limit: Int, maxBytes: Int,
                             in s: inout State) -> TrackPlan
    {
        guard let position = s.observers.index(forKey: ObserverKey(id)) else { return .refused(.unknownObserver) }
        return plan(at: position, keys: keys, at: seq, now: now, limit: limit, maxBytes: maxBytes, in: &s)
    }

    private static func plan(at position: Dictionary<ObserverKey, ObserverSnapshot>.Index, keys: [PropertyKey], at seq: Int64,
                             now: Double, limit: Int, maxBytes: Int, in s: inout State) -> TrackPlan
    {
        s.use(at: position, now: now)
        // A read again (most reads) adds nothing: found without allocating,
        // and of a kept answer's keys, without looking them up.
        let (reads, again) = s.observers.inPlace(at: position) { ($0.reads, !$0.reads.isEmpty && $0.lastRead.isSameArray(as: keys)) }
        if again { return .reads([], replayed: false) }
        if !reads.isEmpty && keys.allSatisfy({ reads[$0] != nil }) {
            s.observers.values[position].lastRead = keys
            return .reads([], replayed: false)
        }
        var added: [(PropertyKey, Int64)] = []
        added.reserveCapacity(keys.count)
        if reads.isEmpty, let first = s.firstReads, first.keys.count == keys.count, first.keys == keys {
            // The keys of the last first read, which were distinct.
            for key in keys { added.append((key, seq)) }
        } else {
            var seen = Set<PropertyKey>(minimumCapacity: keys.count)
            for key in keys where reads[key] == nil && seen.insert(key).inserted {
                added.append((key, seq))
            }
        }
        if reads.count + added.count > limit { return .refused(.tooManyReads(limit: limit)) }
        // Refused before anything is recorded, as one past the limit of
        // reads. (What a replay adds below is small, and is never refused:
        // it comes with the read.)
        if maxBytes < .max, s.memory.bytes + s.cost(of: added, at: position) > maxBytes {
            return .refused(.overMemoryLimit(limit: maxBytes))
        }
        guard !added.isEmpty && seq < s.lastSeq else { return .reads(added, replayed: false) }
        // Changes committed after the response was built: replay them so
        // inserted elements count as read, and wake a waiter. (Only then is
        // the observer copied, with the new reads in it.)
        var observer = s.observers.values[position]
        for (key, seq) in added { observer.setRead(key, at: seq) }
        var replayed = false
        for change in s.log where change.seq > seq && observer.receives(change) {
            replayed = true
            // A query's reader reads what comes into its copy through the query.
            guard !change.impliedReads.isEmpty, observer.receivesAsCommitted(change) else { continue }
            for key in change.impliedReads where observer.reads[key] == nil {
                observer.setRead(key, at: change.seq)
                added.append((key, change.seq))
            }
        }
        return .reads(added, replayed: replayed)
    }
}
