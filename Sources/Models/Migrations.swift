import EmbeddedFiles
import SQLiteStore

extension Migrator {
    /// The migrations of migrations/, as built into the binary.
    public static func builtIn() throws -> Migrator {
        try Migrator(files: Embedded.migrations.map { ($0.name, $0.text) })
    }
}

/// Applies pending migrations to the database at `databasePath`; returns their names.
public func migrate(databasePath: String) throws -> [String] {
    let database = try Database(path: databasePath)
    defer { database.close() }
    return try Migrator.builtIn().migrate(database)
}

public typealias Database = SQLiteStore.Database
