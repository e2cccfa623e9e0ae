/// Applies numbered SQL migrations in order, each in its own transaction,
/// and records each in `schema_migrations`.
public struct Migrator {
    public struct Migration: Sendable, Equatable {
        public let version: Int
        public let name: String
        public let sql: String

        public init(version: Int, name: String, sql: String) {
            self.version = version
            self.name = name
            self.sql = sql
        }
    }

    public let migrations: [Migration]

    /// Takes the migrations sorted by version, each version once.
    public init(_ migrations: [Migration]) {
        self.migrations = migrations
    }

    /// Applies the migrations not yet recorded; returns the names applied.
    /// One that `runs` refuses is recorded without running (its name
    /// returned with `(recorded only)`).
    @discardableResult
    public func migrate(_ database: Database, runs: (Migration) throws -> Bool = { _ in true }) throws -> [String] {
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
            let running = try database.transaction {
                let running = try runs(migration)
                if running { try database.execute(migration.sql) }
                try database.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
                    [.integer(Int64(migration.version)), .text(migration.name)])
                return running
            }
            names.append(running ? migration.name : migration.name + " (recorded only)")
        }
        return names
    }
}
