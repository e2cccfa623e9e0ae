/// The database's tables differ from the models' declarations in ways
/// that cannot be made good by adding to them: what differs, table by
/// table and column by column.
public struct SchemaMismatch: Error, CustomStringConvertible {
    public let differences: [String]

    public var description: String {
        """
        the database does not match the models' declarations:
        \(differences.map { "  - " + $0 }.joined(separator: "\n"))
        Change the declaration to match the table, or change the table with a numbered migration (migrations/README.md).
        """
    }
}
