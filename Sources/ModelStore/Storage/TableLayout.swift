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
