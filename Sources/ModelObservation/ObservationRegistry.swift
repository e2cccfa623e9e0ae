import Concurrency

/// Every observer, what it has read, the recent change log and the feed's
/// consumers (parked polls, open streams), behind one lock of its own.
///
/// Each operation takes the lock once, and runs only the registry's own
/// code under it: no closure of a caller, no method a caller overrides
/// (a waiter's state is the registry's, see `ChangeWaiter`). What must be
/// stored before it takes effect is planned, stored by the caller, then
/// applied (`planTrack`, `applyTrack`); a poll with nothing to say is
/// checked, parked by the caller, then checked again as it registers
/// (`pollAsConsumer`, `Parking`). Whom to wake is returned, to be woken
/// after the lock.
public final class ObservationRegistry: Sendable {
    /// The outcome of asking for an observer's changes.
    public enum Poll: Sendable {
        case unknownObserver
        /// `since` is older than the oldest change kept.
        case gone(oldestAvailable: Int64)
        /// `since` is ahead of the newest change.
        case ahead(newest: Int64)
        /// Changes for this observer (possibly none) and the next cursor.
        case changes([Change], cursor: Int64)
        /// Nothing new yet: the waiter is now registered.
        case parked
        /// Nothing new yet, and nothing moved: asked with `Parking.ask`,
        /// for the caller to park and ask again with its waiter.
        case nothingYet
    }

    public enum TrackResult: Sendable {
        case unknownObserver
        case tooManyReads(limit: Int)
        /// The registry would be estimated to hold more than `limit` bytes.
        case overMemoryLimit(limit: Int)
        /// Reads added (key and the `seq` it counts as read at), and a
        /// parked waiter to wake if the log already holds a change for them
        /// (a write that landed between the read and now).
        case tracked(added: [(PropertyKey, Int64)], wake: ChangeWaiter?)
    }

    /// What `track` is to do.
    public enum TrackPlan: Sendable {
        case refused(TrackResult)
        /// Reads to add, and whether changes already in the log reach the
        /// observer through them; `firstRead`, the keys, when they are the
        /// last first read's (all at one `seq`), to be joined as such.
        case reads([(PropertyKey, Int64)], replayed: Bool, firstRead: [PropertyKey]? = nil)
    }

    /// What a poll with nothing to say does.
    public enum Parking: Sendable {
        /// Answers no changes, at its cursor.
        case never
        /// Answers `nothingYet`, moving nothing: the caller parks its
        /// waiter outside the lock, then asks again with it.
        case ask
        /// Registers the waiter (unless it expired or was claimed meanwhile:
        /// then its deadline answers it). A poll waiter answered instead,
        /// with changes that came in between, is claimed for the caller.
        case waiter(ChangeWaiter)
    }

    /// What another instance did, applied in its commit order (`apply`).
    public enum Event: Sendable {
        case published([Change])
        case added(ObserverSnapshot)
        case removed(String)
        case cleared(String, now: Double)
        case tracked(String, keys: [PropertyKey], seq: Int64, now: Double)
    }

    /// Where a stream of an observer starts (`resumePoint`).
    public enum ResumePoint: Sendable {
        case unknownObserver
        case ahead(newest: Int64)
        /// From `cursor`; `gone` is the oldest change kept when `cursor` is older.
        case from(cursor: Int64, gone: Int64?)
    }

    /// Why a new observer is refused (`admission`).
    public enum Refusal: Sendable, Equatable {
        /// Its owner holds `limit` observers already.
        case ownerAtLimit(limit: Int)
        /// There are `limit` observers already.
        case atLimit(limit: Int)
        /// The registry would be estimated to hold more than `limit` bytes.
        case overMemoryLimit(limit: Int)
    }

    public let retain: Int
    /// Most bytes the kept changes may weigh (`Change.weight`).
    public let retainBytes: Int
    /// Most property keys one observer may have read.
    public let maxReadsPerObserver: Int
    /// Most bytes it may be estimated to hold: past them, new observers
    /// and new reads are refused (`MemoryEstimate`).
    public let maxBytes: Int
    private let core: Locked<RegistryCore>

    public init(retain: Int, retainBytes: Int = .max, maxReadsPerObserver: Int = 100_000, maxBytes: Int = .max) {
        let core = RegistryCore(retain: retain, retainBytes: retainBytes, maxReadsPerObserver: maxReadsPerObserver, maxBytes: maxBytes)
        self.retain = core.retain
        self.retainBytes = core.retainBytes
        self.maxReadsPerObserver = maxReadsPerObserver
        self.maxBytes = maxBytes
        self.core = Locked(core)
    }

    // MARK: - Start-up

    /// Loads persisted observers and the retained tail of the change log.
    public func restore(observers: [ObserverSnapshot], changes: [Change], lastSeq: Int64) {
        core.withLock { $0.restore(observers: observers, changes: changes, lastSeq: lastSeq) }
    }

    /// Replaces everything it knows with what was loaded again (see
    /// `restore`), keeping the parked waiters: returned, each with its
    /// observer, for the caller to ask again.
    public func reload(observers: [ObserverSnapshot], changes: [Change], lastSeq: Int64) -> [(observer: String, waiter: ChangeWaiter)] {
        core.withLock { $0.reload(observers: observers, changes: changes, lastSeq: lastSeq) }
    }

    // MARK: - Facts

    public var lastSeq: Int64 { core.withLock { $0.lastSeq } }
    public var observerCount: Int { core.withLock { $0.observerCount } }
    /// Entries queued for expiry, those of observers removed included.
    var queuedForExpiry: Int { core.withLock { $0.queuedForExpiry } }
    public var oldestAvailableSeq: Int64 { core.withLock { $0.oldestAvailableSeq } }
    /// The bytes it is estimated to hold: observers, their reads, their
    /// inboxes and the retained change log.
    public var memoryBytes: Int { core.withLock { $0.memoryBytes } }
    /// How many observers `owner` holds.
    public func observers(of owner: String) -> Int { core.withLock { $0.observers(of: owner) } }
    /// How many owners hold observers, and the most one of them holds.
    public var owners: (count: Int, largest: Int) { core.withLock { $0.owners } }
    /// About how many stored records of reads no longer count, of
    /// observers removed or whose reads were cleared since the start: what
    /// decides when stored reads are compacted.
    public var droppedReadRecords: Int { core.withLock { $0.droppedReadRecords } }

    public func observer(_ id: String) -> ObserverSnapshot? {
        core.withLock { $0.observer(id) }
    }

    /// Observer `id`'s cursor, the default `since`.
    public func cursor(of id: String) -> Int64? {
        core.withLock { $0.cursor(of: id) }
    }

    /// Observer `id`'s cursor, or the newest `seq` for an observer it does
    /// not know (what a poll that gave way answers).
    public func cursorOrNewest(of id: String) -> Int64 {
        core.withLock { $0.cursor(of: id) ?? $0.lastSeq }
    }

    /// Whether observer `id` exists.
    public func knows(_ id: String) -> Bool {
        core.withLock { $0.knows(id) }
    }

    /// Observers that read `key` before `seq`: those a change to it at `seq` reaches.
    public func readers(of key: PropertyKey, before seq: Int64) -> [String] {
        core.withLock { $0.readers(of: key, before: seq) }
    }

    /// Observers that read any of `keys` before `seq`.
    public func readers(of keys: [PropertyKey], before seq: Int64) -> Set<String> {
        core.withLock { core in keys.reduce(into: Set<String>()) { $0.formUnion(core.readers(of: $1, before: seq)) } }
    }

    /// Observers that read `key` (for tests and diagnostics).
    public func readers(of key: PropertyKey) -> Set<String> {
        core.withLock { $0.readers(of: key) }
    }

    /// The retained changes of `operation` after `seq` that land in any of
    /// `collections`.
    public func changes(after seq: Int64, landingIn collections: Set<String>, operation: Change.Operation) -> [Change] {
        core.withLock { $0.changes(after: seq, landingIn: collections, operation: operation) }
    }

    /// Whether each entry's observer still reads each of its keys at its
    /// `seq` (what a compaction of stored reads keeps).
    public func stillReads(_ entries: [(observer: String, seq: Int64, keys: [PropertyKey])]) -> [Bool] {
        core.withLock { core in
            entries.map { entry in
                guard let observer = core.observer(entry.observer) else { return false }
                return entry.keys.allSatisfy { observer.reads[$0] == entry.seq }
            }
        }
    }

    /// Where a stream of observer `id` from `since` (nil: its cursor) starts.
    public func resumePoint(of id: String, since: Int64?) -> ResumePoint {
        core.withLock { core in
            guard let cursor = core.cursor(of: id) else { return .unknownObserver }
            let from = since ?? cursor
            if from > core.lastSeq { return .ahead(newest: core.lastSeq) }
            return .from(cursor: from, gone: from < core.oldestAvailableSeq ? core.oldestAvailableSeq : nil)
        }
    }

    // MARK: - Observers

    /// Why a new observer of `owner` would be refused now, if it would:
    /// its owner holds `maxPerOwner` observers, there are `maxObservers`,
    /// or it would take the estimate past `maxBytes`.
    public func admission(of owner: String?, maxPerOwner: Int, maxObservers: Int) -> Refusal? {
        core.withLock { core in
            if let owner, core.observers(of: owner) >= maxPerOwner { return .ownerAtLimit(limit: maxPerOwner) }
            if core.observerCount >= maxObservers { return .atLimit(limit: maxObservers) }
            if maxBytes < .max, core.memoryBytes + MemoryEstimate.observer > maxBytes { return .overMemoryLimit(limit: maxBytes) }
            return nil
        }
    }

    public func add(_ observer: ObserverSnapshot) {
        core.withLock { $0.add(observer) }
    }

    /// Removes observer `id`; returns whether it existed, and its parked waiter.
    public func remove(_ id: String) -> (existed: Bool, waiter: ChangeWaiter?) {
        core.withLock { $0.remove(id) }
    }

    /// Forgets every read of observer `id`; false when there is no such
    /// observer.
    public func clearReads(_ id: String, now: Double) -> Bool {
        core.withLock { $0.clearReads(id, now: now) }
    }

    /// Marks observer `id` used; false when there is no such observer.
    public func touch(_ id: String, now: Double) -> Bool {
        core.withLock { $0.touch(id, now: now) }
    }

    /// Marks observer `id` used and returns it; nil when there is none.
    public func touchedObserver(_ id: String, now: Double) -> ObserverSnapshot? {
        core.withLock { $0.touch(id, now: now) ? $0.observer(id) : nil }
    }

    /// Marks observer `id` used when it has read every one of `keys`, and
    /// says whether it has (a read again, which adds nothing).
    public func touch(_ id: String, now: Double, hasRead keys: [PropertyKey]) -> Bool {
        core.withLock { $0.touch(id, now: now, hasRead: keys) }
    }

    // MARK: - Reads

    /// Records that observer `id` read `keys` in a response that reflected
    /// every change up to `seq`, for a registry whose reads are stored
    /// nowhere else.
    public func track(_ id: String, keys: [PropertyKey], at seq: Int64, now: Double) -> TrackResult {
        core.withLock { $0.track(id, keys: keys, at: seq, now: now) }
    }

    /// Works out the reads observer `id` adds by reading `keys` in a
    /// response that reflected every change up to `seq`, with those
    /// implied by inserts committed since; marks it used, adds nothing yet.
    public func planTrack(_ id: String, keys: [PropertyKey], at seq: Int64, now: Double) -> TrackPlan {
        core.withLock { $0.planTrack(id, keys: keys, at: seq, now: now) }
    }

    /// Adds the reads `planTrack` worked out, once they are stored; `keys`
    /// are the keys read.
    public func applyTrack(_ id: String, _ plan: TrackPlan, keys: [PropertyKey]? = nil) -> TrackResult {
        core.withLock { $0.applyTrack(id, plan, keys: keys) }
    }

    /// Works out the reads each of `reads` adds (see `RegistryCore.planTrack`),
    /// all under one hold of the lock; adds nothing yet. The caller stores
    /// them, keeping commits out (the store's writer lock), then calls
    /// `applyTracks`.
    public func planTracks(_ reads: [(observer: String, keys: [PropertyKey], seq: Int64, now: Double)]) -> [TrackPlan] {
        core.withLock { core in reads.map { core.planTrack($0.observer, keys: $0.keys, at: $0.seq, now: $0.now) } }
    }

    /// Adds the reads `planTracks` worked out, once they are stored.
    public func applyTracks(_ planned: [(observer: String, plan: TrackPlan, keys: [PropertyKey])]) -> [TrackResult] {
        core.withLock { core in planned.map { core.applyTrack($0.observer, $0.plan, keys: $0.keys) } }
    }

    // MARK: - Changes

    /// Appends committed changes (in `seq` order) to the log and returns the
    /// parked waiters of the observers that receive any of them, removed
    /// from the registry.
    public func publish(_ changes: [Change]) -> [(observer: String, waiter: ChangeWaiter)] {
        core.withLock { $0.publish(changes).woken }
    }

    /// `publish`, also returning the reads each insert adds to each of its
    /// receivers, for the caller to make durable.
    public func publishCollectingImplied(_ changes: [Change])
        -> (woken: [(observer: String, waiter: ChangeWaiter)], implied: [ObserverReads])
    {
        core.withLock { $0.publish(changes, collectingImplied: true) }
    }

    /// Applies what another instance did, in order, under one hold of the
    /// lock; returns the waiters to wake.
    public func apply(_ events: [Event]) -> [(observer: String, waiter: ChangeWaiter)] {
        guard !events.isEmpty else { return [] }
        return core.withLock { core in
            var woken: [(observer: String, waiter: ChangeWaiter)] = []
            for event in events {
                switch event {
                case .published(let changes):
                    woken += core.publish(changes).woken
                case .added(let observer):
                    core.add(observer)
                case .removed(let id):
                    if let waiter = core.remove(id).waiter { woken.append((id, waiter)) }
                case .cleared(let id, let now):
                    _ = core.clearReads(id, now: now)
                case .tracked(let id, let keys, let seq, let now):
                    // Stored by the other instance: tracked here whatever this one's memory.
                    if case .tracked(_, let waiter?) = core.applyTrack(
                        id, core.planTrack(id, keys: keys, at: seq, now: now, enforcingMemory: false), keys: keys)
                    {
                        woken.append((id, waiter))
                    }
                }
            }
            return woken
        }
    }

    // MARK: - The feed

    /// Observer `id`'s changes after `since` (its cursor when nil), at most
    /// `limit` (see `RegistryCore.poll`); with nothing to say, as `parking`
    /// says. A waiter it displaces is returned.
    public func poll(_ id: String, since: Int64?, limit: Int, coalesce: Bool = false, now: Double, displacing: Bool = true,
                     parking: Parking = .never) -> (poll: Poll, displaced: ChangeWaiter?)
    {
        core.withLock { $0.poll(id, since: since, limit: limit, coalesce: coalesce, now: now, displacing: displacing, parking: parking) }
    }

    /// A new poll of observer `id`, its one consumer from now on: a stream
    /// open for it is superseded (and returned in `ended`, parked or
    /// delivering now: it stops before its next answer), then the poll is
    /// answered or parked as `poll` does, displacing a parked poll.
    ///
    /// A poll that may wait asks first (`Parking.ask`), parks outside the
    /// lock, then asks again with its waiter: registered when there is
    /// still nothing to say, else answered (and claimed). One whose
    /// deadline came first is left to it (`parked`, nothing done).
    public func pollAsConsumer(_ id: String, since: Int64?, limit: Int, coalesce: Bool, now: Double,
                               parking: Parking) -> (poll: Poll, displaced: ChangeWaiter?, ended: [ChangeWaiter])
    {
        core.withLock { core in
            let waiter: PollWaiter?
            if case .waiter(let parked) = parking, let poll = parked as? PollWaiter {
                if poll.isExpired || poll.isClaimed { return (.parked, nil, []) }
                waiter = poll
            } else {
                waiter = nil
            }
            var ended: [ChangeWaiter] = []
            if core.waiter(of: id) is StreamWaiter, let parked = core.takeWaiter(of: id) { ended.append(parked) }
            if !core.streams.isEmpty, let open = core.streams.removeValue(forKey: id) {
                open.supersede()
                if open !== ended.first { ended.append(open) }
            }
            let (poll, displaced) = core.poll(id, since: since, limit: limit, coalesce: coalesce, now: now, parking: parking)
            if let waiter, !(poll.isParked) { _ = waiter.claim() }
            return (poll, displaced, ended)
        }
    }

    /// Asks again for a parked poll that a change woke: nil when another
    /// (its deadline, a newer poll, a deletion) claimed it. When there is
    /// still nothing to say it is parked again, unless it expired, `parkAgain`
    /// is false, or a newer poll parked meanwhile, and its claim given back.
    public func repoll(_ waiter: PollWaiter, parkAgain: Bool, now: Double) -> Poll? {
        core.withLock { core in
            guard waiter.claim() else { return nil }
            let (result, _) = core.poll(waiter.observer, since: waiter.since, limit: waiter.limit, coalesce: waiter.coalesce,
                                        now: now, displacing: false,
                                        parking: waiter.isExpired || !parkAgain ? .never : .waiter(waiter))
            if case .parked = result { waiter.unclaim() }
            return result
        }
    }

    /// Answers a parked poll whose deadline passed: withdrawn, then asked
    /// again; also the cursor before. Nil when a wake, a newer poll or a
    /// deletion claimed it.
    public func answerAtDeadline(_ waiter: PollWaiter, now: Double) -> (poll: Poll, cursorBefore: Int64?)? {
        core.withLock { core in
            core.withdraw(waiter, of: waiter.observer)
            guard waiter.claim() else { return nil }
            let before = core.cursor(of: waiter.observer)
            return (core.poll(waiter.observer, since: waiter.since, limit: waiter.limit, coalesce: waiter.coalesce, now: now).poll, before)
        }
    }

    /// Makes `stream` observer `id`'s open stream and its one consumer: an
    /// earlier stream of it is superseded and returned, as is a waiter
    /// parked for it (taken away).
    public func openStream(_ stream: StreamWaiter, of id: String) -> (displaced: ChangeWaiter?, earlier: StreamWaiter?) {
        core.withLock { core in
            let earlier = core.streams.updateValue(stream, forKey: id)
            earlier?.supersede()
            return (core.takeWaiter(of: id), earlier)
        }
    }

    /// Forgets `stream`, which ended: withdrawn as observer `id`'s waiter,
    /// and as its open stream, where it still is either.
    public func closeStream(_ stream: StreamWaiter, of id: String) {
        core.withLock { core in
            core.withdraw(stream, of: id)
            if core.streams[id] === stream { core.streams[id] = nil }
        }
    }

    /// The next changes for `stream` after its cursor `since`, parking it
    /// when there are none and it is open (where no other consumer is
    /// parked); nil once it has been superseded.
    public func pollStream(_ stream: StreamWaiter, of id: String, since: Int64, limit: Int, coalesce: Bool, now: Double) -> Poll? {
        core.withLock { core in
            guard !stream.isSuperseded else { return nil }
            return core.poll(id, since: since, limit: limit, coalesce: coalesce, now: now, displacing: false,
                             parking: stream.isOpen ? .waiter(stream) : .never).poll
        }
    }

    public func setCursor(of id: String, to cursor: Int64) {
        core.withLock { $0.setCursor(of: id, to: cursor) }
    }

    /// Observer `id`'s parked waiter, if any.
    public func waiter(of id: String) -> ChangeWaiter? {
        core.withLock { $0.waiter(of: id) }
    }

    /// Removes and returns observer `id`'s parked waiter, if any.
    public func takeWaiter(of id: String) -> ChangeWaiter? {
        core.withLock { $0.takeWaiter(of: id) }
    }

    /// Takes away the consumers of `ids`, whose newer consumer is on
    /// another instance: each one's parked waiter, and its open stream,
    /// parked or delivering now (superseded: it stops before its next
    /// answer), each with its observer.
    public func displaceConsumers(of ids: [String]) -> [(observer: String, waiter: ChangeWaiter)] {
        core.withLock { core in
            var taken: [(observer: String, waiter: ChangeWaiter)] = []
            for id in ids {
                let parked = core.takeWaiter(of: id)
                if let parked { taken.append((id, parked)) }
                if !core.streams.isEmpty, let open = core.streams.removeValue(forKey: id) {
                    open.supersede()
                    if open !== parked { taken.append((id, open)) }
                }
            }
            return taken
        }
    }

    /// Removes `waiter` if it is still observer `id`'s waiter.
    public func withdraw(_ waiter: ChangeWaiter, of id: String) {
        core.withLock { $0.withdraw(waiter, of: id) }
    }

    // MARK: - Housekeeping

    /// Removes observers unused for longer than their TTL (a parked
    /// long-poll counts as use) and returns their ids.
    public func expire(now: Double) -> [String] {
        core.withLock { $0.expire(now: now) }
    }

    /// Observers to save since the last call (see `RegistryCore.takeDirty`).
    public func takeDirty(now: Double, touchingParked: Bool = false) -> [ObserverSnapshot] {
        core.withLock { $0.takeDirty(now: now, touchingParked: touchingParked) }
    }

    /// What one round of housekeeping persists, taken at one moment: the
    /// log kept from `prunedThrough` on, the observers expired (when
    /// `expiring`; else none), and the observers to save (`takeDirty`).
    public func housekeeping(now: Double, expiring: Bool, touchingParked: Bool = false)
        -> (prunedThrough: Int64, expired: [String], used: [ObserverSnapshot])
    {
        core.withLock { core in
            (core.oldestAvailableSeq, expiring ? core.expire(now: now) : [], core.takeDirty(now: now, touchingParked: touchingParked))
        }
    }
}

extension ObservationRegistry.Poll {
    /// Whether the waiter was registered.
    public var isParked: Bool {
        if case .parked = self { return true }
        return false
    }
}
