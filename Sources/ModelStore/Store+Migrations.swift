import SQLiteStore

extension Store {
    public typealias Synchronous = Database.Synchronous

    /// Applies the pending `migrations` (`NNNN_name.sql` files) to the
    /// database at `databasePath`; returns their names.
    public static func migrate(databasePath: String, migrations: [(name: String, sql: String)]) throws -> [String] {
        let storage = try SQLiteStorage(path: databasePath, synchronous: .normal)
        defer { storage.close() }
        return try storage.migrate(migrations)
    }
}
