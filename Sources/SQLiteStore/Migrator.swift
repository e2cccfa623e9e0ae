/// Applies numbered SQL migrations (`0001_init.sql`, …) in order, each in
/// its own transaction, and records each in `schema_migrations`.
public struct Migrator {
    public struct Migration: Sendable, Equatable {
        public let version: Int
        public let name: String
        public let sql: String
    }

    public enum MigratorError: Error, CustomStringConvertible {
        case badFileName(String)
        case duplicateVersion(Int)

        public var description: String {
            switch self {
            case .badFileName(let name): return "migration file name must look like NNNN_name.sql: \(name)"
            case .duplicateVersion(let v): return "two migrations share version \(v)"
            }
        }
    }

    public let migrations: [Migration]

    /// Takes `NNNN_name.sql` files, given by name and text, sorted by number.
    public init(files: [(name: String, sql: String)]) throws {
        var found: [Migration] = []
        for (file, sql) in files {
            guard file.hasSuffix(".sql") else { throw MigratorError.badFileName(file) }
            let stem = file.dropLast(4)
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]) else {
                throw MigratorError.badFileName(file)
            }
            found.append(Migration(version: version, name: String(stem), sql: sql))
        }
        found.sort { $0.version < $1.version }
        for (a, b) in zip(found, found.dropFirst()) where a.version == b.version {
            throw MigratorError.duplicateVersion(a.version)
        }
        migrations = found
    }

    /// Applies the migrations not yet recorded; returns the names applied.
    @discardableResult
    public func migrate(_ database: Database) throws -> [String] {
        try database.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
            )
            """)
        let applied = Set(try database.rows("SELECT version FROM schema_migrations").compactMap { $0[0].int64 })
        var names: [String] = []
        for migration in migrations where !applied.contains(Int64(migration.version)) {
            try database.transaction {
                try database.execute(migration.sql)
                try database.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
                    [.integer(Int64(migration.version)), .text(migration.name)])
            }
            names.append(migration.name)
        }
        return names
    }
}
