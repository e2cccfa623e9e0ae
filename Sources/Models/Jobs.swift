import SQLiteStore

/// Placeholder, to be replaced by the model.
public struct Jobs: Sendable {
    static func load(_ database: Database) throws -> Jobs { Jobs() }
}
