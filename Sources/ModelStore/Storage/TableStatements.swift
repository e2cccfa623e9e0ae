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
