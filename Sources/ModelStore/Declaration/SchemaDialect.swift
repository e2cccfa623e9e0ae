import JSON

/// What an engine tells `Schema.ensure(in:)`: its names for the column
/// types, the tables it finds, and statements run on its connection, in
/// the transaction `ensure` runs in.
package protocol SchemaDialect {
    /// The type of a column of `type` in a new table (`INTEGER`, `BIGINT`).
    func typeName(_ type: Schema.ColumnType) -> String
    /// The table `name` as the database has it, nil when there is none.
    func table(named name: String) throws -> Schema.FoundTable?
    func execute(_ sql: String) throws
    /// Runs `sql` with its placeholders bound to `values`, in order.
    func execute(_ sql: String, _ values: [JSONValue]) throws
    /// The placeholder of the `n`th value of a statement, from 1 (`?`, `$1`).
    func placeholder(_ n: Int) -> String
}
