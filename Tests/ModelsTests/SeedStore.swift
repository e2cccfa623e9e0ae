import Foundation
import ModelStore
import ModelStoreDatabases
import Models

/// A store of the seed systems on a fresh SQLite file, migrated but not
/// serving: no background work runs unless a test starts it.
func seedStore() throws -> Store {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("observable-models-" + UUID().uuidString).path
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    return try Store(configuration: Store.Configuration(database: folder + "/observable.sqlite"), catalog: SeedModels.catalog())
}
