import JSON
import ModelObservation
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
    static let shapesKept = 4096

    init(database: Database, checkpointer: Checkpointer? = nil) {
        self.database = database
        self.checkpointer = checkpointer
    }

    /// Opens (creating when missing) the database file at `path`, with its
    /// log checkpointed on a thread of its own.
    convenience init(path: String, synchronous: Database.Synchronous) throws {
        let database = try Database(path: path, synchronous: synchronous)
        let checkpointer = try Checkpointer(for: database, synchronous: synchronous)
        self.init(database: database, checkpointer: checkpointer)
    }

    func migrate(_ migrations: [(name: String, sql: String)]) throws -> [String] {
        // `NNNN_name.postgres.sql` files are PostgreSQL's own variants.
        try Migrator(files: migrations.filter { !$0.name.hasSuffix(".postgres.sql") }).migrate(database)
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

    func lastSeq() throws -> Int64 {
        try database.rows("SELECT COALESCE(MAX(seq), 0) FROM changes").first?[0].int64 ?? 0
    }

    func changes(after seq: Int64) throws -> [Change] {
        func keys(_ value: SQLValue) -> [PropertyKey] {
            (value.string ?? "").split(separator: "\n").map { PropertyKey(String($0)) }
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
        for row in try database.rows("SELECT id, cursor, ttl_seconds, last_used FROM observers") {
            let id = row[0].string ?? ""
            observers[id] = ObserverSnapshot(id: id, cursor: row[1].int64 ?? 0, ttlSeconds: Int(row[2].int64 ?? 600),
                                             lastUsed: row[3].double ?? 0)
        }
        // A key read twice keeps its first seq, as when it was tracked (the
        // rows of the read journal come in after those stored meanwhile).
        var keys: [Int64: [PropertyKey]] = [:]
        for row in try database.rows("SELECT id, paths FROM read_shapes") {
            guard let id = row[0].int64, let paths = row[1].string else { continue }
            keys[id] = paths.split(separator: "\n").map { PropertyKey(String($0)) }
        }
        // Reads of observers no longer there: stored after the observer
        // was deleted (its reads were still in the read journal).
        try database.execute("DELETE FROM observer_read_sets WHERE observer_id NOT IN (SELECT id FROM observers)", [])
        for row in try database.rows("SELECT observer_id, read_seq, shape_id FROM observer_read_sets") {
            guard let id = row[0].string, observers[id] != nil, let shape = row[2].int64, let read = keys[shape] else { continue }
            let seq = row[1].int64 ?? 0
            for key in read {
                if let known = observers[id]!.reads[key], known <= seq { continue }
                observers[id]!.reads[key] = seq
            }
        }
        // Sets of keys no read names any longer.
        try database.execute("DELETE FROM read_shapes WHERE id NOT IN (SELECT shape_id FROM observer_read_sets)", [])
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
    func rollback() {
        try? database.execute("ROLLBACK", [])
        shapes.removeAll()
        lastShape = nil
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

    /// Records reads kept in the read journal, their paths already joined.
    func addReads(_ reads: [JournaledRead]) throws {
        var rows = ReadRows()
        for read in reads where !read.paths.isEmpty {
            try rows.add(read.observer, read.seq, try shape(read.paths), into: database)
        }
        try rows.flush(into: database)
    }

    // MARK: Observers

    func insertObserver(_ observer: ObserverSnapshot) throws {
        try database.execute(
            "INSERT INTO observers (id, cursor, ttl_seconds, last_used) VALUES (?, ?, ?, ?)",
            [.text(observer.id), .integer(observer.cursor), .integer(Int64(observer.ttlSeconds)), .real(observer.lastUsed)])
    }

    func deleteObserver(_ id: String) throws {
        try database.execute("DELETE FROM observers WHERE id = ?", [.text(id)])
        try database.execute("DELETE FROM observer_read_sets WHERE observer_id = ?", [.text(id)])
    }

    func clearReads(of id: String) throws {
        try database.execute("DELETE FROM observer_read_sets WHERE observer_id = ?", [.text(id)])
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
