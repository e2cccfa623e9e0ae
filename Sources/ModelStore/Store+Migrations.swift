import SQLiteStore

extension Store {
    public typealias Synchronous = Database.Synchronous

    /// Applies pending migrations to the database at `databasePath`; returns their names.
    public static func migrate(databasePath: String, migrationsFolder: String) throws -> [String] {
        let database = try Database(path: databasePath)
        defer { database.close() }
        return try Migrator(folder: migrationsFolder).migrate(database)
    }

    /// Finds the migrations folder (see `Migrator.locateFolder`).
    public static func locateMigrations(explicit: String?) -> String? {
        Migrator.locateFolder(explicit: explicit)
    }
}
