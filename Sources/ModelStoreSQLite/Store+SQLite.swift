import Logging
import ModelStore

extension Store {
    /// Opens (creating when missing) the SQLite database file at `path`,
    /// with its read journal beside it, then as `init(storage:…)`.
    package convenience init(sqlite path: String, configuration: Configuration, catalog: Catalog, logger: Logger) throws {
        let storage = try SQLiteStorage(path: path, durability: configuration.durability)
        if let bytes = configuration.maxDatabaseBytes {
            do {
                try storage.limitSize(to: bytes)
            } catch {
                storage.close()
                throw error
            }
        }
        let readDurability: SQLiteReadDurability
        do {
            readDurability = try SQLiteReadDurability(storage: storage, journal: path + "-reads",
                                                      durability: configuration.durability, logger: logger)
        } catch {
            storage.close()
            throw error
        }
        do {
            try self.init(storage: storage, readDurability: readDurability, configuration: configuration, catalog: catalog, logger: logger)
        } catch {
            // Refused (a schema that does not match, a row missing): the
            // journal's lock and the files are let go at once.
            readDurability.close()
            storage.close()
            throw error
        }
    }

    /// Applies the pending migrations of `catalog` to the SQLite database
    /// file at `path` and makes or checks its models' tables; returns what
    /// was done.
    package static func migrate(sqlite path: String, catalog: Catalog) throws -> [String] {
        let storage = try SQLiteStorage(path: path, durability: .processCrash)
        defer { storage.close() }
        return try storage.prepare(catalog)
    }
}
