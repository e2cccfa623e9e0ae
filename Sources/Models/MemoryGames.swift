import SQLiteStore

/// Placeholder, to be replaced by the model.
public struct MemoryGames: Sendable {
    static func load(_ database: Database) throws -> MemoryGames { MemoryGames() }
}
