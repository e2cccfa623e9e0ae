import Foundation
import SQLiteStore
import Testing

@Suite struct MigratorTests {
    func folder() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("migrator-" + UUID().uuidString).path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func migration(_ version: Int, _ name: String, _ sql: String) -> Migrator.Migration {
        Migrator.Migration(version: version, name: name, sql: sql)
    }

    /// Migrations are given in memory and applied in order.
    @Test func appliesMigrationsInOrderOnceAndRecordsThem() throws {
        let database = try Database(path: folder() + "/db/test.sqlite")
        let migrator = Migrator([
            migration(1, "0001_a", "CREATE TABLE a (x INTEGER);"),
            migration(2, "0002_fill", "INSERT INTO a VALUES (2);"),
        ])
        #expect(try migrator.migrate(database) == ["0001_a", "0002_fill"])
        #expect(try migrator.migrate(database) == [])
        #expect(try database.rows("SELECT x FROM a").map { $0[0] } == [.integer(2)])
        #expect(try database.rows("SELECT version, name FROM schema_migrations ORDER BY version").map(\.values) ==
            [[.integer(1), .text("0001_a")], [.integer(2), .text("0002_fill")]])
    }

    /// A later list that adds a migration applies only the new one.
    @Test func appliesOnlyMigrationsNotYetRecorded() throws {
        let database = try Database(path: folder() + "/test.sqlite")
        try Migrator([migration(1, "0001_a", "CREATE TABLE a (x INTEGER);")]).migrate(database)
        let later = Migrator([
            migration(1, "0001_a", "CREATE TABLE a (x INTEGER);"),
            migration(2, "0002_b", "CREATE TABLE b (y INTEGER);"),
        ])
        #expect(try later.migrate(database) == ["0002_b"])
    }

    /// One that the caller says not to run is recorded all the same, and never offered again.
    @Test func aMigrationNotToRunIsRecordedWithoutRunning() throws {
        let database = try Database(path: folder() + "/test.sqlite")
        let migrator = Migrator([migration(1, "0001_a", "CREATE TABLE a (x INTEGER);"), migration(2, "0002_b", "INSERT INTO nowhere VALUES (1);")])
        #expect(try migrator.migrate(database) { $0.version == 1 } == ["0001_a", "0002_b (recorded only)"])
        #expect(try migrator.migrate(database) == [])
        #expect(try database.rows("SELECT version FROM schema_migrations ORDER BY version").map { $0[0] } == [.integer(1), .integer(2)])
    }

    @Test func failingMigrationLeavesNothingBehind() throws {
        let database = try Database(path: folder() + "/test.sqlite")
        let migrator = Migrator([migration(1, "0001_bad", "CREATE TABLE a (x INTEGER); INSERT INTO nowhere VALUES (1);")])
        #expect(throws: SQLiteError.self) { try migrator.migrate(database) }
        #expect(try database.rows("SELECT name FROM sqlite_master WHERE name = 'a'").isEmpty)
        #expect(try database.rows("SELECT COUNT(*) FROM schema_migrations").first?[0] == .integer(0))
    }

    @Test func databaseUsesWAL() throws {
        let database = try Database(path: folder() + "/wal.sqlite")
        #expect(try database.rows("PRAGMA journal_mode").first?[0] == .text("wal"))
    }
}
