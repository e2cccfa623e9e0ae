import JSON
import ModelStore
import PostgresClient

/// The models' tables in PostgreSQL's dialect: `TEXT`, `BIGINT` (an
/// integer field is 64 bits; `INTEGER` and `SMALLINT` columns made before
/// are read as integers too), `INTEGER` for booleans, `DOUBLE PRECISION`
/// (`REAL` is 4 bytes there, and refused); a table found is read from
/// `pg_attribute` and `pg_index`, in the search path.
struct PostgresSchema: SchemaDialect {
    let connection: Connection

    func typeName(_ type: Schema.ColumnType) -> String {
        switch type {
        case .text: "TEXT"
        case .integer: "BIGINT"
        case .boolean: "INTEGER"
        case .real: "DOUBLE PRECISION"
        }
    }

    /// What a column of the type `name` (as `format_type` writes it) stores.
    static func type(of name: String) -> Schema.ColumnType? {
        switch name {
        case "text": .text
        case _ where name.hasPrefix("character varying") || name.hasPrefix("character("): .text
        case "bigint", "integer", "smallint": .integer
        case "double precision": .real
        default: nil
        }
    }

    func table(named name: String) throws -> Schema.FoundTable? {
        guard try connection.query("SELECT to_regclass($1) IS NOT NULL", [name]).string(0, 0) == "t" else { return nil }
        let columns = try connection.query(
            """
            SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef,
                   EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY (i.indkey::int2[]))
            FROM pg_attribute a
            WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY a.attnum
            """, [name])
        let keys = try connection.query(
            """
            SELECT (SELECT string_agg(a.attname, ',' ORDER BY k.n)
                    FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k (attnum, n)
                    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum)
            FROM pg_index i
            WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL
            """, [name])
        return Schema.FoundTable(
            columns: (0..<columns.count).map { row in
                let declared = columns.string(row, 1) ?? ""
                return Schema.FoundTable.Column(name: columns.string(row, 0) ?? "", declaredType: declared, type: Self.type(of: declared),
                                                isNotNull: columns.string(row, 2) == "t", hasDefault: columns.string(row, 3) == "t",
                                                isPrimaryKey: columns.string(row, 4) == "t")
            },
            uniqueKeys: (0..<keys.count).map { (keys.string($0, 0) ?? "").split(separator: ",").map(String.init) })
    }

    func execute(_ sql: String) throws { try connection.execute(sql) }

    func execute(_ sql: String, _ values: [JSONValue]) throws {
        try connection.query(sql, values.map(PostgresStorage.text))
    }

    func placeholder(_ n: Int) -> String { "$\(n)" }
}

extension PostgresStorage {
    /// Under the migrations' advisory lock, so that instances starting
    /// together make each table once.
    func ensure(_ schema: Schema) throws -> [String] {
        try run { connection in
            try connection.query("SELECT pg_advisory_lock($1)", [String(Self.migrationLock)])
            defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [String(Self.migrationLock)]) }
            try connection.execute("BEGIN")
            do {
                let done = try schema.ensure(in: PostgresSchema(connection: connection))
                try connection.execute("COMMIT")
                return done
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }
}
