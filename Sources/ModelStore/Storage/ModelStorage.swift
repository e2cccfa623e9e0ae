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

/// One stored row as the engine sees it.
public struct StoredRow: Sendable {
    public var id: String
    public var parentId: String?
    public var position: Int64
    public var values: [JSONValue]

    public init(id: String, parentId: String?, position: Int64, values: [JSONValue]) {
        self.id = id
        self.parentId = parentId
        self.position = position
        self.values = values
    }
}

/// A model's table as a storage engine needs it, derived from its declaration.
public struct TableLayout: Sendable {
    public enum Shape: Sendable {
        /// One row, `id = 1`.
        case singleton
        /// Rows keyed by `id`, nested in a parent's row when `parentColumn` is set.
        case collection(parentColumn: String?, positioned: Bool)
    }

    public let name: String
    /// Its place among the catalog's tables, 0, 1, 2, …: what a storage
    /// may keep its statements by.
    public let number: Int
    public let shape: Shape
    public let columns: [(name: String, kind: Field.Kind)]
    /// The order of rows when they are not positioned (columns, comma-separated).
    public let orderBy: String?

    init(_ resource: Resource, number: Int, parentColumn: String? = nil) {
        name = resource.table
        self.number = number
        shape = resource.kind == .singleton ? .singleton : .collection(parentColumn: parentColumn, positioned: resource.positioned)
        columns = resource.fields.map { ($0.column, $0.kind) }
        orderBy = resource.orderBy
    }
}

/// The SQL of one table, made from its layout once per connection, with the
/// engine's placeholders (`?` in SQLite, `$1`, `$2`… in PostgreSQL).
package struct TableStatements {
    /// Every row: id, the parent's id when nested, the position when
    /// positioned, then the columns (a singleton's: the columns only).
    package let select: String
    package let insert: String
    /// The columns, then (for a collection) the id.
    package let update: String
    package let delete: String

    init(_ table: TableLayout, placeholder: (Int) -> String) {
        let columns = table.columns.map(\.name)
        let assignments = columns.enumerated().map { "\($0.element) = \(placeholder($0.offset + 1))" }.joined(separator: ", ")
        switch table.shape {
        case .singleton:
            select = "SELECT \(columns.joined(separator: ", ")) FROM \(table.name) WHERE id = 1"
            insert = ""
            update = "UPDATE \(table.name) SET \(assignments) WHERE id = 1"
            delete = ""
        case .collection(let parentColumn, let positioned):
            let keys = ["id"] + (parentColumn.map { [$0] } ?? []) + (positioned ? ["position"] : [])
            let order = table.orderBy ?? ((parentColumn.map { [$0] } ?? []) + ["position"]).joined(separator: ", ")
            let all = keys + columns
            select = "SELECT \(all.joined(separator: ", ")) FROM \(table.name) ORDER BY \(order)"
            insert = "INSERT INTO \(table.name) (\(all.joined(separator: ", "))) VALUES (\((1...all.count).map(placeholder).joined(separator: ", ")))"
            update = "UPDATE \(table.name) SET \(assignments) WHERE id = \(placeholder(columns.count + 1))"
            delete = "DELETE FROM \(table.name) WHERE id = \(placeholder(1))"
        }
    }

    /// Where the columns start in a row of `select`.
    package static func valueOffset(_ table: TableLayout) -> Int {
        guard case .collection(let parentColumn, let positioned) = table.shape else { return 0 }
        return 1 + (parentColumn == nil ? 0 : 1) + (positioned ? 1 : 0)
    }

    /// Each table's statements, by table number, made on first use.
    package struct Cache {
        private var byNumber: [TableStatements?] = []
        private let placeholder: (Int) -> String

        package init(placeholder: @escaping (Int) -> String) {
            self.placeholder = placeholder
        }

        package mutating func callAsFunction(_ table: TableLayout) -> TableStatements {
            if table.number < byNumber.count, let cached = byNumber[table.number] { return cached }
            let made = TableStatements(table, placeholder: placeholder)
            while byNumber.count <= table.number { byNumber.append(nil) }
            byNumber[table.number] = made
            return made
        }

        package mutating func removeAll() {
            byNumber.removeAll()
        }
    }
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
