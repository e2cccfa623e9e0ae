import Logging
import ModelStore

extension Store {
    /// Connects to the PostgreSQL database at `url`, then as `init(storage:…)`.
    package convenience init(postgres url: String, configuration: Configuration, catalog: Catalog, logger: Logger) throws {
        let storage = try PostgresStorage(url: url, logger: logger)
        do {
            try self.init(storage: storage, readDurability: PostgresReadDurability(storage: storage), configuration: configuration,
                          catalog: catalog, logger: logger)
        } catch {
            storage.close()
            throw error
        }
    }

    /// Applies the pending migrations of `catalog` to the PostgreSQL
    /// database at `url` and makes or checks its models' tables; returns
    /// what was done.
    package static func migrate(postgres url: String, catalog: Catalog) throws -> [String] {
        let storage = try PostgresStorage(url: url)
        defer { storage.close() }
        return try storage.prepare(catalog)
    }
}
