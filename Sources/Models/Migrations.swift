import SQLiteStore

/// Applies pending migrations to the database at `databasePath`; returns their names.
public func migrate(databasePath: String, migrationsFolder: String) throws -> [String] {
    let database = try Database(path: databasePath)
    defer { database.close() }
    return try Migrator(folder: migrationsFolder).migrate(database)
}

/// Finds the migrations folder (see `Migrator.locateFolder`).
public func locateMigrations(explicit: String?) -> String? {
    Migrator.locateFolder(explicit: explicit)
}

public typealias Database = SQLiteStore.Database
