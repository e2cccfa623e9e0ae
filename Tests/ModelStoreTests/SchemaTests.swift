import Foundation
import JSON
@testable import ModelStore
import ModelStoreDatabases
import Models
import SQLiteStore
import Testing
import TestSupport

/// The models' tables come from their declarations, on a real SQLite file
/// and a real PostgreSQL database alike: made when missing, with their first
/// rows; added to when a column or unique key may be added; refused, with
/// every difference named and nothing changed, when they differ otherwise.
/// A database made by the migrations that made the tables before opens
/// unchanged, with its rows.
@Suite struct SchemaTests {
    enum Engine: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// A database of the tests' own, to look inside and change by hand:
    /// a SQLite file through `Database`, a PostgreSQL one through `psql`.
    struct TestDatabase {
        let engine: Engine
        /// The file's path or the URL: what `Store.Configuration` takes.
        let name: String

        /// A new, empty database.
        init(_ engine: Engine) throws {
            self.engine = engine
            switch engine {
            case .sqlite: name = GroupCommitTests.temporaryFolder() + "/schema.sqlite"
            case .postgres: name = try TestPostgres.freshDatabaseURL()
            }
        }

        /// Runs `sql`; throws with what the database said when it fails.
        func execute(_ sql: String) throws {
            switch engine {
            case .sqlite:
                let database = try Database(path: name)
                defer { database.close() }
                try database.execute(sql)
            case .postgres:
                let result = try TestPostgres.psql(name, sql)
                guard result.status == 0 else { throw TestPostgresError(result.output) }
            }
        }

        /// Every row of `sql`, its columns as text joined by `|` (`null` as empty).
        func rows(_ sql: String) throws -> [String] {
            switch engine {
            case .sqlite:
                let database = try Database(path: name)
                defer { database.close() }
                return try database.rows(sql).map { row in
                    row.values.map { value in
                        switch value {
                        case .null: ""
                        case .integer(let int): String(int)
                        case .real(let double): String(double)
                        default: value.string ?? ""
                        }
                    }.joined(separator: "|")
                }
            case .postgres:
                let result = try TestPostgres.psql(name, sql)
                guard result.status == 0 else { throw TestPostgresError(result.output) }
                return result.output.split(separator: "\n").map(String.init)
            }
        }

        /// Each column of `table` as `name|type|not null|primary key`, by
        /// name, the type as what it stores (PostgreSQL's `bigint` and
        /// `integer` are both `integer`), then each unique key, sorted.
        func describe(_ table: String) throws -> [String] {
            switch engine {
            case .sqlite:
                let columns = try rows("SELECT name, lower(type), \"notnull\", pk > 0 FROM pragma_table_info('\(table)') ORDER BY name")
                let keys = try rows("""
                    SELECT group_concat(i.name, ',') FROM pragma_index_list('\(table)') l, pragma_index_info(l.name) i
                    WHERE l."unique" = 1 GROUP BY l.name
                    """)
                return columns + keys.map { "unique " + $0 }.sorted()
            case .postgres:
                let columns = try rows("""
                    SELECT a.attname || '|' || regexp_replace(format_type(a.atttypid, a.atttypmod), '^(bigint|smallint)$', 'integer')
                        || '|' || (a.attnotnull AND NOT COALESCE(i.indisprimary, false))::int
                        || '|' || COALESCE(i.indisprimary, false)::int
                    FROM pg_attribute a
                    LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY (i.indkey::int2[])
                    WHERE a.attrelid = '\(table)'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attname
                    """)
                let keys = try rows("""
                    SELECT (SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(i.indkey::int2[]) WITH ORDINALITY k (attnum, n)
                            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum)
                    FROM pg_index i WHERE i.indrelid = '\(table)'::regclass AND i.indisunique
                    """)
                return columns + keys.map { "unique " + $0 }.sorted()
            }
        }

        func store(_ catalog: Catalog) throws -> Store {
            try Store(configuration: Store.Configuration(database: name), catalog: catalog)
        }
    }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The engine's own tables, without any model: what every catalog here starts from.
    static let migrations = SeedModels.catalog().migrations

    /// The migrations a database was made by before the models' tables came
    /// from their declarations: `0001_init` with the tables it made then,
    /// `0002` to `0005` as they were (Tests/Fixtures/old-migrations), and
    /// the later ones, which are unchanged.
    static func oldMigrations() throws -> [(name: String, sql: String)] {
        let old = repository.appendingPathComponent("Tests/Fixtures/old-migrations")
        func text(_ file: String) throws -> String { try String(contentsOf: old.appendingPathComponent(file), encoding: .utf8) }
        let first = try migrations.filter { $0.name.hasPrefix("0001_") }.map { file in
            (file.name, file.sql + "\n" + (try text(file.name.replacingOccurrences(of: "0001_init", with: "0001_init.models"))))
        }
        let removed = try FileManager.default.contentsOfDirectory(atPath: old.path).filter { $0.hasSuffix(".sql") && !$0.hasPrefix("0001_") }
        return try first + removed.map { ($0, try text($0)) } + migrations.filter { $0.name >= "0006" }
    }

    // MARK: - A model of the tests' own

    static let items = Resource.collection("items", element: "item", at: "items", allowing: [.get]) {
        Field.text("label")
        Field.boolean("isPacked", default: false)
    }

    static let boxes = Resource.collection("boxes", element: "box", at: "/shelf/boxes", allowing: [.list, .create, .get, .patch, .delete]) {
        Field.text("name")
        Field.integer("weightKg", range: 1...50)
        Field.text("note", nullable: true)
        items
    }

    static let shelf = Resource.singleton("shelf", at: "/shelf", allowing: [.get, .patch]) {
        Field.text("title", default: "Shelf")
        boxes
    }

    static let books = "0b0c5000-0000-4000-8000-000000000001"

    /// The shelf, its first box, and the engine's own tables.
    static let catalog = Catalog(resources: [boxes, shelf], migrations: migrations,
                                 seed: [Seed(boxes, id: books, [("name", "Books"), ("weightKg", 12)])])

    // MARK: - Made from the declarations

    @Test(arguments: Engine.allCases)
    func aModelsTablesAreMadeFromItsDeclarationWithTheirFirstRowsOnce(_ engine: Engine) throws {
        let database = try TestDatabase(engine)
        let done = try Store.migrate(database: database.name, catalog: Self.catalog)
        #expect(done.suffix(3) == ["made table boxes", "made table items", "made table shelf"])
        #expect(try database.describe("boxes") == [
            "id|text|0|1", "name|text|1|0", "note|text|0|0", "position|integer|1|0", "weight_kg|integer|1|0", "unique id", "unique position",
        ])
        #expect(try database.describe("items").filter { $0.hasPrefix("unique") } == ["unique box_id,position", "unique id"])

        var store = try database.store(Self.catalog)
        #expect(store.state[singleton: Self.shelf]["title"] == "Shelf")
        #expect(store.state[Self.boxes].values.map { [JSONValue.string($0.id), $0["name"], $0["weightKg"], $0["note"]] }
                == [[.string(Self.books), "Books", 12, .null]])
        // The seeded box deleted stays deleted: a table there is never seeded again.
        _ = try store.write(Self.boxes.delete(Self.books, onlyIf: nil))
        _ = try store.write { tx in
            var box = Record.new(Self.boxes, ["name": "Cups", "weightKg": 3])
            let item = Record.new(Self.items, in: box.path, ["label": "mug"])
            box[Self.items][item.id] = item
            try tx.insert(box, into: Self.boxes)
        }
        let written = Self.shelf.representation(of: store.state[singleton: Self.shelf], in: store.state)
        store.close()
        #expect(try Store.migrate(database: database.name, catalog: Self.catalog) == [])
        store = try database.store(Self.catalog)
        defer { store.close() }
        #expect(Self.shelf.representation(of: store.state[singleton: Self.shelf], in: store.state).bytes == written.bytes)
        #expect(store.state[Self.boxes].values.map { $0["name"] } == ["Cups"])
    }

    /// The seed systems' tables made from their declarations hold what
    /// those the old migrations made hold: the same columns, types, `NOT
    /// NULL`s, keys and unique keys; and they refuse the same rows.
    @Test(arguments: Engine.allCases)
    func theSeedSystemsTablesAreTheOnesTheOldMigrationsMade(_ engine: Engine) throws {
        let old = try TestDatabase(engine), derived = try TestDatabase(engine)
        _ = try Store.migrate(database: old.name, catalog: Catalog(resources: [], migrations: try Self.oldMigrations()))
        _ = try Store.migrate(database: derived.name, catalog: SeedModels.catalog())
        for table in ["truck", "donuts", "orders", "account", "dots", "jobs", "posts", "games", "cards"] {
            #expect(try derived.describe(table) == (try old.describe(table)), "\(table)")
        }
        let refused = [
            "INSERT INTO truck (id, name) VALUES (2, 'Second')",
            "INSERT INTO orders (id, position, donut_id, quantity) VALUES ('o', 1, 'd', 0)",
            "INSERT INTO orders (id, position, donut_id, quantity) VALUES ('o', 1, 'd', 1001)",
            "INSERT INTO orders (id, position, donut_id, quantity) VALUES ('o', 1, NULL, 1)",
            "INSERT INTO donuts (id, position, name, dough) VALUES ('d', 1, 'Twin', 'plain')",
            "UPDATE dots SET is_tap_animated = 2",
            "INSERT INTO dots (id, grid_row, grid_col) VALUES ('x', 0, 0)",
            "INSERT INTO dots (id, grid_row, grid_col) VALUES ('x', -1, 0)",
            "INSERT INTO jobs (id, position, current, total) VALUES ('j', 1, 5, 4)",
            "INSERT INTO jobs (id, position, current, total, step) VALUES ('j', 1, 0, 4, 1)",
            "INSERT INTO jobs (id, position, current, total, step, interval_ms) VALUES ('j', 1, 0, 4, 0, 100)",
            "INSERT INTO jobs (id, position, current, total, step, interval_ms) VALUES ('j', 1, 0, 4, 1, 5)",
            "INSERT INTO jobs (id, position, current, total) VALUES ('j', 1, 0, 1000000001)",
            "INSERT INTO posts (id, position, image_url, height) VALUES ('p', 1, 'https://example.com/a.png', 0)",
            "INSERT INTO cards (id, game_id, position, content) VALUES ('c', 'no-game', 0, 'x')",
        ]
        for (made, database) in [("old", old), ("derived", derived)] {
            for sql in refused {
                #expect(throws: (any Error).self, "\(sql) on the \(made) tables") { try database.execute(sql) }
            }
            try database.execute("""
                INSERT INTO orders (id, position, donut_id, quantity) VALUES ('o', 1, 'd', 1000);
                INSERT INTO jobs (id, position, current, total, step, interval_ms) VALUES ('j', 1, 4, 4, 1, 10);
                INSERT INTO games (id, position) VALUES ('g', 1);
                INSERT INTO cards (id, game_id, position, content) VALUES ('c', 'g', 0, 'x');
                DELETE FROM games;
                """)
            #expect(try database.rows("SELECT COUNT(*) FROM cards") == ["0"])
        }
        // The same first rows, where the old migrations inserted them.
        for table in ["truck", "account", "donuts ORDER BY position", "dots ORDER BY id"] {
            #expect(try derived.rows("SELECT * FROM \(table)") == (try old.rows("SELECT * FROM \(table)")), "\(table)")
        }
    }

    @Test(arguments: Engine.allCases)
    func aDatabaseMadeByTheOldMigrationsOpensUnchangedWithItsRows(_ engine: Engine) throws {
        let database = try TestDatabase(engine)
        _ = try Store.migrate(database: database.name, catalog: Catalog(resources: [], migrations: try Self.oldMigrations()))
        try database.execute("""
            UPDATE truck SET name = 'Night Truck';
            DELETE FROM donuts WHERE position = 4;
            INSERT INTO orders (id, position, donut_id, quantity) VALUES ('0b0c5000-0000-4000-8000-0000000000a1', 1, '0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001', 3);
            INSERT INTO jobs (id, position, current, total) VALUES ('0b0c5000-0000-4000-8000-0000000000a2', 1, 2, 5);
            INSERT INTO posts (id, position, image_url, height) VALUES ('0b0c5000-0000-4000-8000-0000000000a3', 1, 'https://example.com/a.png', 120.5);
            """)
        let tables = ["truck", "donuts", "orders", "account", "dots", "jobs", "posts", "games", "cards"]
        let before = try tables.map { try database.describe($0) }
        #expect(try Store.migrate(database: database.name, catalog: SeedModels.catalog()) == [])
        #expect(try tables.map { try database.describe($0) } == before)
        let store = try database.store(SeedModels.catalog())
        defer { store.close() }
        #expect(store.state[singleton: FoodTruck.truck][FoodTruck.truckName] == "Night Truck")
        #expect(store.state[FoodTruck.donuts].values.map { $0[FoodTruck.name] } == ["Glazed", "Chocolate Frosted", "Strawberry Sprinkle"])
        #expect(store.state[FoodTruck.orders].values.map { $0["quantity"] } == [3])
        #expect(store.state[Jobs.jobs].values.map { [$0[Jobs.current], $0[Jobs.total]] } == [[2, 5]])
        #expect(store.state[Posts.posts].values.map { $0[Posts.height] } == [120.5])
        #expect(store.state[DotGrid.dots].count == 9)
    }

    /// A change to a model's table that a declaration cannot make (a
    /// column renamed) is a migration naming the table: it runs on a
    /// database that has the table, and is recorded without running on one
    /// that has not, whose table is made as the declaration is now.
    @Test(arguments: Engine.allCases)
    func aMigrationOfAModelsTableRunsWhereTheTableIsAndIsOnlyRecordedWhereNot(_ engine: Engine) throws {
        let rename = ("0100_box_name.sql", "-- tables: boxes\nALTER TABLE boxes RENAME COLUMN label TO name;\n")
        let catalog = Catalog(resources: [Self.boxes, Self.shelf], migrations: Self.migrations + [rename])

        let older = try TestDatabase(engine)
        _ = try Store.migrate(database: older.name, catalog: Catalog(resources: [], migrations: Self.migrations))
        try older.execute("""
            CREATE TABLE boxes (id TEXT PRIMARY KEY, position INTEGER NOT NULL UNIQUE, label TEXT NOT NULL, weight_kg INTEGER NOT NULL, note TEXT);
            INSERT INTO boxes (id, position, label, weight_kg) VALUES ('b', 1, 'Tools', 9);
            """)
        #expect(try Store.migrate(database: older.name, catalog: catalog) == ["0100_box_name", "made table items", "made table shelf"])
        let store = try older.store(catalog)
        #expect(store.state[Self.boxes]["b"]?["name"] == "Tools")
        store.close()

        let new = try TestDatabase(engine)
        let done = try Store.migrate(database: new.name, catalog: catalog)
        #expect(done.contains("0100_box_name (recorded only)"))
        #expect(done.suffix(3) == ["made table boxes", "made table items", "made table shelf"])
        #expect(try new.rows("SELECT COUNT(*) FROM schema_migrations WHERE version = 100") == ["1"])
        #expect(try Store.migrate(database: new.name, catalog: catalog) == [])
    }

    /// A singleton's row 1 needs a value for each field that has no
    /// default: a catalog that seeds none is refused before anything is made.
    @Test func aNewTableWhoseFirstRowLacksARequiredValueIsRefused() throws {
        let database = try TestDatabase(.sqlite)
        let sign = Resource.singleton("sign", at: "/sign", allowing: [.get]) { Field.text("text") }
        let error = try #require(throws: SchemaMismatch.self) {
            try Store.migrate(database: database.name, catalog: Catalog(resources: [sign], migrations: Self.migrations))
        }
        #expect(error.differences == [
            "table sign, column text (field sign.text): the table is new, and a first row has no value for it (no seed gives one, and the field has no default)",
        ])
        #expect(try Store.migrate(database: database.name, catalog: Catalog(resources: [sign], migrations: Self.migrations,
                                                                            seed: [Seed(sign, [("text", "Open")])])) == ["made table sign"])
    }

    // MARK: - Tables that differ

    @Test(arguments: Engine.allCases)
    func aColumnOrUniqueKeyATableLacksIsAddedWhenItMayBe(_ engine: Engine) throws {
        let database = try TestDatabase(engine)
        _ = try Store.migrate(database: database.name, catalog: Catalog(resources: [], migrations: Self.migrations))
        try database.execute("""
            CREATE TABLE boxes (id TEXT PRIMARY KEY, position INTEGER NOT NULL UNIQUE, name TEXT NOT NULL, weight_kg INTEGER NOT NULL);
            CREATE TABLE items (id TEXT PRIMARY KEY, box_id TEXT NOT NULL REFERENCES boxes (id) ON DELETE CASCADE,
                                position INTEGER NOT NULL, label TEXT NOT NULL);
            INSERT INTO boxes (id, position, name, weight_kg) VALUES ('b', 1, 'Tools', 9);
            INSERT INTO items (id, box_id, position, label) VALUES ('i', 'b', 0, 'saw');
            """)
        #expect(try Store.migrate(database: database.name, catalog: Self.catalog) == [
            "added boxes.note", "added items.is_packed", "made unique index items_box_id_position_key", "made table shelf",
        ])
        let store = try database.store(Self.catalog)
        defer { store.close() }
        let box = try #require(store.state[Self.boxes]["b"])
        #expect(box["note"] == .null)
        #expect(box[Self.items].values.map { [$0["label"], $0["isPacked"]] } == [["saw", false]])
        #expect(throws: (any Error).self) { try database.execute("INSERT INTO items (id, box_id, position, label) VALUES ('j', 'b', 0, 'awl')") }
    }

    @Test(arguments: Engine.allCases)
    func aTableThatDiffersOtherwiseStopsTheStoreNamingEachDifferenceAndChangesNothing(_ engine: Engine) throws {
        let database = try TestDatabase(engine)
        _ = try Store.migrate(database: database.name, catalog: Catalog(resources: [], migrations: Self.migrations))
        try database.execute("""
            CREATE TABLE boxes (id TEXT PRIMARY KEY, position INTEGER NOT NULL UNIQUE, name TEXT,
                                weight_kg TEXT NOT NULL, note TEXT NOT NULL, colour TEXT NOT NULL);
            CREATE TABLE shelf (id INTEGER PRIMARY KEY, shelf_title TEXT);
            """)
        let error = try #require(throws: SchemaMismatch.self) { try Store.migrate(database: database.name, catalog: Self.catalog) }
        let text = engine == .sqlite ? "TEXT" : "text"
        #expect(error.differences == [
            "table boxes, column name (field boxes.name): nullable in the database, the declaration does not allow null",
            "table boxes, column weight_kg (field boxes.weightKg): \(text) in the database, the declaration stores integer",
            "table boxes, column note (field boxes.note): NOT NULL in the database, the declaration allows null",
            "table boxes, column colour: NOT NULL without a default in the database, and no field of boxes declares it (a new row could not be stored)",
        ])
        #expect(error.description.hasPrefix("the database does not match the models' declarations:\n  - table boxes, column name"))
        // The shelf's missing `title` has a default, and is not named; nothing was added or made.
        #expect(try database.describe("shelf").filter { !$0.hasPrefix("unique") }.map { $0.split(separator: "|").first.map(String.init) }
                == ["id", "shelf_title"])
        #expect(throws: (any Error).self) { try database.rows("SELECT COUNT(*) FROM items") }

        try database.execute("DROP TABLE boxes; CREATE TABLE boxes (id TEXT PRIMARY KEY, weight_kg INTEGER NOT NULL, note TEXT)")
        let missing = try #require(throws: SchemaMismatch.self) { try database.store(Self.catalog) }
        #expect(missing.differences == [
            "table boxes, column position: missing; a key cannot be added to the rows there",
            "table boxes, column name (field boxes.name): missing; a required field without a default cannot be added to the rows there",
        ])
    }

    /// A store refused at open lets go of its database at once: no file of
    /// it stays open, neither the writer's connection nor that of the
    /// thread that checkpoints its log, nor the read journal.
    @Test func aStoreRefusedAtOpenKeepsNoFileOfItsDatabaseOpen() throws {
        let database = try TestDatabase(.sqlite)
        _ = try Store.migrate(database: database.name, catalog: Catalog(resources: [], migrations: Self.migrations))
        try database.execute("CREATE TABLE boxes (id TEXT PRIMARY KEY, weight_kg TEXT NOT NULL)")
        #expect(throws: SchemaMismatch.self) { try database.store(Self.catalog) }
        #expect(Self.openFiles(startingWith: database.name) == [])
        let store = try database.store(Catalog(resources: [], migrations: Self.migrations))
        #expect(!Self.openFiles(startingWith: database.name).isEmpty, "an open store is seen")
        store.close()
    }

    /// The paths of this process's open files that start with `prefix`.
    static func openFiles(startingWith prefix: String) -> [String] {
        let files = FileManager.default
        let descriptors = (try? files.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.compactMap { try? files.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }.filter { $0.hasPrefix(prefix) }
    }
}
