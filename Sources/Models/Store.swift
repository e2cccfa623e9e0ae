import FoundationEssentials
import JSON
import Logging
import ModelObservation
import OrderedCollections
import SQLiteStore
import Locks

/// The models' state, persisted in SQLite and observed through the registry.
///
/// Every write goes through `write`: one `BEGIN IMMEDIATE` transaction that
/// changes the model's rows and appends its changes to the change log, then
/// commit, then publish to the registry, then wake the observers' long-polls.
/// Reads are served from an in-memory copy of the state that is replaced
/// only after a commit, so a read never shows an uncommitted write.
public final class Store: Sendable {
    public struct Configuration: Sendable {
        public var databasePath: String
        public var retainChanges: Int = 100_000
        public var synchronous: Database.Synchronous = .normal
        public var maxReadsPerObserver: Int = 100_000

        public init(databasePath: String) {
            self.databasePath = databasePath
        }
    }

    public typealias Wake = @Sendable ([(observer: String, waiter: any ChangeWaiter)]) -> Void

    public let registry: ObservationRegistry
    let writer: Locked<Database>
    /// What reads see: replaced whole after each commit, so that a read
    /// takes one reference rather than one per model.
    private let current: Locked<Snapshot>
    /// Writes waiting for the next group commit.
    private let queue = WriteQueue()
    private let committerDone = Locked(false)
    private let commits = Locked<(transactions: Int64, writes: Int64)>((0, 0))
    private let wake: Locked<Wake?>
    /// Advances the jobs the server drives, from one thread.
    let jobScheduler = JobScheduler()
    let logger: Logger

    /// Opens the database, applies pending migrations and loads the state.
    public init(configuration: Configuration, logger: Logger = Logger(label: "observable.store")) throws {
        let database = try Database(path: configuration.databasePath, synchronous: configuration.synchronous)
        let applied = try Migrator.builtIn().migrate(database)
        if !applied.isEmpty { logger.info("applied migrations: \(applied.joined(separator: ", "))") }
        let registry = ObservationRegistry(retain: configuration.retainChanges, maxReadsPerObserver: configuration.maxReadsPerObserver)
        let state = try Self.loadState(database)
        try Self.loadObservation(database, into: registry, retain: configuration.retainChanges, lastSeq: state.seq)
        self.registry = registry
        self.writer = Locked(database)
        self.current = Locked(Snapshot(state))
        self.wake = Locked(nil)
        self.logger = logger
        startCommitting()
    }

    deinit {
        queue.close()
    }

    /// Transactions committed by writes, and the writes committed in them.
    public var commitCounts: (transactions: Int64, writes: Int64) { commits.withLock { $0 } }

    /// Sets who is told about observers to wake after each commit.
    public func onWake(_ wake: @escaping Wake) {
        self.wake.withLock { $0 = wake }
    }

    var wakeHandler: Wake? { wake.withLock { $0 } }

    /// The current state (a cheap copy-on-write snapshot).
    public var state: ModelState { snapshot.state }

    /// The current state, shared: what a read renders from.
    public var snapshot: Snapshot { current.withLock { $0 } }

    /// Runs `body` as one transaction. Its changes, plus those of computed
    /// properties whose value moved, are committed with the model's rows,
    /// then published and their observers woken.
    public func write<T: Sendable>(_ body: (inout WriteTransaction) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            let write = PendingWrite(body, completion: nil)
            commit([write])
            return try write.outcome.get()
        }
    }

    /// Commits `prepared` alone, as `write(_:)` does.
    public func write<T: Sendable>(_ prepared: PreparedWrite<T>) throws -> T {
        let write = PendingWrite(prepared.body, afterCommit: prepared.afterCommit, completion: nil)
        commit([write])
        return try write.outcome.get()
    }

    /// Commits `prepared` together with the writes that wait beside it.
    ///
    /// When nobody is committing, it is committed at once on this thread and
    /// its outcome returned. Otherwise `wait` is asked whether the caller
    /// can wait (a suspended connection can; it is called under the queue's
    /// lock, so the commit running cannot end in between): if so, the write
    /// is queued, nil is returned, and `completion` gets the outcome on the
    /// committing thread once the group it joined is committed. If not, it
    /// is committed on its own, as `write` does. Each write keeps its own
    /// changes, seqs and transaction number, and fails alone.
    public func submit<T: Sendable>(_ prepared: PreparedWrite<T>, wait: () -> Bool,
                                    then completion: @escaping @Sendable (Result<T, any Error>) -> Void) -> Result<T, any Error>?
    {
        let write = PendingWrite(prepared.body, afterCommit: prepared.afterCommit, completion: completion)
        switch queue.enter(write, wait: wait) {
        case .queued:
            return nil
        case .commitNow:
            write.completion = nil
            commit([write])
            queue.leave()
            return write.outcome
        case .commitAlone:
            return Result { try self.write(prepared) }
        case .closed:
            return .failure(ModelError(.unavailable, "the server is stopping"))
        }
    }

    /// Most writes committed in one transaction.
    static let batchLimit = 128

    private func startCommitting() {
        BackgroundThread.start(name: "observable.commit") { [weak self, queue, committerDone] in
            while let batch = queue.take(limit: Self.batchLimit) {
                guard let self else {
                    for write in batch {
                        write.fail(ModelError(.unavailable, "the store is closed"))
                        write.finish(nil)
                    }
                    continue
                }
                self.commit(batch)
            }
            committerDone.withLock { $0 = true }
        }
    }

    /// Commits `batch`: in one transaction when it can, else each write in
    /// its own. Then wakes the observers of the changes and hands each
    /// write its outcome, after the writer lock.
    private func commit(_ batch: [any QueuedWrite]) {
        // `replaced` is the state before the batch: kept so that the last
        // reference to what the writes replaced is dropped after the lock.
        let (woken, replaced) = writer.withLock { database in
            let replaced = snapshot
            var woken: [(observer: String, waiter: any ChangeWaiter)] = []
            if !transact(batch, on: database, woken: &woken) && batch.count > 1 {
                // The transaction failed as a whole (a write failed after
                // changing rows, or the commit failed): each write again on
                // its own, so that only the one at fault fails.
                for write in batch { _ = transact([write], on: database, woken: &woken) }
            }
            return (woken, replaced)
        }
        for write in batch { write.finish(self) }
        if !woken.isEmpty, let wake = wake.withLock({ $0 }) { wake(woken) }
        withExtendedLifetime(replaced) {}
    }

    /// Runs the writes of `batch` in one transaction, each on the state the
    /// one before it left, commits, publishes and makes the result the
    /// current state. A write that throws before changing any row just fails
    /// alone. Returns false when the transaction was rolled back: then each
    /// write's outcome is the error.
    private func transact(_ batch: [any QueuedWrite], on database: Database,
                          woken: inout [(observer: String, waiter: any ChangeWaiter)]) -> Bool
    {
        var state = snapshot.state
        var committed: [Change] = []
        var writes: Int64 = 0
        do {
            try database.execute("BEGIN IMMEDIATE", [])
            do {
                for write in batch {
                    let rowsBefore = database.totalChanges
                    var transaction = WriteTransaction(state: state, database: database)
                    do {
                        try write.run(&transaction)
                    } catch {
                        guard database.totalChanges == rowsBefore else { throw error }
                        write.fail(error)
                        continue
                    }
                    for (old, new) in zip(state.computedProperties, transaction.state.computedProperties) {
                        transaction.set(old.path, old: old.value, new: new.value)
                    }
                    let first = state.seq + 1
                    for (offset, change) in transaction.pending.enumerated() {
                        let change = change.committed(seq: first + Int64(offset), transaction: first)
                        try append(change, to: database)
                        committed.append(change)
                    }
                    let seq = state.seq + Int64(transaction.pending.count)
                    state = transaction.state
                    state.seq = seq
                    writes += 1
                }
                try database.execute("COMMIT", [])
            } catch {
                try? database.execute("ROLLBACK", [])
                throw error
            }
        } catch {
            for write in batch { write.fail(error) }
            return false
        }
        // Publish before the new state is visible: a read that sees the new
        // state then tracks at a seq the registry already knows.
        woken += registry.publish(committed)
        let next = Snapshot(state)
        current.withLock { $0 = next }
        commits.withLock { $0.transactions += 1; $0.writes += writes }
        return true
    }

    private func append(_ change: Change, to database: Database) throws {
        try database.execute(
            "INSERT INTO changes (seq, txn, path, op, old, new, keys, implied_reads) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [.integer(change.seq), .integer(change.transaction), .text(change.path), .text(change.operation.rawValue),
             change.old.sqlValue, change.new.sqlValue,
             .text(change.keys.map(\.path).joined(separator: "\n")),
             .text(change.impliedReads.map(\.path).joined(separator: "\n"))])
        // Whoever reads a collection has read the elements it is told about.
        // The registry knows every read (it records one before persisting it,
        // and persisting takes this same lock), so it names the receivers;
        // one that has just been deleted is skipped by the EXISTS.
        guard !change.impliedReads.isEmpty else { return }
        var receivers = Set<String>()
        for key in change.keys { receivers.formUnion(registry.readers(of: key, before: change.seq)) }
        for id in receivers {
            for implied in change.impliedReads {
                try database.execute(
                    """
                    INSERT OR IGNORE INTO observer_reads (observer_id, path, read_seq)
                    SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM observers WHERE id = ?)
                    """,
                    [.text(id), .text(implied.path), .integer(change.seq), .text(id)])
            }
        }
    }

    // MARK: - Loading

    private static func loadState(_ database: Database) throws -> ModelState {
        let name = try database.rows("SELECT name FROM truck WHERE id = 1").first?[0].string ?? "Food Truck"
        var donuts = PersistentOrderedDictionary<String, Donut>()
        var maxPosition: Int64 = 0
        for row in try database.rows("SELECT id, position, name, dough, glaze, topping FROM donuts ORDER BY position") {
            let donut = Donut(id: row[0].string ?? "", name: row[2].string ?? "", dough: row[3].string ?? "",
                              glaze: row[4].string, topping: row[5].string, position: row[1].int64 ?? 0)
            donuts[donut.id] = donut
            maxPosition = max(maxPosition, donut.position)
        }
        var orders = PersistentOrderedDictionary<String, Order>()
        for row in try database.rows("SELECT id, position, donut_id, quantity FROM orders ORDER BY position") {
            let order = Order(id: row[0].string ?? "", donutId: row[2].string ?? "", quantity: row[3].int64 ?? 0, position: row[1].int64 ?? 0)
            orders[order.id] = order
            maxPosition = max(maxPosition, order.position)
        }
        let posts = try Posts.load(database)
        maxPosition = max(maxPosition, posts.lastPosition)
        let userName = try database.rows("SELECT user_name FROM account WHERE id = 1").first?[0].string
        let seq = try database.rows("SELECT COALESCE(MAX(seq), 0) FROM changes").first?[0].int64 ?? 0
        return ModelState(seq: seq, truck: Truck(name: name, donuts: donuts, orders: orders),
                          account: Account(userName: userName),
                          grid: try DotGrid.load(database), jobs: try Jobs.load(database),
                          games: try MemoryGames.load(database), posts: posts,
                          nextPosition: maxPosition + 1)
    }

    private static func loadObservation(_ database: Database, into registry: ObservationRegistry, retain: Int, lastSeq: Int64) throws {
        var changes: [Change] = []
        let rows = try database.rows(
            "SELECT seq, txn, path, op, old, new, keys, implied_reads FROM changes WHERE seq > ? ORDER BY seq",
            [.integer(lastSeq - Int64(retain))])
        for row in rows {
            func keys(_ value: SQLValue) -> [PropertyKey] {
                (value.string ?? "").split(separator: "\n").map { PropertyKey(String($0)) }
            }
            changes.append(Change(
                seq: row[0].int64 ?? 0, transaction: row[1].int64 ?? 0, path: row[2].string ?? "",
                operation: Change.Operation(rawValue: row[3].string ?? "") ?? .set,
                old: row[4].string, new: row[5].string, keys: keys(row[6]), impliedReads: keys(row[7])))
        }
        var observers: [String: ObserverSnapshot] = [:]
        for row in try database.rows("SELECT id, cursor, ttl_seconds, last_used FROM observers") {
            let id = row[0].string ?? ""
            observers[id] = ObserverSnapshot(id: id, cursor: row[1].int64 ?? 0, ttlSeconds: Int(row[2].int64 ?? 600), lastUsed: row[3].double ?? 0)
        }
        for row in try database.rows("SELECT observer_id, path, read_seq FROM observer_reads") {
            guard let id = row[0].string, let path = row[1].string else { continue }
            observers[id]?.reads[PropertyKey(path)] = row[2].int64 ?? 0
        }
        registry.restore(observers: Array(observers.values), changes: changes, lastSeq: lastSeq)
    }

    // MARK: - Housekeeping

    /// Prunes the change log to its retained size, drops observers past their
    /// TTL and persists observers' cursors and last use. Run every second.
    public func maintain(now: Double = Date().timeIntervalSince1970) {
        let prunedThrough = registry.oldestAvailableSeq
        let expired = registry.expire(now: now)
        let dirty = registry.takeDirty(now: now)
        do {
            try writer.withLock { database in
                try database.transaction {
                    try database.execute("DELETE FROM changes WHERE seq <= ?", [.integer(prunedThrough)])
                    for id in expired {
                        try database.execute("DELETE FROM observers WHERE id = ?", [.text(id)])
                    }
                    for observer in dirty {
                        try database.execute("UPDATE observers SET cursor = ?, last_used = ? WHERE id = ?",
                                             [.integer(observer.cursor), .real(observer.lastUsed), .text(observer.id)])
                    }
                }
            }
        } catch {
            logger.error("housekeeping failed: \(error)")
        }
        if !expired.isEmpty { logger.debug("observers expired: \(expired.count)") }
    }

    /// Commits the writes already submitted, persists what is pending and
    /// closes the database. Writes submitted after this fail.
    public func close() {
        queue.close()
        // Unbounded: an acknowledged write must not be cut off by closing.
        BackgroundThread.sleep(until: { committerDone.withLock { $0 } }, timeout: nil)
        maintain()
        writer.withLock { $0.close() }
    }

    /// `PRAGMA integrity_check` of the database file.
    public func integrityCheck() throws -> String {
        try writer.withLock { try $0.integrityCheck() }
    }
}

extension Store {
    /// One committed state, as reads see it.
    public final class Snapshot: Sendable {
        public let state: ModelState

        init(_ state: ModelState) {
            self.state = state
        }
    }
}
