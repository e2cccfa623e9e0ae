import Foundation
import SQLiteStore
import Testing

@Suite struct MigratorTests {
    func folder() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("migrator-" + UUID().uuidString).path
        try? FileManager.default.createDirectory(atPath: path + "/migrations", withIntermediateDirectories: true)
        return path
    }

    @Test func appliesMigrationsInOrderOnceAndRecordsThem() throws {
        let root = folder()
        try "CREATE TABLE a (x INTEGER);".write(toFile: root + "/migrations/0001_a.sql", atomically: true, encoding: .utf8)
        try "INSERT INTO a VALUES (2);".write(toFile: root + "/migrations/0002_fill.sql", atomically: true, encoding: .utf8)
        let database = try Database(path: root + "/db/test.sqlite")
        let migrator = try Migrator(folder: root + "/migrations")
        #expect(try migrator.migrate(database) == ["0001_a", "0002_fill"])
        #expect(try migrator.migrate(database) == [])
        #expect(try database.rows("SELECT x FROM a").map { $0[0] } == [.integer(2)])
        #expect(try database.rows("SELECT version, name FROM schema_migrations ORDER BY version").map(\.values) ==
            [[.integer(1), .text("0001_a")], [.integer(2), .text("0002_fill")]])
    }

    @Test func failingMigrationLeavesNothingBehind() throws {
        let root = folder()
        try "CREATE TABLE a (x INTEGER); INSERT INTO nowhere VALUES (1);".write(toFile: root + "/migrations/0001_bad.sql", atomically: true, encoding: .utf8)
        let database = try Database(path: root + "/test.sqlite")
        #expect(throws: SQLiteError.self) { try Migrator(folder: root + "/migrations").migrate(database) }
        #expect(try database.rows("SELECT name FROM sqlite_master WHERE name = 'a'").isEmpty)
    }

    @Test func refusesBadFileNamesAndMissingFolders() throws {
        let root = folder()
        try "".write(toFile: root + "/migrations/init.sql", atomically: true, encoding: .utf8)
        #expect(throws: Migrator.MigratorError.self) { try Migrator(folder: root + "/migrations") }
        #expect(throws: Migrator.MigratorError.self) { try Migrator(folder: root + "/nowhere") }
    }

    @Test func databaseUsesWAL() throws {
        let database = try Database(path: folder() + "/wal.sqlite")
        #expect(try database.rows("PRAGMA journal_mode").first?[0] == .text("wal"))
    }
}
