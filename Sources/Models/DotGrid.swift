import SQLiteStore

/// Placeholder, to be replaced by the model.
public struct DotGrid: Sendable {
    static func load(_ database: Database) throws -> DotGrid { DotGrid() }
}
