import Concurrency
import JSON
import Logging
import ModelObservation
import ModelStore
import PostgresClient
#if canImport(Glibc)
import Glibc
#endif

/// `ModelStorage` on PostgreSQL, shared by any number of instances.
///
/// Every ordered transaction locks the one row of `observable_clock` first
/// (`SELECT … FOR UPDATE`): transactions that change something commit one
/// at a time, in the order they took that lock, so the `seq`s and versions
/// they take from it become visible in that same order. Each leaves what it
/// did in `observable_journal` under its version and announces the version
/// with `NOTIFY` (delivered at commit, in commit order).
///
/// Connections: the writer (used under the store's writer lock), a probe
/// for the newest version, a listener for announcements, and one that holds
/// claims (advisory locks). A lost connection is opened again on next use.
final class PostgresStorage: SharedStorage, @unchecked Sendable {
    static let channel = "observable_commits"
    static let parkedChannel = "observable_parked"
    /// The advisory lock that migrations run under.
    static let migrationLock: Int64 = 0x6f62_7365_7276_0001

    let url: String
    private var writerConnection: Connection?
    private let probe = Locked<(connection: Connection?, backoff: Backoff)>((nil, Backoff()))
    private let listener = Locked<Connection?>(nil)
    /// Per claimed work, the connection that holds (or asks for) its advisory lock.
    private let claims = Locked<[String: (connection: Connection, isHeld: Bool)]>([:])
    private var sql = TableStatements.Cache { "$\($0)" }
    /// The journal of the ordered transaction under way.
    private var pending: [JournalEntry] = []
    /// The changes of the ordered transaction under way, written at commit.
    private var pendingChanges: [Change] = []
    private var inOrderedTransaction = false
    private var orderedVersion: Int64 = 0
    private var orderedSeq: Int64 = 0
    private(set) var committedVersion: Int64 = 0
    private(set) var rowsChanged: Int64 = 0

    /// Connects to `url`, trying again with backoff for up to `patience`
    /// seconds while the database cannot be reached (it may be starting
    /// beside this instance).
    init(url: String, patience: Double = 30, logger: Logger? = nil) throws {
        self.url = url
        let deadline = ServerClock.wallSeconds + patience
        var delay = 0.1
        while true {
            do {
                writerConnection = try Connection(url: url)
                return
            } catch {
                guard ServerClock.wallSeconds + delay < deadline else { throw Self.unreachable(error) }
                logger?.warning("waiting for the database: \(error)")
                usleep(UInt32(delay * 1_000_000))
                delay = min(delay * 2, 2)
            }
        }
    }

    static func unreachable(_ error: any Error) -> ModelError {
        ModelError(.busy, "The database cannot be reached; retry shortly. (\(error))")
    }

    /// The writer connection, opened again when it was lost.
    private func writer() throws -> Connection {
        if let connection = writerConnection, connection.isOpen { return connection }
        writerConnection?.close()
        writerConnection = nil
        sql.removeAll()
        let connection = try writerBackoff.withLock { try $0.attempt { try Connection(url: url) } }
        writerConnection = connection
        return connection
    }

    /// Locked: the listener clears it when it finds the database back.
    private let writerBackoff = Locked(Backoff())

    /// Connecting again after a failure waits 50 ms, doubling up to 2 s:
    /// meanwhile the callers are answered at once (503) rather than each
    /// waiting for a connection that cannot be made.
    struct Backoff {
        private var delay = 0.0
        private var notBefore = 0.0

        mutating func attempt<T>(_ connect: () throws -> T) throws -> T {
            let now = ServerClock.wallSeconds
            guard now >= notBefore else {
                throw ModelError(.busy, "The database cannot be reached; retry shortly.")
            }
            do {
                let result = try connect()
                delay = 0
                return result
            } catch {
                delay = min(max(delay * 2, 0.05), 2)
                notBefore = now + delay
                throw PostgresStorage.unreachable(error)
            }
        }
    }

    /// Runs `body` on the writer, turning a lost connection into `.busy`
    /// (503 with `Retry-After`) and closing it so the next use reconnects.
    @discardableResult
    ///
    /// Outside a transaction, a connection found lost (the database
    /// restarted since its last use) is opened again and `body` tried once
    /// more on it: nothing was done on the lost one.
    private func run<T>(_ body: (Connection) throws -> T) throws -> T {
        while true {
            let reused = writerConnection?.isOpen == true
            let connection = try writer()
            do {
                return try body(connection)
            } catch let error as PostgresError {
                // A failed statement spoils the whole transaction: counted as a
                // change, so that the writes grouped with it are tried alone.
                if inOrderedTransaction { rowsChanged += 1 }
                guard error.connectionLost || !connection.isOpen else { throw error }
                connection.close()
                writerConnection = nil
                guard reused && !inTransaction else { throw Self.unreachable(error) }
            }
        }
    }

    /// Inside a transaction (ordered, or `consistently`'s): a lost
    /// connection loses it, and is not tried again.
    private var inTransaction: Bool { inOrderedTransaction || inSnapshot }
    private var inSnapshot = false

    private func query(_ sql: String, _ parameters: [String?] = []) throws -> Rows {
        try run { try $0.query(sql, parameters) }
    }

    // MARK: - Migrations

    func migrate(_ files: [(name: String, sql: String)]) throws -> [String] {
        // `NNNN_name.postgres.sql` stands in for `NNNN_name.sql` here.
        var byName: [String: String] = [:]
        for (name, sql) in files where !name.hasSuffix(".postgres.sql") { byName[name] = sql }
        for (name, sql) in files where name.hasSuffix(".postgres.sql") {
            byName[String(name.dropLast(".postgres.sql".count)) + ".sql"] = sql
        }
        let migrations = try Migration.ordered(byName.map { ($0.key, $0.value) })
        return try run { connection in
            try connection.query("SELECT pg_advisory_lock($1)", [String(Self.migrationLock)])
            defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [String(Self.migrationLock)]) }
            try connection.execute("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """)
            let rows = try connection.query("SELECT version FROM schema_migrations")
            let applied = Set((0..<rows.count).compactMap { rows.int64($0, 0) })
            var names: [String] = []
            for migration in migrations where !applied.contains(Int64(migration.version)) {
                try connection.execute("BEGIN")
                do {
                    try connection.execute(migration.sql)
                    try connection.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                                         [String(migration.version), migration.name])
                    try connection.execute("COMMIT")
                } catch {
                    try? connection.execute("ROLLBACK")
                    throw error
                }
                names.append(migration.name)
            }
            // What instances share beyond the models: the commit order and the journal.
            try connection.execute("""
                CREATE TABLE IF NOT EXISTS observable_clock (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    seq BIGINT NOT NULL,
                    version BIGINT NOT NULL
                );
                INSERT INTO observable_clock (id, seq, version)
                    SELECT 1, COALESCE((SELECT MAX(seq) FROM changes), 0), 0
                    ON CONFLICT (id) DO NOTHING;
                CREATE TABLE IF NOT EXISTS observable_journal (
                    version BIGINT NOT NULL,
                    ordinal INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    tbl INTEGER NOT NULL,
                    id TEXT NOT NULL,
                    parent TEXT,
                    first BIGINT NOT NULL,
                    last BIGINT NOT NULL,
                    body TEXT,
                    PRIMARY KEY (version, ordinal)
                );
                """)
            return names
        }
    }

    // MARK: - Loading

    func rows(of table: TableLayout) throws -> [StoredRow] {
        let sql = sql(table)
        switch table.shape {
        case .singleton where table.columns.isEmpty:
            return [StoredRow(id: "", parentId: nil, position: 0, values: [])]
        case .singleton:
            let rows = try query(sql.select)
            guard rows.count > 0 else { return [] }
            return [StoredRow(id: "", parentId: nil, position: 0,
                              values: table.columns.enumerated().map { Self.value(rows.string(0, $0.offset), $0.element.kind) })]
        case .collection(let parentColumn, let positioned):
            let offset = TableStatements.valueOffset(table)
            let rows = try query(sql.select)
            return (0..<rows.count).map { index in
                StoredRow(id: rows.string(index, 0) ?? "", parentId: parentColumn == nil ? nil : rows.string(index, 1),
                          position: positioned ? rows.int64(index, offset - 1) ?? 0 : Int64(index),
                          values: table.columns.enumerated().map { Self.value(rows.string(index, offset + $0.offset), $0.element.kind) })
            }
        }
    }

    /// The rows of `rows(of:)`, handed to `body` a batch at a time through
    /// a cursor, so that a million rows are never all in memory at once
    /// (their text, and the heap it leaves behind). Inside the caller's
    /// transaction, as the store loads. (Their text is not interned.)
    func forEachRow(of table: TableLayout, interning interner: ValueInterner, _ body: (StoredRow) throws -> Void) throws {
        guard case .collection(let parentColumn, let positioned) = table.shape else {
            for row in try rows(of: table) { try body(row) }
            return
        }
        let offset = TableStatements.valueOffset(table)
        _ = try query("DECLARE observable_load NO SCROLL CURSOR FOR " + sql(table).select)
        var index: Int64 = 0
        while true {
            let rows = try query("FETCH 20000 FROM observable_load")
            guard rows.count > 0 else { break }
            for row in 0..<rows.count {
                try body(StoredRow(id: rows.string(row, 0) ?? "", parentId: parentColumn == nil ? nil : rows.string(row, 1),
                                   position: positioned ? rows.int64(row, offset - 1) ?? 0 : index,
                                   values: table.columns.enumerated().map { Self.value(rows.string(row, offset + $0.offset), $0.element.kind) }))
                index += 1
            }
        }
        _ = try query("CLOSE observable_load")
    }

    func lastSeq() throws -> Int64 {
        try query("SELECT seq FROM observable_clock WHERE id = 1").int64(0, 0) ?? 0
    }

    /// The version the state loaded by `rows` reflects: read with `lastSeq`
    /// in one transaction by the store.
    func lastVersion() throws -> Int64 {
        try query("SELECT version FROM observable_clock WHERE id = 1").int64(0, 0) ?? 0
    }

    func changes(after seq: Int64) throws -> [Change] {
        try changes(after: seq, through: .max)
    }

    func changes(after seq: Int64, through last: Int64) throws -> [Change] {
        func keys(_ text: String?) -> [PropertyKey] {
            PropertyKey.keys(joined: text ?? "")
        }
        let rows = try query(
            "SELECT seq, txn, path, op, old, new, keys, implied_reads FROM changes WHERE seq > $1 AND seq <= $2 ORDER BY seq",
            [String(seq), String(last)])
        return (0..<rows.count).map { row in
            Change(seq: rows.int64(row, 0) ?? 0, transaction: rows.int64(row, 1) ?? 0, path: rows.string(row, 2) ?? "",
                   operation: Change.Operation(rawValue: rows.string(row, 3) ?? "") ?? .set,
                   old: rows.string(row, 4), new: rows.string(row, 5), keys: keys(rows.string(row, 6)),
                   impliedReads: keys(rows.string(row, 7)))
        }
    }

    func observers() throws -> [ObserverSnapshot] {
        var observers: [String: ObserverSnapshot] = [:]
        let rows = try query("SELECT id, cursor, ttl_seconds, last_used, owner FROM observers")
        for row in 0..<rows.count {
            let id = rows.string(row, 0) ?? ""
            observers[id] = ObserverSnapshot(id: id, cursor: rows.int64(row, 1) ?? 0, ttlSeconds: Int(rows.int64(row, 2) ?? 600),
                                             lastUsed: rows.double(row, 3) ?? 0, owner: rows.string(row, 4))
        }
        let reads = try query("SELECT observer_id, path, read_seq FROM observer_reads")
        for row in 0..<reads.count {
            guard let id = reads.string(row, 0), let path = reads.string(row, 1) else { continue }
            observers[id]?.reads[PropertyKey(path)] = reads.int64(row, 2) ?? 0
        }
        return Array(observers.values)
    }

    // MARK: - Transactions

    func begin() throws {
        _ = try beginOrdered()
    }

    func beginOrdered() throws -> Int64 {
        try run { connection in
            // One round trip: the transaction and the lock that orders it.
            let rows = try connection.execute("BEGIN; SELECT seq, version FROM observable_clock WHERE id = 1 FOR UPDATE")
            orderedSeq = rows.int64(0, 0) ?? 0
            orderedVersion = rows.int64(0, 1) ?? 0
        }
        inOrderedTransaction = true
        pending.removeAll(keepingCapacity: true)
        pendingChanges.removeAll(keepingCapacity: true)
        return orderedVersion
    }

    /// What an ordered transaction leaves, in one statement: its changes,
    /// its journal, the clock moved on, and the announcement.
    static let finish = """
        WITH appended AS (
            INSERT INTO changes (seq, txn, path, op, old, new, keys, implied_reads)
            SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
        ), journaled AS (
            INSERT INTO observable_journal (version, ordinal, kind, tbl, id, parent, first, last, body)
            SELECT $9::bigint, e.ordinal - 1, e.kind, e.tbl, e.id, e.parent, e.first, e.last, e.body
            FROM unnest($10::text[], $11::int[], $12::text[], $13::text[], $14::bigint[], $15::bigint[], $16::text[])
                WITH ORDINALITY AS e (kind, tbl, id, parent, first, last, body, ordinal)
        ), moved AS (
            UPDATE observable_clock SET seq = $17::bigint, version = $9::bigint WHERE id = 1
        )
        SELECT pg_notify($18, $9::text)
        """

    func commit() throws {
        defer {
            inOrderedTransaction = false
            pending.removeAll(keepingCapacity: true)
            pendingChanges.removeAll(keepingCapacity: true)
        }
        try run { connection in
            if let first = pendingChanges.first, let last = pendingChanges.last {
                var entry = JournalEntry(version: 0, kind: .changes)
                entry.first = first.seq
                entry.last = last.seq
                pending.append(entry)
            }
            guard !pending.isEmpty else {
                try connection.execute("COMMIT")
                return
            }
            let version = orderedVersion + 1
            let changes = pendingChanges
            try connection.query(Self.finish, [
                Self.array(changes.map { String($0.seq) }), Self.array(changes.map { String($0.transaction) }),
                Self.array(changes.map(\.path)), Self.array(changes.map(\.operation.rawValue)),
                Self.array(changes.map(\.old)), Self.array(changes.map(\.new)),
                Self.array(changes.map { $0.keys.map(\.path).joined(separator: "\n") }),
                Self.array(changes.map { $0.impliedReads.map(\.path).joined(separator: "\n") }),
                String(version),
                Self.array(pending.map(\.kind.rawValue)), Self.array(pending.map { String($0.table) }),
                Self.array(pending.map(\.id)), Self.array(pending.map(\.parent)),
                Self.array(pending.map { String($0.first) }), Self.array(pending.map { String($0.last) }),
                Self.array(pending.map(\.body)),
                String(changes.last?.seq ?? orderedSeq),
                Self.channel,
            ])
            try connection.execute("COMMIT")
            committedVersion = version
        }
    }

    func rollback() {
        inOrderedTransaction = false
        pending.removeAll(keepingCapacity: true)
        pendingChanges.removeAll(keepingCapacity: true)
        if let connection = writerConnection, connection.isOpen { try? connection.execute("ROLLBACK") }
    }

    private func journal(_ entry: JournalEntry) {
        if inOrderedTransaction { pending.append(entry) }
    }

    // MARK: - Rows

    /// PostgreSQL's text holds no NUL: such a value is refused before any
    /// row changes, rather than cut short.
    private static func refuseNul(_ values: [JSONValue]) throws {
        for case .string(let text) in values where text.utf8.contains(0) {
            throw ModelError.unprocessable("text containing NUL (U+0000) cannot be stored in the PostgreSQL database")
        }
    }

    func insert(into table: TableLayout, _ row: StoredRow) throws {
        try Self.refuseNul(row.values)
        var values: [String?] = [row.id]
        if case .collection(let parentColumn, let positioned) = table.shape {
            if parentColumn != nil { values.append(row.parentId) }
            if positioned { values.append(String(row.position)) }
        }
        for value in row.values { values.append(Self.text(value)) }
        rowsChanged += try query(sql(table).insert, values).affected
        var entry = JournalEntry(version: 0, kind: .insert)
        entry.table = table.number
        entry.id = row.id
        entry.parent = row.parentId
        entry.first = row.position
        entry.body = JSONWriter.string(.array(row.values))
        journal(entry)
    }

    func update(_ table: TableLayout, id: String, parentId: String?, values: [JSONValue]) throws {
        try Self.refuseNul(values)
        var bound = values.map(Self.text)
        if case .collection = table.shape { bound.append(id) }
        rowsChanged += try query(sql(table).update, bound).affected
        var entry = JournalEntry(version: 0, kind: .update)
        entry.table = table.number
        entry.id = id
        entry.parent = parentId
        entry.body = JSONWriter.string(.array(values))
        journal(entry)
    }

    func delete(from table: TableLayout, id: String) throws {
        rowsChanged += try query(sql(table).delete, [id]).affected
        var entry = JournalEntry(version: 0, kind: .delete)
        entry.table = table.number
        entry.id = id
        journal(entry)
    }

    /// Kept until `commit`, which writes the transaction's changes in one statement.
    func append(_ change: Change) throws {
        pendingChanges.append(change)
    }

    func addReads(_ runs: [ObserverReads]) throws {
        let reads = runs.flatMap { run in run.keys.map { (observer: run.observer, key: $0, seq: run.seq) } }
        guard !reads.isEmpty else { return }
        // One statement for all: an observer deleted meanwhile is skipped by the join.
        try query(
            """
            INSERT INTO observer_reads (observer_id, path, read_seq)
            SELECT r.observer_id, r.path, r.read_seq
            FROM unnest($1::text[], $2::text[], $3::bigint[]) AS r (observer_id, path, read_seq)
            JOIN observers o ON o.id = r.observer_id
            ON CONFLICT (observer_id, path) DO NOTHING
            """,
            [Self.array(reads.map(\.observer)), Self.array(reads.map(\.key.path)), Self.array(reads.map { String($0.seq) })])
    }

    func journalTrack(observer: String, keys: [PropertyKey], seq: Int64) {
        var entry = JournalEntry(version: 0, kind: .track)
        entry.id = observer
        entry.first = seq
        entry.body = keys.map(\.path).joined(separator: "\n")
        journal(entry)
    }

    // MARK: - Observers

    func insertObserver(_ observer: ObserverSnapshot) throws {
        try query("INSERT INTO observers (id, cursor, ttl_seconds, last_used, owner) VALUES ($1, $2, $3, $4, $5)",
                  [observer.id, String(observer.cursor), String(observer.ttlSeconds), String(observer.lastUsed), observer.owner])
        var entry = JournalEntry(version: 0, kind: .observer)
        entry.id = observer.id
        entry.parent = observer.owner
        entry.first = observer.cursor
        entry.last = Int64(observer.ttlSeconds)
        entry.body = String(observer.lastUsed)
        journal(entry)
    }

    func deleteObserver(_ id: String) throws {
        try query("DELETE FROM observers WHERE id = $1", [id])
        var entry = JournalEntry(version: 0, kind: .unobserve)
        entry.id = id
        journal(entry)
    }

    func clearReads(of id: String) throws {
        try query("DELETE FROM observer_reads WHERE observer_id = $1", [id])
        var entry = JournalEntry(version: 0, kind: .clear)
        entry.id = id
        journal(entry)
    }

    func housekeep(pruneThrough seq: Int64, expired: [String], used: [ObserverSnapshot]) throws {
        try run { connection in
            try connection.execute("BEGIN")
            do {
                try connection.query("DELETE FROM changes WHERE seq <= $1", [String(seq)])
                if !used.isEmpty {
                    // Several instances save uses: the latest stays. Cursors
                    // are saved with each answer (`saveCursors`), never
                    // here: an instance's copy may be older than another's.
                    try connection.query(
                        """
                        UPDATE observers AS o SET last_used = GREATEST(o.last_used, u.last_used)
                        FROM unnest($1::text[], $2::float8[]) AS u (id, last_used)
                        WHERE o.id = u.id
                        """,
                        [Self.array(used.map(\.id)), Self.array(used.map { String($0.lastUsed) })])
                }
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// How long the journal is kept, seconds: an instance cut off for
    /// longer loads everything again.
    static let journalRetention = 600.0
    /// The newest version seen at times past, to prune the journal by age.
    private var versionsSeen: [(time: Double, version: Int64)] = []

    func pruneJournal(now: Double) throws {
        versionsSeen.append((now, try lastVersion()))
        guard let index = versionsSeen.lastIndex(where: { $0.time < now - Self.journalRetention }) else { return }
        let version = versionsSeen[index].version
        versionsSeen.removeFirst(index + 1)
        try query("DELETE FROM observable_journal WHERE version <= $1", [String(version)])
    }

    func expiredObservers(now: Double, grace: Double) throws -> [String] {
        let rows = try query("SELECT id FROM observers WHERE last_used + ttl_seconds + $1 < $2", [String(grace), String(now)])
        return (0..<rows.count).compactMap { rows.string($0, 0) }
    }

    // MARK: - The journal

    func journal(after version: Int64) throws -> [JournalEntry]? {
        // One statement, so one snapshot: the newest version and the
        // entries after `version` agree.
        let rows = try query(
            """
            SELECT c.version, j.version, j.kind, j.tbl, j.id, j.parent, j.first, j.last, j.body
            FROM observable_clock c LEFT JOIN observable_journal j ON j.version > $1
            WHERE c.id = 1 ORDER BY j.version, j.ordinal
            """,
            [String(version)])
        var entries: [JournalEntry] = []
        entries.reserveCapacity(rows.count)
        let newest = rows.count > 0 ? rows.int64(0, 0) ?? 0 : 0
        for row in 0..<rows.count where !rows.isNull(row, 1) {
            guard let kind = JournalEntry.Kind(rawValue: rows.string(row, 2) ?? "") else { continue }
            var entry = JournalEntry(version: rows.int64(row, 1) ?? 0, kind: kind)
            entry.table = Int(rows.int64(row, 3) ?? -1)
            entry.id = rows.string(row, 4) ?? ""
            entry.parent = rows.string(row, 5)
            entry.first = rows.int64(row, 6) ?? 0
            entry.last = rows.int64(row, 7) ?? 0
            entry.body = rows.string(row, 8)
            entries.append(entry)
        }
        // Versions are consecutive: a gap after `version` was pruned.
        if let first = entries.first, first.version != version + 1 { return nil }
        if entries.isEmpty && newest > version { return nil }
        return entries
    }

    func consistently<T>(_ body: () throws -> T) throws -> T {
        // An ordered transaction holds the lock every change takes: nothing moves.
        if inOrderedTransaction { return try body() }
        try run { try $0.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") }
        inSnapshot = true
        defer { inSnapshot = false }
        do {
            let result = try body()
            try run { try $0.execute("COMMIT") }
            return result
        } catch {
            if let connection = writerConnection, connection.isOpen { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    func newestVersion() throws -> Int64 {
        try probing { try $0.query("SELECT version FROM observable_clock WHERE id = 1").int64(0, 0) ?? 0 }
    }

    /// Runs `body` on the probe connection, opened (again) when needed.
    /// As with the writer, a connection found lost is opened again and
    /// `body` tried once more.
    private func probing<T>(_ body: (Connection) throws -> T) throws -> T {
        try probe.withLock { probe in
            while true {
                let reused = probe.connection?.isOpen == true
                if !reused {
                    probe.connection?.close()
                    probe.connection = nil
                    probe.connection = try probe.backoff.attempt { try Connection(url: url) }
                }
                do {
                    return try body(probe.connection!)
                } catch {
                    probe.connection?.close()
                    probe.connection = nil
                    guard reused, (error as? PostgresError)?.connectionLost == true else { throw Self.unreachable(error) }
                }
            }
        }
    }

    func awaitAnnouncement(timeout: Double) throws -> (newest: Int64?, parked: [ParkedAnnouncement]) {
        try listener.withLock { connection in
            do {
                if connection == nil || connection?.isOpen == false {
                    let opened = try Connection(url: url)
                    try opened.execute("LISTEN \(Self.channel); LISTEN \(Self.parkedChannel)")
                    connection = opened
                    // The database is back: the others need not wait out their backoff.
                    writerBackoff.withLock { $0 = Backoff() }
                    probe.withLock { $0.backoff = Backoff() }
                }
                let found = try connection!.notifications(waiting: timeout)
                var newest: Int64?
                var parked: [ParkedAnnouncement] = []
                for (channel, payload) in found {
                    if channel == Self.channel, let version = Int64(payload) {
                        newest = max(newest ?? version, version)
                    } else if channel == Self.parkedChannel {
                        // "instance observer", and " stream" after a stream's.
                        let parts = payload.split(separator: " ")
                        if parts.count >= 2 {
                            parked.append(ParkedAnnouncement(instance: String(parts[0]), observer: String(parts[1]),
                                                             stream: parts.count > 2 && parts[2] == "stream"))
                        }
                    }
                }
                return (newest, parked)
            } catch {
                connection?.close()
                connection = nil
                throw Self.unreachable(error)
            }
        }
    }

    func savedCursor(of id: String) throws -> Int64? {
        try probing { try $0.query("SELECT cursor FROM observers WHERE id = $1", [id]).int64(0, 0) }
    }

    /// One `UPDATE` for all: the polls one commit wakes on this instance.
    /// (A group of the saves of concurrent polls, as writes commit in
    /// groups, saved nothing measurable: an instance answers polls on one
    /// worker thread by default, so they rarely wait beside each other.)
    func saveCursors(_ cursors: [(id: String, cursor: Int64)]) throws {
        guard !cursors.isEmpty else { return }
        if cursors.count == 1 {
            try probing { try $0.query("UPDATE observers SET cursor = $2 WHERE id = $1", [cursors[0].id, String(cursors[0].cursor)]) }
            return
        }
        try probing {
            try $0.query(
                """
                UPDATE observers AS o SET cursor = u.cursor
                FROM unnest($1::text[], $2::bigint[]) AS u (id, cursor) WHERE o.id = u.id
                """,
                [Self.array(cursors.map(\.id)), Self.array(cursors.map { String($0.cursor) })])
        }
    }

    func announceParked(instance: String, observer: String, stream: Bool) throws {
        let payload = instance + " " + observer + (stream ? " stream" : "")
        try probing { try $0.query("SELECT pg_notify($1, $2)", [Self.parkedChannel, payload]) }
    }

    func claim(_ work: String) throws -> Bool {
        try claims.withLock { claims in
            do {
                if let held = claims[work], held.connection.isOpen {
                    if held.isHeld {
                        // Ours while the connection lives: check that it does.
                        try held.connection.query("SELECT 1")
                        return true
                    }
                } else {
                    claims[work]?.connection.close()
                    // Named for the work and the process, for whoever looks at pg_stat_activity.
                    claims[work] = (try Connection(url: url, applicationName: "observable-server \(work) \(getpid())"), false)
                }
                let key = Int64(bitPattern: Self.hash(work))
                let rows = try claims[work]!.connection.query("SELECT pg_try_advisory_lock($1)", [String(key)])
                claims[work]!.isHeld = rows.string(0, 0) == "t"
                return claims[work]!.isHeld
            } catch {
                claims[work]?.connection.close()
                claims[work] = nil
                return false
            }
        }
    }

    /// A stable hash (FNV-1a) of a claim's name: the same on every instance.
    private static func hash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    func integrityCheck() throws -> String {
        _ = try query("SELECT 1")
        return "ok"
    }

    func close() {
        writerConnection?.close()
        writerConnection = nil
        probe.withLock { $0.connection?.close(); $0.connection = nil }
        listener.withLock { $0?.close(); $0 = nil }
        claims.withLock { claims in
            for (_, held) in claims { held.connection.close() }
            claims = [:]
        }
    }

    // MARK: - Values

    static func text(_ value: JSONValue) -> String? {
        switch value {
        case .null: return nil
        case .bool(let bool): return bool ? "1" : "0"
        case .int(let int): return String(int)
        case .double(let double): return String(double)
        case .string(let string): return string
        case .array, .object: return JSONWriter.string(value)
        }
    }

    static func value(_ text: String?, _ kind: Field.Kind) -> JSONValue {
        guard let text else { return .null }
        switch kind {
        case .boolean: return .bool(text == "1" || text == "t" || text == "true")
        case .integer: return Int64(text).map(JSONValue.int) ?? .null
        case .number: return Double(text).map(JSONValue.double) ?? .null
        case .text: return .string(text)
        }
    }

    /// A PostgreSQL array literal of `values`, each quoted (nil is NULL).
    static func array(_ values: [String?]) -> String {
        var text = "{"
        for (index, value) in values.enumerated() {
            if index > 0 { text += "," }
            guard let value else {
                text += "NULL"
                continue
            }
            text += "\""
            for character in value {
                if character == "\"" || character == "\\" { text.append("\\") }
                text.append(character)
            }
            text += "\""
        }
        return text + "}"
    }
}
