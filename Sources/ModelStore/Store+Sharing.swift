import Concurrency
import JSON
import ModelObservation

/// Several instances on one shared database: each keeps the whole state
/// and registry in memory, and follows what the others commit through the
/// journal, in commit order.
extension Store {
    /// Whether other instances may share this store's database.
    public var isShared: Bool { shared != nil }

    /// Makes the state reflect every commit made, through any instance,
    /// before this call: asks the database for its newest version (one
    /// question for all the callers waiting at that moment) and catches up
    /// when behind. Nothing to do on a database of one's own. Throws `.busy`
    /// when the database cannot be reached.
    public func synchronize() throws {
        guard let shared else { return }
        try freshness.pass {
            let newest = try shared.newestVersion()
            if newest > appliedVersion.withLock({ $0 }) { try follow(to: newest) }
        }
    }

    /// Calls `then` once the state reflects every commit made, through any
    /// instance, before this call (as `synchronize`), on the thread that
    /// asks the database: the callers waiting while it asks are served by
    /// its next question, all together. At once on a database of one's own.
    public func whenSynchronized(_ then: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        guard shared != nil, let thread = synchronizer.withLock({ $0 }) else {
            then(Result { try synchronize() })
            return
        }
        waitingForSync.withLock { $0.append(then) }
        thread.wake()
    }

    /// Starts the thread that answers `whenSynchronized`.
    func startSynchronizing() {
        let thread = ServiceThread.start(name: "observable.sync") { [weak self] thread in
            while true {
                guard let self else { return }
                let waiting = self.waitingForSync.withLock { waiting in
                    defer { waiting.removeAll(keepingCapacity: true) }
                    return waiting
                }
                guard !waiting.isEmpty else {
                    if thread.isStopping { return }
                    if thread.sleep(seconds: 3600) { continue }
                    continue
                }
                let result = Result { try self.synchronize() }
                for then in waiting { then(result) }
            }
        }
        synchronizer.withLock { $0 = thread }
    }

    /// Applies what other instances committed through `newest` (all of it
    /// when nil), then wakes the observers it reaches.
    func follow(to newest: Int64?) throws {
        guard let shared else { return }
        // This instance's own commits are announced to it too: nothing to do.
        if let newest, newest <= appliedVersion.withLock({ $0 }) { return }
        var woken: [(observer: String, waiter: ChangeWaiter)] = []
        try writer.withLock { _ in try catchUp(shared, to: newest, woken: &woken) }
        if !woken.isEmpty, let wake = wakeHandler { wake(woken) }
    }

    /// Runs `body` on the storage under the writer lock; on a shared one,
    /// in an ordered transaction, after catching up with the others.
    package func exclusive<T>(_ body: (any ModelStorage) throws -> T) throws -> T {
        var woken: [(observer: String, waiter: ChangeWaiter)] = []
        let result = try writer.withLock { storage -> T in
            guard shared != nil else { return try body(storage) }
            return try transaction(on: storage, woken: &woken) { try body(storage) }
        }
        if !woken.isEmpty, let wake = wakeHandler { wake(woken) }
        return result
    }

    /// Runs `body` in one transaction on `storage`, an ordered one caught up
    /// with the others first on a shared storage, and commits it; rolls it
    /// back when `body` or the commit throws. Call holding the writer lock.
    func transaction<T>(on storage: any ModelStorage, woken: inout [(observer: String, waiter: ChangeWaiter)],
                        _ body: () throws -> T) throws -> T {
        if let shared { try beginCaughtUp(shared, woken: &woken) } else { try storage.begin() }
        do {
            let result = try body()
            if let shared {
                try shared.commit()
                let version = shared.committedVersion
                appliedVersion.withLock { $0 = max($0, version) }
            } else {
                try storage.commit()
            }
            return result
        } catch {
            if let shared { shared.rollback() } else { storage.rollback() }
            throw error
        }
    }

    /// Begins an ordered transaction and applies first what other instances
    /// committed before it took the order (rolled back if that fails). Call
    /// holding the writer lock.
    func beginCaughtUp(_ shared: any SharedStorage, woken: inout [(observer: String, waiter: ChangeWaiter)]) throws {
        let newest = try shared.beginOrdered()
        do {
            try catchUp(shared, to: newest, woken: &woken)
        } catch {
            shared.rollback()
            throw error
        }
    }

    /// Applies the journal after the applied version, through `newest`
    /// (everything when nil): rows to the state, changes and observers to
    /// the registry, in commit order. Call holding the writer lock.
    func catchUp(_ shared: any SharedStorage, to newest: Int64?, woken: inout [(observer: String, waiter: ChangeWaiter)]) throws {
        let applied = appliedVersion.withLock { $0 }
        if let newest, newest <= applied { return }
        guard let entries = try shared.journal(after: applied) else {
            try reload(shared, woken: &woken)
            return
        }
        guard let last = entries.last else { return }
        var state = snapshot.state
        let seqs = entries.filter { $0.kind == .changes }
        let changes = seqs.isEmpty ? [] : try shared.changes(after: state.seq, through: seqs.last!.last)
        var nextChange = 0
        let now = ServerClock.wallSeconds
        // The rows go to the state, which nobody sees before it is
        // current; what the registry learns is applied in one operation.
        var events: [ObservationRegistry.Event] = []
        for entry in entries {
            switch entry.kind {
            case .insert, .update, .delete:
                state.apply(entry, catalog)
            case .changes:
                var published: [Change] = []
                while nextChange < changes.count, changes[nextChange].seq <= entry.last {
                    if changes[nextChange].seq >= entry.first { published.append(changes[nextChange]) }
                    nextChange += 1
                }
                events.append(.published(published))
                state.seq = max(state.seq, entry.last)
            case .observer:
                events.append(.added(ObserverSnapshot(id: entry.id, cursor: entry.first, ttlSeconds: Int(entry.last),
                                                      lastUsed: Double(entry.body ?? "") ?? now, owner: entry.parent)))
            case .unobserve:
                events.append(.removed(entry.id))
            case .clear:
                events.append(.cleared(entry.id, now: now))
            case .track:
                events.append(.tracked(entry.id, keys: PropertyKey.keys(joined: entry.body ?? ""), seq: entry.first, now: now))
            }
        }
        woken += registry.apply(events)
        let next = Snapshot(state)
        current.withLock { $0 = next }
        appliedVersion.withLock { $0 = max($0, last.version) }
    }

    /// Loads the state, the observers and the log again, when the journal no
    /// longer holds what this instance missed (it was cut off for long):
    /// every parked poll is asked again.
    private func reload(_ shared: any SharedStorage, woken: inout [(observer: String, waiter: ChangeWaiter)]) throws {
        logger.warning("the shared journal no longer holds what this instance missed: loading everything again")
        let retain = Int64(registry.retain)
        let (state, version, observers, changes) = try shared.consistently {
            let state = try Self.loadState(shared, catalog)
            return (state, try shared.lastVersion(), try shared.observers(), try shared.changes(after: state.seq - retain))
        }
        woken += registry.reload(observers: observers, changes: changes, lastSeq: state.seq)
        let next = Snapshot(state)
        current.withLock { $0 = next }
        appliedVersion.withLock { $0 = version }
    }

    // MARK: - Following the others

    /// Starts the thread that listens for the others' commits and applies
    /// them; while the database cannot be reached it tries again with
    /// backoff, and catches up once it can.
    func startFollowing() {
        let thread = ServiceThread.start(name: "observable.follow") { [weak self] thread in
            var backoff = 0.05
            var caughtUp = false
            while !thread.isStopping {
                guard let self, let shared = self.shared else { return }
                do {
                    let (announced, parked) = try shared.awaitAnnouncement(timeout: 0.25)
                    // After (re)connecting the listener, announcements made
                    // before it listened are caught up from the journal.
                    if announced != nil || !caughtUp {
                        try self.follow(to: caughtUp ? announced : nil)
                        caughtUp = true
                    }
                    self.giveWay(parked)
                    backoff = 0.05
                } catch {
                    if caughtUp { self.logger.warning("lost the shared database: \(error)") }
                    caughtUp = false
                    if thread.sleep(seconds: backoff) { return }
                    backoff = min(backoff * 2, 2)
                }
            }
        }
        follower.withLock { $0 = thread }
        startSynchronizing()
    }

    /// Announces a poll of `observer` parked on this instance, or a stream
    /// of it opened here, so that one parked or open on another gives way
    /// (one consumer per observer, as on one server). Nothing to do on a
    /// database of one's own.
    public func announceParked(_ observer: String, stream: Bool = false) {
        guard let shared else { return }
        remoteStreams.withLock { _ = $0.remove(observer) }
        let sent = ServerClock.now
        unheardAnnouncements.withLock { $0[observer] = (($0[observer]?.count ?? 0) + 1, sent) }
        do {
            try shared.announceParked(instance: instance, observer: observer, stream: stream)
        } catch {
            // Never to be heard back.
            unheardAnnouncements.withLock { unheard in
                guard let entry = unheard[observer] else { return }
                unheard[observer] = entry.count > 1 ? (entry.count - 1, entry.sent) : nil
            }
            logger.warning("could not announce a parked poll: \(error)")
        }
    }

    /// Makes observer `id`'s cursor (the default `since`) the one last
    /// answered to it through any instance. Nothing to do on a database of
    /// one's own, where the registry's is that one. Returns the cursor read.
    @discardableResult
    public func refreshCursor(of id: String) throws -> Int64? {
        guard let shared, PlantedFault.current != .forgetCursor, let saved = try shared.savedCursor(of: id) else { return nil }
        registry.setCursor(of: id, to: saved)
        return saved
    }

    /// Whether answered cursors are saved as they are answered (several
    /// instances), rather than by the housekeeping.
    public var sharesCursors: Bool { shared != nil && PlantedFault.current != .forgetCursor }

    /// Saves the cursors just answered to these observers before the
    /// answers go out, so that each one's next request, through any
    /// instance, goes on from there. On a database of one's own the
    /// housekeeping saves them (within a second, and at a clean stop).
    public func saveCursors(_ cursors: [(id: String, cursor: Int64)]) throws {
        guard let shared, !cursors.isEmpty, sharesCursors else { return }
        try shared.saveCursors(cursors)
    }

    /// Ends a stream of `observer` open on another instance, if one was
    /// announced: a poll answered here at once is its consumer now, as on
    /// one server (a poll that parks announces itself).
    public func endStreamElsewhere(of observer: String) {
        guard shared != nil, remoteStreams.withLock({ $0.contains(observer) }) else { return }
        announceParked(observer)
    }

    /// Answers this instance's parked polls, and ends its streams, of
    /// observers parked anew elsewhere; remembers the streams opened
    /// elsewhere.
    private func giveWay(_ parked: [ParkedAnnouncement]) {
        // In the order they were sent: another instance's announcement heard
        // before this one's own of the same observer comes back was sent
        // before it, so the consumer it names is older than this one's, and
        // is the one to give way (this one's announcement tells it so).
        // What was not heard back within `announcementHorizon` (a listener
        // that reconnected) no longer holds others back.
        let others = unheardAnnouncements.withLock { Self.newer(parked, than: instance, unheard: &$0, now: ServerClock.now) }
        guard !others.isEmpty else { return }
        remoteStreams.withLock { streams in
            for announcement in others {
                if announcement.stream { streams.insert(announcement.observer) } else { streams.remove(announcement.observer) }
            }
        }
        let displaced = registry.takeWaiters(of: others.map(\.observer))
        if !displaced.isEmpty, let handler = displacedHandler.withLock({ $0 }) { handler(displaced) }
    }

    /// Of `parked` (announcements in the order heard), those of other
    /// instances sent after every announcement of `instance`'s of the same
    /// observer: those heard before its own comes back were sent before it
    /// (`unheard`, which its own, heard, leave).
    static func newer(_ parked: [ParkedAnnouncement], than instance: String,
                      unheard: inout [String: (count: Int, sent: ServerClock.Instant)], now: ServerClock.Instant) -> [ParkedAnnouncement]
    {
        parked.filter { announcement in
            guard let entry = unheard[announcement.observer] else { return announcement.instance != instance }
            if announcement.instance == instance {
                unheard[announcement.observer] = entry.count > 1 ? (entry.count - 1, entry.sent) : nil
                return false
            }
            guard entry.sent.advanced(by: announcementHorizon) < now else { return false }
            unheard[announcement.observer] = nil
            return true
        }
    }

    /// How long this instance's announcement may take to be heard back
    /// before announcements of others count again.
    static let announcementHorizon: Duration = .seconds(10)

    /// Sets who answers parked polls that gave way to a poll parked on another instance.
    public func onDisplaced(_ handler: @escaping Wake) {
        displacedHandler.withLock { $0 = handler }
    }

    /// Whether the shared database answers now (always true for SQLite).
    public var isDatabaseReachable: Bool {
        guard let shared else { return true }
        return (try? shared.newestVersion()) != nil
    }

    /// Whether this instance is, now, the one that runs `work` among those
    /// sharing the database (always true for a database of one's own).
    public func claim(_ work: String) -> Bool {
        guard let shared else { return true }
        return (try? shared.claim(work)) ?? false
    }

    // MARK: - Housekeeping

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

extension ModelState {
    /// Applies one row of another instance's transaction.
    mutating func apply(_ entry: JournalEntry, _ catalog: Catalog) {
        guard let table = catalog.table(number: entry.table) else { return }
        let resource = table.resource
        var values: [JSONValue] = []
        if let body = entry.body, case .array(let parsed)? = try? JSONParser.parse(body) {
            values = zip(parsed, resource.fields).map { Self.typed($0, $1.kind) }
        }
        if entry.kind == .insert {
            // Shared with equal values, as a record loaded or created here is.
            values = ValueInterner.shared.withLock { $0.values(values) }
        }
        switch (entry.kind, table.parent) {
        case (.insert, nil):
            self[resource][entry.id] = Record(resource: resource, id: entry.id, position: entry.first, values: values)
        case (.insert, let parent?):
            guard let parentId = entry.parent, let path = self[parent][parentId]?.path else { return }
            self[parent][parentId]!.children[table.index][entry.id] =
                Record(resource: resource, id: entry.id, in: path, position: entry.first, values: values)
        case (.update, nil) where resource.kind == .singleton:
            self[singleton: resource].values = values
        case (.update, nil):
            if self[resource][entry.id] != nil { self[resource][entry.id]!.values = values }
        case (.update, let parent?):
            guard let parentId = entry.parent, self[parent][parentId]?.children[table.index][entry.id] != nil else { return }
            self[parent][parentId]!.children[table.index][entry.id]!.values = values
        case (.delete, nil):
            self[resource][entry.id] = nil
        case (.delete, let parent?):
            for parentId in self[parent].keys where self[parent][parentId]?.children[table.index][entry.id] != nil {
                self[parent][parentId]!.children[table.index][entry.id] = nil
            }
        default:
            break
        }
    }

    /// A value read back from JSON as the field's kind has it in memory.
    private static func typed(_ value: JSONValue, _ kind: Field.Kind) -> JSONValue {
        switch (value, kind) {
        case (.int(let int), .number): return .double(Double(int))
        default: return value
        }
    }
}
