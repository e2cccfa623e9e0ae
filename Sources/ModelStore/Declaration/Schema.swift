import JSON

/// The tables a catalog's models are stored in, derived from their
/// declarations and nothing else: a table per model with stored fields,
/// a column per field (its name, type, `NOT NULL`, default and checks),
/// the keys every table has (`id`; `position` when creation order is kept;
/// the parent's id when nested) and its unique keys. Engine-neutral: each
/// engine names the types in its dialect and looks at its own catalog of
/// tables (`SchemaDialect`); `ensure(in:)` makes what is missing and
/// refuses a table that differs.
public struct Schema: Sendable {
    public let tables: [Table]

    /// What a column holds, as the engines store it.
    public enum ColumnType: Sendable, Equatable, CustomStringConvertible {
        case text, integer, real
        /// 0 or 1 in an integer column.
        case boolean

        /// The type an engine compares a column it finds with: a boolean is an integer.
        var stored: ColumnType { self == .boolean ? .integer : self }

        public var description: String {
            switch self {
            case .text: "text"
            case .integer: "integer"
            case .real: "number"
            case .boolean: "boolean"
            }
        }
    }

    public struct Column: Sendable {
        public let name: String
        public let type: ColumnType
        public let isNullable: Bool
        public let isPrimaryKey: Bool
        /// What a row takes when the column is not given (never `null`).
        public let defaultValue: JSONValue?
        /// Conditions every row meets, in SQL both engines read alike.
        public let checks: [String]
        /// `games (id) ON DELETE CASCADE`: the row it belongs to.
        public let references: String?

        /// The field it stores, for messages; nil for a key column.
        let field: String?

        /// Whether a table that lacks it may have it added (existing rows
        /// take its default, or `null`).
        var canBeAdded: Bool { !isPrimaryKey && references == nil && (isNullable || defaultValue != nil) }
    }

    public struct Table: Sendable {
        public let name: String
        /// The model it stores, for messages (`donuts`, `truck`).
        public let model: String
        public let columns: [Column]
        /// Sets of columns no two rows share (beyond the primary key), in
        /// declaration order.
        public let uniqueKeys: [[String]]
        /// Conditions on several columns of a row, in SQL both engines read alike.
        public let checks: [String]
        /// The rows a table starts with when it is made: one value per column.
        public let seed: [[JSONValue]]

        public func column(_ name: String) -> Column? { columns.first { $0.name == name } }
    }

    /// A table as an engine finds it in the database.
    public struct FoundTable: Sendable {
        public struct Column: Sendable {
            public let name: String
            /// The type as the database states it, for messages.
            public let declaredType: String
            /// What that type stores, as the engine reads it; nil for none of the four.
            public let type: ColumnType?
            public let isNotNull: Bool
            public let hasDefault: Bool
            public let isPrimaryKey: Bool

            public init(name: String, declaredType: String, type: ColumnType?, isNotNull: Bool, hasDefault: Bool, isPrimaryKey: Bool) {
                self.name = name
                self.declaredType = declaredType
                self.type = type
                self.isNotNull = isNotNull
                self.hasDefault = hasDefault
                self.isPrimaryKey = isPrimaryKey
            }
        }

        public let columns: [Column]
        /// The columns of each unique index (and unique constraint).
        public let uniqueKeys: [[String]]

        public init(columns: [Column], uniqueKeys: [[String]]) {
            self.columns = columns
            self.uniqueKeys = uniqueKeys
        }
    }
}

// MARK: - From the declarations

extension Schema {
    /// The tables of `catalog`'s models, in catalog order (a nested model's
    /// after the one it is nested in), with the rows of `catalog.seed`.
    init(_ catalog: Catalog) {
        var tables: [Table] = []
        var number = 0
        while let (resource, parent, _) = catalog.table(number: number) {
            let layout = catalog.layout(of: resource)
            if let table = Table(resource, layout: layout, parentTable: parent?.table,
                                 seed: catalog.seed.filter { $0.resource === resource }) {
                tables.append(table)
            }
            number += 1
        }
        self.tables = tables
    }
}

extension Schema.Table {
    /// The table of `resource`, nil for a singleton that stores nothing
    /// (only computed properties and collections).
    init?(_ resource: Resource, layout: TableLayout, parentTable: String?, seed: [Seed]) {
        var columns: [Schema.Column] = []
        var uniqueKeys: [[String]] = []
        func key(_ name: String, _ type: Schema.ColumnType, primary: Bool = false, checks: [String] = [], references: String? = nil) {
            columns.append(Schema.Column(name: name, type: type, isNullable: false, isPrimaryKey: primary, defaultValue: nil,
                                         checks: checks, references: references, field: nil))
        }
        switch layout.shape {
        case .singleton:
            guard !resource.fields.isEmpty else { return nil }
            key("id", .integer, primary: true, checks: ["id = 1"])
        case .collection(let parentColumn, let positioned):
            key("id", .text, primary: true)
            if let parentColumn, let parentTable {
                key(parentColumn, .text, references: "\(parentTable) (id) ON DELETE CASCADE")
            }
            if positioned {
                key("position", .integer)
                uniqueKeys.append((parentColumn.map { [$0] } ?? []) + ["position"])
            }
        }
        for field in resource.fields {
            columns.append(Schema.Column(name: field.column, type: Schema.ColumnType(field.kind), isNullable: field.nullable,
                                         isPrimaryKey: false, defaultValue: field.defaultValue == .null ? nil : field.defaultValue,
                                         checks: field.sqlChecks, references: nil, field: field.name))
        }
        name = resource.table
        model = resource.name
        self.columns = columns
        self.uniqueKeys = uniqueKeys + resource.uniqueKeys
        checks = resource.checks.map(\.sql)
        self.seed = Self.rows(of: resource, layout: layout, seed: seed)
    }

    /// The first rows: a singleton's row 1 (its seed's values, else its
    /// defaults), a collection's seeded elements in order. A value the
    /// seed leaves out is the field's default; `null` when it has none,
    /// which `ensure` refuses for a `NOT NULL` column (`unseeded`).
    static func rows(of resource: Resource, layout: TableLayout, seed: [Seed]) -> [[JSONValue]] {
        func values(_ seed: Seed?) -> [JSONValue] {
            resource.fields.map { seed?.values[$0.name] ?? $0.defaultValue ?? .null }
        }
        switch layout.shape {
        case .singleton:
            return [[.int(1)] + values(seed.first)]
        case .collection(_, let positioned):
            return seed.enumerated().map { index, row in
                [.string(row.id ?? "")] + (positioned ? [.int(Int64(index + 1))] : []) + values(row)
            }
        }
    }
}

extension Schema.ColumnType {
    init(_ kind: Field.Kind) {
        switch kind {
        case .text: self = .text
        case .integer: self = .integer
        case .number: self = .real
        case .boolean: self = .boolean
        }
    }
}

extension Field {
    /// What its column checks: the integer range, that a boolean is 0 or 1,
    /// and the checks the declaration adds (`checked(_:)`).
    var sqlChecks: [String] {
        var checks: [String] = []
        if let range {
            checks.append(range.upperBound == .max ? "\(column) >= \(range.lowerBound)"
                                                   : "\(column) BETWEEN \(range.lowerBound) AND \(range.upperBound)")
        }
        if kind == .boolean { checks.append("\(column) IN (0, 1)") }
        for check in storedChecks {
            switch check {
            case .atLeast(let minimum): checks.append("\(column) >= \(minimum)")
            case .above(let minimum): checks.append("\(column) > \(Schema.literal(.double(minimum)))")
            }
        }
        return checks
    }
}

extension Resource.Check {
    var sql: String {
        switch self {
        case .atMost(let field, let limit): "\(field.column) <= \(limit.column)"
        case .nullTogether(let a, let b): "(\(a.column) IS NULL) = (\(b.column) IS NULL)"
        }
    }
}

// MARK: - In an engine's dialect

extension Schema {
    /// Makes every table that is missing (with its first rows), adds to
    /// a table that exists the columns it lacks that may be added (nullable,
    /// or with a default) and the unique indexes it lacks, and throws
    /// `SchemaMismatch` naming every other difference (a column missing
    /// that cannot be added, one of another type, `NOT NULL` on one side
    /// only, a key that is not the primary key, a column no field declares
    /// that a new row could not leave out), having changed nothing. Run in
    /// one transaction by the engine. Returns what it did, in words.
    package func ensure(in dialect: some SchemaDialect) throws -> [String] {
        var done: [String] = []
        var statements: [(sql: String, values: [JSONValue]?)] = []
        var differences: [String] = []
        for table in tables {
            guard let found = try dialect.table(named: table.name) else {
                differences += table.unseeded
                statements.append((table.create(dialect), nil))
                for row in table.seed { statements.append((table.insert(dialect), row)) }
                done.append("made table \(table.name)")
                continue
            }
            let comparison = table.compare(with: found)
            differences += comparison.differences
            for column in comparison.missing {
                statements.append(("ALTER TABLE \(table.name) ADD COLUMN \(column.definition(dialect))", nil))
                done.append("added \(table.name).\(column.name)")
            }
            for key in comparison.missingUniqueKeys {
                let name = ([table.name] + key + ["key"]).joined(separator: "_")
                statements.append(("CREATE UNIQUE INDEX \(name) ON \(table.name) (\(key.joined(separator: ", ")))", nil))
                done.append("made unique index \(name)")
            }
        }
        guard differences.isEmpty else { throw SchemaMismatch(differences: differences) }
        for (sql, values) in statements {
            if let values { try dialect.execute(sql, values) } else { try dialect.execute(sql) }
        }
        return done
    }

    /// `value` as an SQL literal both engines read alike.
    static func literal(_ value: JSONValue) -> String {
        switch value {
        case .null: return "NULL"
        case .bool(let bool): return bool ? "1" : "0"
        case .int(let int): return String(int)
        case .double(let double):
            if double == double.rounded(), abs(double) < 1e15 { return String(Int64(double)) }
            return String(double)
        case .string(let text): return "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'"
        case .array, .object: return literal(.string(JSONWriter.string(value)))
        }
    }
}

extension Schema.Column {
    /// `name TYPE [PRIMARY KEY] [NOT NULL] [DEFAULT …] [REFERENCES …] [CHECK (…)]…`
    func definition(_ dialect: some SchemaDialect) -> String {
        var parts = [name, dialect.typeName(type)]
        if isPrimaryKey { parts.append("PRIMARY KEY") } else if !isNullable { parts.append("NOT NULL") }
        if let defaultValue { parts.append("DEFAULT " + Schema.literal(defaultValue)) }
        if let references { parts.append("REFERENCES " + references) }
        parts += checks.map { "CHECK (\($0))" }
        return parts.joined(separator: " ")
    }
}

extension Schema.Table {
    /// `CREATE TABLE`, its unique keys stated in it.
    func create(_ dialect: some SchemaDialect) -> String {
        var lines = columns.map { column in
            column.definition(dialect) + (uniqueKeys.contains([column.name]) ? " UNIQUE" : "")
        }
        lines += uniqueKeys.filter { $0.count > 1 }.map { "UNIQUE (\($0.joined(separator: ", ")))" }
        lines += checks.map { "CHECK (\($0))" }
        return "CREATE TABLE \(name) (\n    " + lines.joined(separator: ",\n    ") + "\n)"
    }

    /// The columns `NOT NULL` that a first row leaves `null`: the seed
    /// gives no value and the field has no default.
    var unseeded: [String] {
        columns.enumerated().filter { index, column in !column.isNullable && seed.contains { $0[index] == .null } }.map { _, column in
            "table \(name), column \(column.name)" + (column.field.map { " (field \(model).\($0))" } ?? "")
                + ": the table is new, and a first row has no value for it (no seed gives one, and the field has no default)"
        }
    }

    /// An `INSERT` of one row of every column.
    func insert(_ dialect: some SchemaDialect) -> String {
        "INSERT INTO \(name) (\(columns.map(\.name).joined(separator: ", "))) VALUES ("
            + (1...columns.count).map(dialect.placeholder).joined(separator: ", ") + ")"
    }

    /// How the table `found` differs from this one: the columns it lacks
    /// that may be added, the unique keys it lacks, and what else differs.
    func compare(with found: Schema.FoundTable) -> (missing: [Schema.Column], missingUniqueKeys: [[String]], differences: [String]) {
        var missing: [Schema.Column] = [], differences: [String] = []
        let byName = Dictionary(found.columns.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for column in columns {
            let what = "table \(name), column \(column.name)" + (column.field.map { " (field \(model).\($0))" } ?? "")
            guard let existing = byName[column.name] else {
                if column.canBeAdded {
                    missing.append(column)
                } else {
                    differences.append("\(what): missing; a \(column.isPrimaryKey || column.field == nil ? "key" : "required field without a default") cannot be added to the rows there")
                }
                continue
            }
            if existing.type != column.type.stored {
                differences.append("\(what): \(existing.declaredType) in the database, the declaration stores \(column.type)")
            }
            if column.isPrimaryKey != existing.isPrimaryKey {
                differences.append("\(what): \(column.isPrimaryKey ? "is not" : "is") the primary key in the database")
            } else if !column.isPrimaryKey && column.isNullable && existing.isNotNull {
                differences.append("\(what): NOT NULL in the database, the declaration allows null")
            } else if !column.isPrimaryKey && !column.isNullable && !existing.isNotNull {
                differences.append("\(what): nullable in the database, the declaration does not allow null")
            }
        }
        let declared = Set(columns.map(\.name))
        for existing in found.columns where !declared.contains(existing.name) && existing.isNotNull && !existing.hasDefault {
            differences.append("table \(name), column \(existing.name): NOT NULL without a default in the database, and no field of \(model) declares it (a new row could not be stored)")
        }
        let foundKeys = Set(found.uniqueKeys.map(Set.init))
        let missingKeys = uniqueKeys.filter { key in !foundKeys.contains(Set(key)) && key.allSatisfy { byName[$0] != nil || declared.contains($0) } }
        return (missing, missingKeys, differences)
    }
}
