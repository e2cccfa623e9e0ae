import ModelObservation
import SQLiteStore

extension Store {
    /// Applies the pending migrations of `migrations` to the database named
    /// by `database` (a SQLite file or a PostgreSQL URL); returns their names.
    public static func migrate(database: String, migrations: [(name: String, sql: String)]) throws -> [String] {
        let storage: any ModelStorage
        switch try Engine(database) {
        case .sqlite(let path): storage = try SQLiteStorage(path: path, synchronous: .normal)
        case .postgres(let url): storage = try PostgresStorage(url: url)
        }
        defer { storage.close() }
        return try storage.migrate(migrations)
    }
}
