import JSON
import ModelStore
import SQLiteStore

/// The models' tables in SQLite's dialect: `TEXT`, `INTEGER` (booleans
/// too), `REAL`; a table found is read from `PRAGMA table_info` and
/// `index_list`, its types by SQLite's rules of affinity.
struct SQLiteSchema: SchemaDialect {
    let database: Database

    func typeName(_ type: Schema.ColumnType) -> String {
        switch type {
        case .text: "TEXT"
        case .integer, .boolean: "INTEGER"
        case .real: "REAL"
        }
    }

    /// What a column of the declared type `declared` stores, by SQLite's
    /// rules of affinity (its documentation's section 3.1), in their order.
    static func type(of declared: String) -> Schema.ColumnType? {
        let upper = declared.uppercased()
        if upper.contains("INT") { return .integer }
        if upper.contains("CHAR") || upper.contains("CLOB") || upper.contains("TEXT") { return .text }
        if upper.contains("REAL") || upper.contains("FLOA") || upper.contains("DOUB") { return .real }
        return nil
    }

    func table(named name: String) throws -> Schema.FoundTable? {
        let columns = try database.rows("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)", [.text(name)])
        guard !columns.isEmpty else { return nil }
        var uniqueKeys: [[String]] = []
        for index in try database.rows("SELECT name FROM pragma_index_list(?) WHERE \"unique\" = 1 AND partial = 0", [.text(name)]) {
            let key = try database.rows("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [index[0]]).compactMap { $0[0].string }
            uniqueKeys.append(key)
        }
        return Schema.FoundTable(
            columns: columns.map { row in
                let declared = row[1].string ?? ""
                return Schema.FoundTable.Column(name: row[0].string ?? "", declaredType: declared.isEmpty ? "no type" : declared,
                                                type: Self.type(of: declared), isNotNull: row[2].int64 == 1,
                                                hasDefault: row[3] != .null, isPrimaryKey: (row[4].int64 ?? 0) > 0)
            },
            uniqueKeys: uniqueKeys)
    }

    func execute(_ sql: String) throws { try database.execute(sql) }

    func execute(_ sql: String, _ values: [JSONValue]) throws {
        try database.execute(sql, values.map(SQLiteStorage.sqlValue))
    }

    func placeholder(_ n: Int) -> String { "?" }
}

extension SQLiteStorage {
    func ensure(_ schema: Schema) throws -> [String] {
        try database.transaction { try schema.ensure(in: SQLiteSchema(database: database)) }
    }
}
