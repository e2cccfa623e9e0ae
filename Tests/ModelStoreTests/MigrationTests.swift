@testable import ModelStore
import Testing

/// The rule that names migration files, which each engine applies its
/// dialect's files by.
@Suite struct MigrationTests {
    /// Files are given in memory, in any order, and come sorted by number.
    @Test func filesAreSortedByTheirNumber() throws {
        let migrations = try Migration.ordered([
            ("0002_fill.sql", "INSERT INTO a VALUES (2);"),
            ("0001_a.sql", "CREATE TABLE a (x INTEGER);"),
        ])
        #expect(migrations.map(\.version) == [1, 2])
        #expect(migrations.map(\.name) == ["0001_a", "0002_fill"])
        #expect(migrations.map(\.sql) == ["CREATE TABLE a (x INTEGER);", "INSERT INTO a VALUES (2);"])
    }

    @Test(arguments: ["init.sql", "0001-init.sql", "0001_init.txt", "x_init.sql"])
    func refusesBadFileNames(_ name: String) throws {
        #expect(throws: Migration.FileError.self) { try Migration.ordered([(name, "")]) }
    }

    /// A migration that changes models' tables names them on its first line.
    @Test func aMigrationNamesTheModelsTablesItChangesOnItsFirstLine() throws {
        let migrations = try Migration.ordered([
            ("0100_rename.sql", "-- tables: boxes,  shelf\nALTER TABLE boxes RENAME COLUMN label TO name;"),
            ("0101_other.sql", "-- Not a list of tables.\n-- tables: boxes\nDELETE FROM boxes;"),
        ])
        #expect(migrations.map(\.tables) == [["boxes", "shelf"], []])
    }

    @Test func refusesTwoMigrationsWithOneVersion() throws {
        #expect(throws: Migration.FileError.self) {
            try Migration.ordered([("0001_a.sql", ""), ("0001_b.sql", "")])
        }
    }
}
