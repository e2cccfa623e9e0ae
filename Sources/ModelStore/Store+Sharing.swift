import Concurrency
import JSON
import ModelObservation

/// Several instances on one shared database: each keeps the whole state
/// and registry in memory, and follows what the others commit through the
/// journal, in commit order. What is particular to sharing is kept by
/// `InstanceSharing`; here the store applies what it learns.
extension Store {
    /// Whether other instances may share this store's database.
    public var isShared: Bool { sharing != nil }

    /// Makes the state reflect every commit made, through any instance,
    /// before this call: asks the database for its newest version (one
    /// question for all the callers waiting at that moment) and catches up
    /// when behind. Nothing to do on a database of one's own. Throws `.busy`
    /// when the database cannot be reached.
    public func synchronize() throws {
        guard let sharing else { return }
        try sharing.freshness.pass {
            let newest = try sharing.storage.newestVersion()
            if newest > sharing.appliedVersion { try follow(to: newest) }
        }
    }

    /// Calls `then` once the state reflects every commit made, through any
    /// instance, before this call (as `synchronize`), on the thread that
    /// asks the database: the callers waiting while it asks are served by
    /// its next question, all together. At once on a database of one's own.
    public func whenSynchronized(_ then: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        guard let sharing, sharing.whenSynchronized(then) else {
            then(Result { try synchronize() })
            return
        }
    }

    /// Applies what other instances committed through `newest` (all of it
    /// when nil), then wakes the observers it reaches.
    func follow(to newest: Int64?) throws {
        guard let sharing else { return }
        // This instance's own commits are announced to it too: nothing to do.
        if let newest, newest <= sharing.appliedVersion { return }
        var woken: [(observer: String, waiter: ChangeWaiter)] = []
        try writer.withLock { _ in try catchUp(sharing, to: newest, woken: &woken) }
        if !woken.isEmpty, let wake = wakeHandler { wake(woken) }
    }

    /// Begins an ordered transaction and applies first what other instances
    /// committed before it took the order (rolled back if that fails). Call
    /// holding the writer lock.
    func beginCaughtUp(_ sharing: InstanceSharing, woken: inout [(observer: String, waiter: ChangeWaiter)]) throws {
        let newest = try sharing.storage.beginOrdered()
        do {
            try catchUp(sharing, to: newest, woken: &woken)
        } catch {
            sharing.storage.rollback()
            throw error
        }
    }

    /// Applies the journal after the applied version, through `newest`
    /// (everything when nil): rows to the state, changes and observers to
    /// the registry, in commit order. Call holding the writer lock.
    func catchUp(_ sharing: InstanceSharing, to newest: Int64?, woken: inout [(observer: String, waiter: ChangeWaiter)]) throws {
        let shared = sharing.storage
        let applied = sharing.appliedVersion
        if let newest, newest <= applied { return }
        guard let entries = try shared.journal(after: applied) else {
            try reload(sharing, woken: &woken)
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
        let next = Snapshot(state)
        published.store(state.seq, ordering: .releasing)
        woken += registry.apply(events)
        show(next)
        sharing.applied(through: last.version)
    }

    /// Loads the state, the observers and the log again, when the journal no
    /// longer holds what this instance missed (it was cut off for long):
    /// every parked poll is asked again.
    private func reload(_ sharing: InstanceSharing, woken: inout [(observer: String, waiter: ChangeWaiter)]) throws {
        let shared = sharing.storage
        logger.warning("the shared journal no longer holds what this instance missed: loading everything again")
        let retain = Int64(registry.retain)
        let (state, version, observers, changes) = try shared.consistently {
            let state = try Self.loadState(shared, catalog)
            return (state, try shared.lastVersion(), try shared.observers(), try shared.changes(after: state.seq - retain))
        }
        let next = Snapshot(state)
        published.store(state.seq, ordering: .releasing)
        woken += registry.reload(observers: observers, changes: changes, lastSeq: state.seq)
        show(next)
        sharing.reloaded(at: version)
    }

    // MARK: - Consumers and cursors

    /// Announces a poll of `observer` parked on this instance, or a stream
    /// of it opened here, so that one parked or open on another gives way
    /// (one consumer per observer, as on one server). Nothing to do on a
    /// database of one's own.
    public func announceParked(_ observer: String, stream: Bool = false) {
        sharing?.announceParked(observer, stream: stream)
    }

    /// Makes observer `id`'s cursor (the default `since`) the one last
    /// answered to it through any instance. Nothing to do on a database of
    /// one's own, where the registry's is that one. Returns the cursor read.
    @discardableResult
    public func refreshCursor(of id: String) throws -> Int64? {
        guard let sharing, PlantedFault.current != .forgetCursor, let saved = try sharing.storage.savedCursor(of: id) else { return nil }
        registry.setCursor(of: id, to: saved)
        return saved
    }

    /// Whether answered cursors are saved as they are answered (several
    /// instances), rather than by the housekeeping.
    public var sharesCursors: Bool { sharing != nil && PlantedFault.current != .forgetCursor }

    /// Saves the cursors just answered to these observers before the
    /// answers go out, so that each one's next request, through any
    /// instance, goes on from there. On a database of one's own the
    /// housekeeping saves them (within a second, and at a clean stop).
    public func saveCursors(_ cursors: [(id: String, cursor: Int64)]) throws {
        guard let sharing, !cursors.isEmpty, sharesCursors else { return }
        try sharing.storage.saveCursors(cursors)
    }

    /// Announces a poll of `observer` to the other instances, before it
    /// parks or is answered: it is the observer's consumer now, as on one
    /// server, and a stream or parked poll of it elsewhere ends.
    public func announceConsumer(_ observer: String) {
        sharing?.announceParked(observer, stream: false)
    }

    /// Sets who answers parked polls that gave way to a poll parked on another instance.
    public func onDisplaced(_ handler: @escaping Wake) {
        sharing?.onDisplaced(handler)
    }

    /// Whether the shared database answers now (always true for SQLite).
    public var isDatabaseReachable: Bool {
        sharing?.isReachable ?? true
    }

    /// Whether this instance is, now, the one that runs `work` among those
    /// sharing the database (always true for a database of one's own).
    public func claim(_ work: String) -> Bool {
        sharing?.claim(work) ?? true
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
            let record = Record(resource: resource, id: entry.id, position: entry.first, values: values)
            let old = self[resource][entry.id]
            self[resource][entry.id] = record
            reindex(resource, old: old, new: record)
        case (.insert, let parent?):
            guard let parentId = entry.parent, let old = self[parent][parentId] else { return }
            self[parent][parentId]!.children[table.index][entry.id] =
                Record(resource: resource, id: entry.id, in: old.path, position: entry.first, values: values)
            // A computed field of the element alone may move with it (a game's `isOver`).
            reindex(parent, old: old, new: self[parent][parentId])
        case (.update, nil) where resource.kind == .singleton:
            self[singleton: resource].values = values
        case (.update, nil):
            if let old = self[resource][entry.id] {
                self[resource][entry.id]!.values = values
                reindex(resource, old: old, new: self[resource][entry.id])
            }
        case (.update, let parent?):
            guard let parentId = entry.parent, let old = self[parent][parentId], old.children[table.index][entry.id] != nil else { return }
            self[parent][parentId]!.children[table.index][entry.id]!.values = values
            reindex(parent, old: old, new: self[parent][parentId])
        case (.delete, nil):
            let old = self[resource][entry.id]
            self[resource][entry.id] = nil
            reindex(resource, old: old, new: nil)
        case (.delete, let parent?):
            for parentId in self[parent].keys where self[parent][parentId]?.children[table.index][entry.id] != nil {
                let old = self[parent][parentId]
                self[parent][parentId]!.children[table.index][entry.id] = nil
                reindex(parent, old: old, new: self[parent][parentId])
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
