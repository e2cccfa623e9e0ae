import ModelStore
import ModelStoreDatabases
import Testing

@Suite struct StoreDatabaseTests {
    @Test func aDatabaseIsAFileOrAPostgresURLAndNothingElse() throws {
        #expect(try StoreDatabase("./data/observable.sqlite") == .sqlite(path: "./data/observable.sqlite"))
        #expect(try StoreDatabase("/tmp/a://b.sqlite") == .sqlite(path: "/tmp/a://b.sqlite"))
        #expect(try StoreDatabase("postgres://u:p@h:5432/db") == .postgres(url: "postgres://u:p@h:5432/db"))
        #expect(try StoreDatabase("PostgreSQL://h/db") == .postgres(url: "PostgreSQL://h/db"))
        #expect(throws: ModelError.self) { try StoreDatabase("mysql://h/db") }
        #expect(throws: ModelError.self) { try StoreDatabase("file://data.sqlite") }
    }

    @Test func aPasswordIsLeftOutOfWhatIsLogged() {
        #expect(StoreDatabase.redacted("postgres://app:s3cr@t@db:5432/o") == "postgres://app:***@db:5432/o")
        #expect(StoreDatabase.redacted("postgres://app@db/o") == "postgres://app@db/o")
        #expect(StoreDatabase.redacted("./data/observable.sqlite") == "./data/observable.sqlite")
    }
}
