import JSON
import ModelObservation
import ModelStore
import SQLiteStore

/// `ModelStorage` on one SQLite connection. SQL for a table is made from
/// its layout once and its statements prepared once.
final class SQLiteStorage: ModelStorage {
    let database: Database
    /// By table number.
    private var sql = TableStatements.Cache { _ in "?" }
    /// Copies the log back into the database off the commit path.
    private let checkpointer: Checkpointer?
    /// The ids of sets of keys read (`read_shapes`) used lately, by their
    /// paths joined; forgotten when a transaction rolls back (an id it made
    /// is gone) and when it grows large.
    private var shapes: [String: Int64] = [:]
    /// The set of keys named last: most reads in a row name the same.
    private var lastShape: (paths: String, id: Int64)?
    /// The keys of sets of keys by id, as `compactReadBatches` found them.
    private var shapeKeys: [Int64: [PropertyKey]] = [:]
    static let shapesKept = 4096

    init(database: Database, checkpointer: Checkpointer? = nil) {
        self.database = database
        self.checkpointer = checkpointer
    }

    /// Opens (creating when missing) the database file at `path`, with its
    /// log checkpointed on a thread of its own.
    /// `durability` is that of `Store.Configuration`: `synchronous=normal`
    /// survives a crash of the process, `full` a loss of power too.
    convenience init(path: String, durability: Store.Durability) throws {
        let synchronous: Database.Synchronous = switch durability {
        case .processCrash: .normal
        case .powerLoss: .full
        }
        let database = try Database(path: path, synchronous: synchronous)
        let checkpointer = try Checkpointer(for: database, synchronous: synchronous)
        self.init(database: database, checkpointer: checkpointer)
    }

    /// Bounds the database file to `bytes` (`PRAGMA max_page_count`): a
    /// write that would pass it fails as on a full disk (`SQLITE_FULL`).
    func limitSize(to bytes: Int) throws {
        let pageSize = try database.rows("PRAGMA page_size").first?[0].int64 ?? 4096
        try database.execute("PRAGMA max_page_count = \(max(1, bytes / Int(pageSize)))")
    }

    func migrate(_ migrations: [(name: String, sql: String)]) throws -> [String] {
        // `NNNN_name.postgres.sql` files are PostgreSQL's own variants;
        // `NNNN_name.sqlite.sql` ones SQLite's alone, applied (and recorded)
        // as `NNNN_name` (migrations/README.md).
        let files = migrations.filter { !$0.name.hasSuffix(".postgres.sql") }.map { file in
            file.name.hasSuffix(".sqlite.sql") ? (name: String(file.name.dropLast(".sqlite.sql".count)) + ".sql", sql: file.sql) : file
        }
        let ordered = try Migration.ordered(files)
        let tables = Dictionary(uniqueKeysWithValues: ordered.map { ($0.version, $0.tables) })
        return try Migrator(ordered.map { Migrator.Migration(version: $0.version, name: $0.name, sql: $0.sql) })
            .migrate(database) { migration in
                // One that changes models' tables runs where they all are (Migration.tables).
                try (tables[migration.version] ?? []).allSatisfy { table in
                    try !database.rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(table)]).isEmpty
                }
            }
    }

    // MARK: Loading

    func rows(of table: TableLayout) throws -> [StoredRow] {
        let sql = sql(table)
        switch table.shape {
        case .singleton where table.columns.isEmpty:
            // A singleton of computed properties and collections only stores nothing.
            return [StoredRow(id: "", parentId: nil, position: 0, values: [])]
        case .singleton:
            guard let row = try database.rows(sql.select).first else { return [] }
            return [StoredRow(id: "", parentId: nil, position: 0,
                              values: table.columns.enumerated().map { Self.value(row[$0.offset], $0.element.kind) })]
        case .collection(let parentColumn, let positioned):
            let offset = TableStatements.valueOffset(table)
            return try database.rows(sql.select).enumerated().map { index, row in
                StoredRow(id: row[0].string ?? "", parentId: parentColumn == nil ? nil : row[1].string,
                          position: positioned ? row[offset - 1].int64 ?? 0 : Int64(index),
                          values: table.columns.enumerated().map { Self.value(row[offset + $0.offset], $0.element.kind) })
            }
        }
    }

    /// The rows of `rows(of:)`, each handed to `body` as it is read, text
    /// straight from its bytes and shared through `interner`.
    func forEachRow(of table: TableLayout, interning interner: ValueInterner, _ body: (StoredRow) throws -> Void) throws {
        guard case .collection(let parentColumn, let positioned) = table.shape else {
            for row in try rows(of: table) { try body(row) }
            return
        }
        let offset = TableStatements.valueOffset(table)
        let kinds = table.columns.map(\.kind)
        var index: Int64 = 0
        try database.statement(sql(table).select).forEachRow { row in
            var values: [JSONValue] = []
            values.reserveCapacity(kinds.count)
            for (column, kind) in zip(offset..., kinds) {
                // Text straight from its bytes, shared when seen lately;
                // anything else as `rows(of:)` reads it.
                if kind == .text, let text = row.withText(column, { interner.string($0) }) {
                    values.append(.string(text))
                } else {
                    values.append(Self.value(row[column], kind))
                }
            }
            try body(StoredRow(id: row.string(0) ?? "", parentId: parentColumn == nil ? nil : row.string(1),
                               position: positioned ? row.int64(offset - 1) ?? 0 : index, values: values))
            index += 1
        }
    }

    func lastSeq() throws -> Int64 {
        try database.rows("SELECT COALESCE(MAX(seq), 0) FROM changes").first?[0].int64 ?? 0
    }

    func changes(after seq: Int64) throws -> [Change] {
        func keys(_ value: SQLValue) -> [PropertyKey] {
            PropertyKey.keys(joined: value.string ?? "")
        }
        return try database.rows(
            "SELECT seq, txn, path, op, old, new, keys, implied_reads FROM changes WHERE seq > ? ORDER BY seq", [.integer(seq)]
        ).map { row in
            Change(seq: row[0].int64 ?? 0, transaction: row[1].int64 ?? 0, path: row[2].string ?? "",
                   operation: Change.Operation(rawValue: row[3].string ?? "") ?? .set,
                   old: row[4].string, new: row[5].string, keys: keys(row[6]), impliedReads: keys(row[7]))
        }
    }

    func observers() throws -> [ObserverSnapshot] {
        var observers: [String: ObserverSnapshot] = [:]
        var readsFrom: [String: Int64] = [:]
        for row in try database.rows("SELECT id, cursor, ttl_seconds, last_used, reads_from, owner FROM observers") {
            let id = row[0].string ?? ""
            observers[id] = ObserverSnapshot(id: id, cursor: row[1].int64 ?? 0, ttlSeconds: Int(row[2].int64 ?? 600),
                                             lastUsed: row[3].double ?? 0, owner: row[5].string)
            if let from = row[4].int64, from > 0 { readsFrom[id] = from }
        }
        // A key read twice keeps its first seq, as when it was tracked (the
        // rows of the read journal come in after those stored meanwhile).
        var keys: [Int64: [PropertyKey]] = [:]
        for row in try database.rows("SELECT id, paths FROM read_shapes") {
            guard let id = row[0].int64, let paths = row[1].string else { continue }
            keys[id] = PropertyKey.keys(joined: paths)
        }
        var used = Set<Int64>()
        func add(_ id: String, _ seq: Int64, _ shape: Int64) -> Bool {
            guard observers[id] != nil, let read = keys[shape] else { return false }
            used.insert(shape)
            for key in read {
                if let known = observers[id]!.reads[key], known <= seq { continue }
                observers[id]!.reads[key] = seq
            }
            return true
        }
        // Reads of observers no longer there: stored after the observer
        // was deleted (its reads were still in the read journal).
        try database.execute("DELETE FROM observer_read_sets WHERE observer_id NOT IN (SELECT id FROM observers)", [])
        for row in try database.rows("SELECT observer_id, read_seq, shape_id FROM observer_read_sets") {
            guard let id = row[0].string, let shape = row[2].int64 else { continue }
            _ = add(id, row[1].int64 ?? 0, shape)
        }
        batchedReads = 0
        deadBatchedReads = 0
        for row in try database.rows("SELECT id, reads FROM observer_read_batches") {
            guard let batch = row[0].int64, let bytes = row[1].bytes else { continue }
            ReadBatch.forEach(in: bytes) { id, seq, shape in
                batchedReads += 1
                // Older than the observer's last clear: gone with it.
                if let from = readsFrom[id], batch < from { deadBatchedReads += 1; return }
                if !add(id, seq, shape) { deadBatchedReads += 1 }
            }
        }
        // Sets of keys no read names any longer. Those an entry of a batch
        // names are gone with their reads: a batch's entries that no longer
        // count are never read again.
        let unused = keys.keys.filter { !used.contains($0) }
        if !unused.isEmpty {
            try database.transaction {
                for shape in unused { try database.execute("DELETE FROM read_shapes WHERE id = ?", [.integer(shape)]) }
            }
        }
        shapes.removeAll()
        lastShape = nil
        shapeKeys.removeAll()
        return Array(observers.values)
    }

    // MARK: Writing

    func begin() throws { try busyAsModelError { try database.execute("BEGIN IMMEDIATE", []) } }
    func commit() throws { try busyAsModelError { try database.execute("COMMIT", []) } }

    /// Runs `body`, turning SQLite's "busy" (another connection holds the
    /// lock past the busy timeout) into the store's retryable error.
    private func busyAsModelError<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError where error.isBusy {
            throw ModelError(.busy, "The database is busy; retry shortly.")
        }
    }
    func isOutOfSpace(_ error: any Error) -> Bool { (error as? SQLiteError)?.isFull ?? false }

    func rollback() {
        try? database.execute("ROLLBACK", [])
        shapes.removeAll()
        lastShape = nil
        shapeKeys.removeAll()
    }
    var rowsChanged: Int64 { database.totalChanges }

    func insert(into table: TableLayout, _ row: StoredRow) throws {
        var values: [SQLValue] = [.text(row.id)]
        if case .collection(let parentColumn, let positioned) = table.shape {
            if parentColumn != nil { values.append(row.parentId.sqlValue) }
            if positioned { values.append(.integer(row.position)) }
        }
        values.reserveCapacity(values.count + row.values.count)
        for value in row.values { values.append(Self.sqlValue(value)) }
        try database.execute(sql(table).insert, values)
    }

    func update(_ table: TableLayout, id: String, parentId: String?, values: [JSONValue]) throws {
        var bound = values.map(Self.sqlValue)
        if case .collection = table.shape { bound.append(.text(id)) }
        try database.execute(sql(table).update, bound)
    }

    func delete(from table: TableLayout, id: String) throws {
        try database.execute(sql(table).delete, [.text(id)])
    }

    func append(_ change: Change) throws {
        try database.execute(
            "INSERT INTO changes (seq, txn, path, op, old, new, keys, implied_reads) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [.integer(change.seq), .integer(change.transaction), .text(change.path), .text(change.operation.rawValue),
             change.old.sqlValue, change.new.sqlValue,
             .text(change.keys.map(\.path).joined(separator: "\n")),
             .text(change.impliedReads.map(\.path).joined(separator: "\n"))])
    }

    func addReads(_ reads: [ObserverReads]) throws {
        var rows = ReadRows()
        for read in reads where !read.keys.isEmpty {
            // Joined as bytes: appending to a `String` costs far more.
            var paths: [UInt8] = []
            paths.reserveCapacity(read.keys.reduce(0) { $0 + $1.path.utf8.count + 1 })
            for key in read.keys {
                if !paths.isEmpty { paths.append(UInt8(ascii: "\n")) }
                paths.append(contentsOf: key.path.utf8)
            }
            try rows.add(read.observer, read.seq, try shape(String(decoding: paths, as: UTF8.self)), into: database)
        }
        try rows.flush(into: database)
    }

    /// Rows of `observer_read_sets`, each naming its set of keys, inserted
    /// `perInsert` at a time: one statement for many rows costs about half
    /// as much a row as a statement for each. None is inserted when the
    /// same is stored (the read journal recovered after a crash that came
    /// after its fold's commit). The observer is not looked up: one deleted
    /// meanwhile leaves a row that the next start deletes.
    private struct ReadRows {
        static let perInsert = 32
        static let insert = Self.insert(Self.perInsert)
        private var values: [SQLValue] = []

        static func insert(_ count: Int) -> String {
            "INSERT OR IGNORE INTO observer_read_sets (observer_id, read_seq, shape_id) VALUES "
                + Array(repeating: "(?, ?, ?)", count: count).joined(separator: ", ")
        }

        mutating func add(_ observer: String, _ seq: Int64, _ shape: Int64, into database: Database) throws {
            if values.isEmpty { values.reserveCapacity(Self.perInsert * 3) }
            values.append(.text(observer))
            values.append(.integer(seq))
            values.append(.integer(shape))
            if values.count == Self.perInsert * 3 {
                try database.execute(Self.insert, values)
                values.removeAll(keepingCapacity: true)
            }
        }

        /// Inserts the rows added since the last full statement.
        mutating func flush(into database: Database) throws {
            guard !values.isEmpty else { return }
            try database.execute(Self.insert(values.count / 3), values)
            values.removeAll(keepingCapacity: true)
        }
    }

    /// The id of the set of keys `paths`, stored when it is new.
    private func shape(_ paths: String) throws -> Int64 {
        if let lastShape, lastShape.paths == paths { return lastShape.id }
        if let known = shapes[paths] {
            lastShape = (paths, known)
            return known
        }
        let id: Int64
        if let found = try database.rows("SELECT id FROM read_shapes WHERE paths = ?", [.text(paths)]).first?[0].int64 {
            id = found
        } else {
            try database.execute("INSERT INTO read_shapes (paths) VALUES (?)", [.text(paths)])
            id = database.lastInsertRowID
        }
        if shapes.count >= Self.shapesKept { shapes.removeAll(keepingCapacity: true) }
        shapes[paths] = id
        lastShape = (paths, id)
        return id
    }

    /// Records reads kept in the read journal, their paths already joined:
    /// one row of `observer_read_batches` for them all (`ReadBatch`). The
    /// read journal recovered after a crash that came after its fold's
    /// commit stores its reads again: the same reads, which change nothing.
    func addReads(_ reads: [JournaledRead]) throws {
        var batch = ReadBatch(capacity: reads.count)
        for read in reads where !read.paths.isEmpty {
            batch.append(observer: read.observer, seq: read.seq, shape: try shape(read.paths))
        }
        guard !batch.isEmpty else { return }
        try database.execute("INSERT INTO observer_read_batches (reads) VALUES (?)", [.blob(batch.bytes)])
        batchedReads += batch.count
    }

    /// The entries in `observer_read_batches`, whether they count or not:
    /// counted at start, added to by each batch and set anew by
    /// `compactReadBatches` (a batch rolled back is still counted).
    private(set) var batchedReads = 0
    /// Of those, the entries that no longer counted at start.
    var deadBatchedReads = 0

    /// The id of the last batch of reads stored, 0 for none.
    func lastReadBatch() throws -> Int64 {
        try database.rows("SELECT seq FROM sqlite_sequence WHERE name = 'observer_read_batches'").first?[0].int64 ?? 0
    }

    /// The entries of the stored batches of reads after `after` up to
    /// `through`, at most `limit` batches, each with its set of keys as its
    /// note; nil when there is none.
    func readBatches(after: Int64, through: Int64, limit: Int) throws -> ReadBatchesToCompact? {
        let rows = try database.rows("SELECT id, reads FROM observer_read_batches WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
                                     [.integer(after), .integer(through), .integer(Int64(limit))])
        guard let last = rows.last?[0].int64 else { return nil }
        var entries: [(observer: String, seq: Int64, keys: [PropertyKey])] = []
        var shapes: [Int64] = []
        var read = 0
        for row in rows {
            guard let bytes = row[1].bytes else { continue }
            try ReadBatch.forEach(in: bytes) { id, seq, shape in
                read += 1
                guard let keys = try keys(ofShape: shape) else { return }
                entries.append((id, seq, keys))
                shapes.append(shape)
            }
        }
        return ReadBatchesToCompact(entries: entries, after: after, last: last, notes: shapes, read: read)
    }

    /// Replaces the batches `batches` was read from with one of the
    /// entries `keeping` marks. In the caller's transaction.
    func rewriteReadBatches(_ batches: ReadBatchesToCompact, keeping: [Bool]) throws {
        var kept = ReadBatch(capacity: batches.entries.count)
        for (index, keep) in keeping.enumerated() where keep {
            kept.append(observer: batches.entries[index].observer, seq: batches.entries[index].seq, shape: batches.notes[index])
        }
        try database.execute("DELETE FROM observer_read_batches WHERE id > ? AND id <= ?", [.integer(batches.after), .integer(batches.last)])
        if !kept.isEmpty {
            try database.execute("INSERT INTO observer_read_batches (reads) VALUES (?)", [.blob(kept.bytes)])
        }
        batchedReads += kept.count - batches.read
    }

    /// The keys of the set numbered `shape`, nil when there is none.
    private func keys(ofShape shape: Int64) throws -> [PropertyKey]? {
        if let keys = shapeKeys[shape] { return keys }
        guard let paths = try database.rows("SELECT paths FROM read_shapes WHERE id = ?", [.integer(shape)]).first?[0].string
        else { return nil }
        let keys = PropertyKey.keys(joined: paths)
        if shapeKeys.count >= Self.shapesKept { shapeKeys.removeAll(keepingCapacity: true) }
        shapeKeys[shape] = keys
        return keys
    }

    // MARK: Observers

    func insertObserver(_ observer: ObserverSnapshot) throws {
        try database.execute(
            "INSERT INTO observers (id, cursor, ttl_seconds, last_used, owner) VALUES (?, ?, ?, ?, ?)",
            [.text(observer.id), .integer(observer.cursor), .integer(Int64(observer.ttlSeconds)), .real(observer.lastUsed),
             observer.owner.map { .text($0) } ?? .null])
    }

    func deleteObserver(_ id: String) throws {
        try database.execute("DELETE FROM observers WHERE id = ?", [.text(id)])
        try database.execute("DELETE FROM observer_read_sets WHERE observer_id = ?", [.text(id)])
    }

    func clearReads(of id: String) throws {
        try busyAsModelError {
            try database.transaction {
                try database.execute("DELETE FROM observer_read_sets WHERE observer_id = ?", [.text(id)])
                // The entries of the batches stored so far no longer count.
                try database.execute("UPDATE observers SET reads_from = ? WHERE id = ?", [.integer(try lastReadBatch() + 1), .text(id)])
            }
        }
    }

    func housekeep(pruneThrough seq: Int64, expired: [String], used: [ObserverSnapshot]) throws {
        try busyAsModelError { try housekeepTransaction(pruneThrough: seq, expired: expired, used: used) }
    }

    private func housekeepTransaction(pruneThrough seq: Int64, expired: [String], used: [ObserverSnapshot]) throws {
        try database.transaction {
            try database.execute("DELETE FROM changes WHERE seq <= ?", [.integer(seq)])
            for id in expired {
                try database.execute("DELETE FROM observers WHERE id = ?", [.text(id)])
                try database.execute("DELETE FROM observer_read_sets WHERE observer_id = ?", [.text(id)])
            }
            for observer in used {
                try database.execute("UPDATE observers SET cursor = ?, last_used = ? WHERE id = ?",
                                     [.integer(observer.cursor), .real(observer.lastUsed), .text(observer.id)])
            }
        }
    }

    func integrityCheck() throws -> String { try database.integrityCheck() }
    func close() {
        checkpointer?.stop()
        database.close()
    }

    // MARK: Values

    static func sqlValue(_ value: JSONValue) -> SQLValue {
        switch value {
        case .null: return .null
        case .bool(let bool): return .integer(bool ? 1 : 0)
        case .int(let int): return .integer(int)
        case .double(let double): return .real(double)
        case .string(let string): return .text(string)
        case .array, .object: return .text(JSONWriter.string(value))
        }
    }

    static func value(_ value: SQLValue, _ kind: Field.Kind) -> JSONValue {
        switch (value, kind) {
        case (.null, _): return .null
        case (_, .boolean): return .bool(value.int64 == 1)
        case (_, .integer): return value.int64.map(JSONValue.int) ?? .null
        case (_, .number): return value.double.map(JSONValue.double) ?? .null
        case (_, .text): return value.string.map(JSONValue.string) ?? .null
        }
    }
}
