import API
import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Logging
import ModelStore
import ModelStoreDatabases
import Models

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending migrations, make or check the models' tables, and exit.")

    @OptionGroup var store: StoreOptions

    func run() throws {
        let applied = try Store.migrate(database: try store.databaseName(), catalog: SeedModels.catalog())
        print(applied.isEmpty ? "database is up to date" : "applied: " + applied.joined(separator: ", "))
    }
}
