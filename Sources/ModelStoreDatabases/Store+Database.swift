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
        switch try StoreDatabase(configuration.database) {
        case .sqlite(let path):
            try self.init(sqlite: path, configuration: configuration, catalog: catalog, logger: logger)
        case .postgres(let url):
            try self.init(postgres: url, configuration: configuration, catalog: catalog, logger: logger)
        }
    }

    /// Applies the pending migrations of `catalog` to the database named
    /// by `database` (a SQLite file or a PostgreSQL URL), then makes its
    /// models' tables that are missing and checks the others (a mismatch
    /// throws `SchemaMismatch`); returns what was done, in words.
    public static func migrate(database: String, catalog: Catalog) throws -> [String] {
        switch try StoreDatabase(database) {
        case .sqlite(let path): try migrate(sqlite: path, catalog: catalog)
        case .postgres(let url): try migrate(postgres: url, catalog: catalog)
        }
    }
}
