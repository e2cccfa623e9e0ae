import JSON
import ModelObservation

/// What the engine asks of a SQL database: the narrow interface a second
/// engine implements without any model changing. Models never see it; the
/// engine derives every call from their declarations.
///
/// One connection, used by one thread at a time (the store serialises it).
package protocol ModelStorage: AnyObject {
    /// Applies the `NNNN_name.sql` files not applied yet, in order, each
    /// once; returns the names applied.
    func migrate(_ migrations: [(name: String, sql: String)]) throws -> [String]
    /// Makes the models' tables that are missing and checks those there
    /// against their declarations, in one transaction (`Schema.ensure(in:)`,
    /// in the engine's dialect); returns what it did, in words.
    func ensure(_ schema: Schema) throws -> [String]

    // MARK: Loading

    /// Every row of `table`: id, then the parent's id for a nested table,
    /// then the position when positioned, then one value per column, ordered
    /// by parent and creation.
    func rows(of table: TableLayout) throws -> [StoredRow]
    /// The rows of `rows(of:)`, handed to `body` one at a time (SQLite's
    /// read one at a time, their text shared through `interner`;
    /// PostgreSQL's fetched through a cursor, a batch at a time).
    func forEachRow(of table: TableLayout, interning interner: ValueInterner, _ body: (StoredRow) throws -> Void) throws
    /// The newest `seq` in the change log (0 when empty).
    func lastSeq() throws -> Int64
    /// The change log after `seq`, oldest first.
    func changes(after seq: Int64) throws -> [Change]
    /// Every observer with its reads.
    func observers() throws -> [ObserverSnapshot]

    // MARK: Writing, inside `begin` … `commit`

    func begin() throws
    func commit() throws
    func rollback()
    /// Whether `error`, thrown by this storage, says its disk (or database
    /// server) has no room left: the write is refused as `507`, not `500`.
    func isOutOfSpace(_ error: any Error) -> Bool
    /// Rows changed on this connection so far: a write that failed without
    /// changing any can fail alone in a group. (A failed statement that
    /// spoils the transaction counts as a change.)
    var rowsChanged: Int64 { get }

    func insert(into table: TableLayout, _ row: StoredRow) throws
    /// Updates the row `id` (ignored for a singleton's table), nested in
    /// the row `parentId` when its table is nested, to `values`.
    func update(_ table: TableLayout, id: String, parentId: String?, values: [JSONValue]) throws
    /// Deletes the row `id`, and with it the rows nested in it.
    func delete(from table: TableLayout, id: String) throws
    func append(_ change: Change) throws
    /// Records reads of observers that still exist.
    func addReads(_ reads: [ObserverReads]) throws

    // MARK: Observers and housekeeping, each in a transaction of its own

    func insertObserver(_ observer: ObserverSnapshot) throws
    func deleteObserver(_ id: String) throws
    func clearReads(of id: String) throws
    /// Prunes the change log through `seq`, deletes expired observers and
    /// saves the cursors and last uses of `used`.
    func housekeep(pruneThrough seq: Int64, expired: [String], used: [ObserverSnapshot]) throws

    func integrityCheck() throws -> String
    func close()
}

extension ModelStorage {
    /// Applies `catalog`'s pending migrations, then makes or checks its
    /// models' tables: the numbered migrations first, so that a table they
    /// change is checked as they leave it. Returns what was done, in words.
    package func prepare(_ catalog: Catalog) throws -> [String] {
        try migrate(catalog.migrations) + ensure(catalog.schema)
    }

    /// Runs `body` between `begin` and `commit`; rolls back when it throws.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        try begin()
        do {
            let result = try body()
            try commit()
            return result
        } catch {
            rollback()
            throw error
        }
    }
}
