import Logging
import ModelStore
import ModelStorePostgres
import ModelStoreSQLite

/// A store opened on the database a configuration names: the one place
/// that knows both engines.
extension Store {
    /// Opens the database of `configuration` (SQLite or PostgreSQL), then
    /// as `init(storage:readDurability:…)`, with that engine's storage and
    /// its way of making reads durable.
    public convenience init(configuration: Configuration, catalog: Catalog, logger: Logger = Logger(label: "observable.store")) throws {
        switch try Engine(configuration.database) {
        case .sqlite(let path):
            try self.init(sqlite: path, configuration: configuration, catalog: catalog, logger: logger)
        case .postgres(let url):
            try self.init(postgres: url, configuration: configuration, catalog: catalog, logger: logger)
        }
    }

    /// Applies the pending migrations of `migrations` to the database named
    /// by `database` (a SQLite file or a PostgreSQL URL); returns their names.
    public static func migrate(database: String, migrations: [(name: String, sql: String)]) throws -> [String] {
        switch try Engine(database) {
        case .sqlite(let path): try migrate(sqlite: path, migrations: migrations)
        case .postgres(let url): try migrate(postgres: url, migrations: migrations)
        }
    }
}
