import SQLiteStore

/// Placeholder, to be replaced by the model.
public struct Posts: Sendable {
    static func load(_ database: Database) throws -> Posts { Posts() }
}
