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
    var writerConnection: Connection?
    let probe = Locked<(connection: Connection?, backoff: Backoff)>((nil, Backoff()))
    let listener = Locked<Connection?>(nil)
    /// Per claimed work, the connection that holds (or asks for) its advisory lock.
    let claims = Locked<[String: (connection: Connection, isHeld: Bool)]>([:])
    private var sql = TableStatements.Cache { "$\($0)" }
    /// The journal of the ordered transaction under way.
    var pending: [JournalEntry] = []
    /// The changes of the ordered transaction under way, written at commit.
    var pendingChanges: [Change] = []
    var inOrderedTransaction = false
    var orderedVersion: Int64 = 0
    var orderedSeq: Int64 = 0
    private(set) var committedVersion: Int64 = 0
    private(set) var rowsChanged: Int64 = 0
    /// The newest version seen at times past, to prune the journal by age.
    var versionsSeen: [(time: Double, version: Int64)] = []

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
    func writer() throws -> Connection {
        if let connection = writerConnection, connection.isOpen { return connection }
        writerConnection?.close()
        writerConnection = nil
        sql.removeAll()
        let connection = try writerBackoff.withLock { try $0.attempt { try Connection(url: url) } }
        writerConnection = connection
        return connection
    }

    /// Locked: the listener clears it when it finds the database back.
    let writerBackoff = Locked(Backoff())

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
    func run<T>(_ body: (Connection) throws -> T) throws -> T {
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
    var inSnapshot = false

    func query(_ sql: String, _ parameters: [String?] = []) throws -> Rows {
        try run { try $0.query(sql, parameters) }
    }

    // MARK: - Migrations

    func migrate(_ files: [(name: String, sql: String)]) throws -> [String] {
        // `NNNN_name.postgres.sql` stands in for `NNNN_name.sql` here;
        // `NNNN_name.sqlite.sql` is SQLite's alone (migrations/README.md).
        var byName: [String: String] = [:]
        for (name, sql) in files where !name.hasSuffix(".postgres.sql") && !name.hasSuffix(".sqlite.sql") { byName[name] = sql }
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
                // One that changes models' tables runs where they all are (Migration.tables).
                let running = try migration.tables.allSatisfy { table in
                    try connection.query("SELECT to_regclass($1) IS NOT NULL", [table]).string(0, 0) == "t"
                }
                try connection.execute("BEGIN")
                do {
                    if running { try connection.execute(migration.sql) }
                    try connection.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                                         [String(migration.version), migration.name])
                    try connection.execute("COMMIT")
                } catch {
                    try? connection.execute("ROLLBACK")
                    throw error
                }
                names.append(running ? migration.name : migration.name + " (recorded only)")
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

    /// `53100`: disk_full.
    func isOutOfSpace(_ error: any Error) -> Bool { (error as? PostgresError)?.sqlState == "53100" }

    func rollback() {
        inOrderedTransaction = false
        pending.removeAll(keepingCapacity: true)
        pendingChanges.removeAll(keepingCapacity: true)
        if let connection = writerConnection, connection.isOpen { try? connection.execute("ROLLBACK") }
    }

    func journal(_ entry: JournalEntry) {
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
}
