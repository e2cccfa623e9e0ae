internal import CSQLite

/// A failed SQLite call: its result code, SQLite's message and the SQL involved.
public struct SQLiteError: Error, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public let sql: String?

    public var description: String {
        if let sql { return "SQLite error \(code): \(message) (in \(sql))" }
        return "SQLite error \(code): \(message)"
    }

    /// True for SQLITE_BUSY and SQLITE_LOCKED: another connection holds the lock.
    public var isBusy: Bool { code & 0xff == SQLITE_BUSY || code & 0xff == SQLITE_LOCKED }

    /// True for SQLITE_FULL: the disk (or the file's size limit) has no room.
    public var isFull: Bool { code & 0xff == SQLITE_FULL }
}
