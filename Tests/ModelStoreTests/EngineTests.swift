import ModelStore
import Testing

@Suite struct EngineTests {
    @Test func aDatabaseIsAFileOrAPostgresURLAndNothingElse() throws {
        #expect(try Store.Engine("./data/observable.sqlite") == .sqlite(path: "./data/observable.sqlite"))
        #expect(try Store.Engine("/tmp/a://b.sqlite") == .sqlite(path: "/tmp/a://b.sqlite"))
        #expect(try Store.Engine("postgres://u:p@h:5432/db") == .postgres(url: "postgres://u:p@h:5432/db"))
        #expect(try Store.Engine("PostgreSQL://h/db") == .postgres(url: "PostgreSQL://h/db"))
        #expect(throws: ModelError.self) { try Store.Engine("mysql://h/db") }
        #expect(throws: ModelError.self) { try Store.Engine("file://data.sqlite") }
    }

    @Test func aPasswordIsLeftOutOfWhatIsLogged() {
        #expect(Store.Engine.redacted("postgres://app:s3cr@t@db:5432/o") == "postgres://app:***@db:5432/o")
        #expect(Store.Engine.redacted("postgres://app@db/o") == "postgres://app@db/o")
        #expect(Store.Engine.redacted("./data/observable.sqlite") == "./data/observable.sqlite")
    }
}
