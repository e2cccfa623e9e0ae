/// A failed libpq call: PostgreSQL's message, its SQLSTATE, and whether the
/// connection is gone (to reconnect rather than retry on it).
public struct PostgresError: Error, CustomStringConvertible {
    public let message: String
    public let sqlState: String?
    public let connectionLost: Bool
    public var sql: String?

    public init(message: String, sqlState: String?, connectionLost: Bool, sql: String? = nil) {
        self.message = message
        self.sqlState = sqlState
        self.connectionLost = connectionLost
        self.sql = sql
    }

    public var description: String {
        var text = "PostgreSQL error"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let sql { text += " (in \(sql.prefix(120)))" }
        return text
    }

    /// A unique or check constraint refused the row.
    public var isConstraintViolation: Bool { sqlState?.hasPrefix("23") == true }
}
