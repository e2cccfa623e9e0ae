internal import CSQLite
import FoundationEssentials

/// One SQLite connection.
///
/// A connection is not thread-safe by itself: its owner serialises access
/// (the model store holds it behind a lock).
public final class Database: @unchecked Sendable {
    let handle: OpaquePointer
    public let path: String
    private var statements: [String: Statement] = [:]

    /// How durable a commit is. `normal` (the default in WAL mode) survives a
    /// crash of the process; `full` also survives a power loss.
    public enum Synchronous: String, Sendable, CaseIterable {
        case normal = "NORMAL"
        case full = "FULL"
    }

    /// Opens (creating when missing) the database file at `path`, creating its
    /// folder, and sets WAL mode.
    public init(path: String, synchronous: Synchronous = .normal) throws(SQLiteError) {
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !folder.isEmpty {
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let handle { sqlite3_close_v2(handle) }
            throw SQLiteError(code: rc, message: message + " (\(path))", sql: nil)
        }
        self.handle = handle
        self.path = path
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, 5_000)
        try execute("PRAGMA journal_mode = WAL")
        try execute("PRAGMA synchronous = \(synchronous.rawValue)")
        try execute("PRAGMA foreign_keys = ON")
        // The log is copied back into the database every 4,000 pages (16
        // MiB) rather than 1,000: a page that many transactions change (the
        // end of an index, a counter's row) is copied once for more of them.
        try execute("PRAGMA wal_autocheckpoint = 4000")
        // A log that grew under a burst of writes is cut back to 64 MiB the
        // next time it starts over, instead of keeping its largest size.
        try execute("PRAGMA journal_size_limit = 67108864")
    }

    deinit {
        close()
    }

    private var isClosed = false
    /// What `onCommit` registered, held until the connection closes.
    private var commitHook: Unmanaged<CommitHook>?

    /// Finalizes every statement and closes the connection; idempotent.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        statements.removeAll()
        if let commitHook {
            sqlite3_wal_hook(handle, nil, nil)
            commitHook.release()
        }
        sqlite3_close_v2(handle)
    }

    /// Calls `body` after each commit with the pages the log now holds,
    /// instead of copying the log back into the database itself: this
    /// connection's automatic checkpoint is off from then on, and someone
    /// else checkpoints (`checkpoint`, on another connection).
    public func onCommit(_ body: @escaping @Sendable (Int) -> Void) {
        commitHook?.release()
        let hook = Unmanaged.passRetained(CommitHook(body))
        commitHook = hook
        sqlite3_wal_hook(handle, { context, _, _, pages in
            Unmanaged<CommitHook>.fromOpaque(context!).takeUnretainedValue().body(Int(pages))
            return SQLITE_OK
        }, hook.toOpaque())
    }

    /// Copies the log back into the database as far as no reader needs it,
    /// without waiting for anyone (a passive checkpoint); returns whether
    /// it copied all of it.
    @discardableResult
    public func checkpoint() -> Bool {
        var logged: Int32 = 0
        var copied: Int32 = 0
        let rc = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &logged, &copied)
        return rc == SQLITE_OK && copied == logged
    }

    func error(_ rc: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs one or more statements that return no rows.
    public func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "error"
            sqlite3_free(message)
            throw SQLiteError(code: rc, message: text, sql: sql)
        }
    }

    /// A prepared statement for `sql`, prepared once per connection and reused.
    public func statement(_ sql: String) throws(SQLiteError) -> Statement {
        if let cached = statements[sql] { return cached }
        let statement = try Statement(database: self, sql: sql)
        statements[sql] = statement
        return statement
    }

    /// Runs `sql` with `values` (a cached statement).
    public func execute(_ sql: String, _ values: [SQLValue]) throws(SQLiteError) {
        try statement(sql).execute(values)
    }

    /// Returns every row of the query `sql`.
    public func rows(_ sql: String, _ values: [SQLValue] = []) throws(SQLiteError) -> [Row] {
        try statement(sql).rows(values)
    }

    /// The rowid of the row this connection inserted last.
    public var lastInsertRowID: Int64 {
        sqlite3_last_insert_rowid(handle)
    }

    /// Rows inserted, updated or deleted on this connection since it opened:
    /// a statement that failed, or changed nothing, leaves it as it was.
    public var totalChanges: Int64 {
        Int64(sqlite3_total_changes64(handle))
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction: committed when it
    /// returns, rolled back when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE", [])
        do {
            let result = try body()
            try execute("COMMIT", [])
            return result
        } catch {
            try? execute("ROLLBACK", [])
            throw error
        }
    }

    /// `PRAGMA integrity_check`'s first line: `ok` for a sound file.
    public func integrityCheck() throws(SQLiteError) -> String {
        try rows("PRAGMA integrity_check").first?[0].string ?? "unknown"
    }
}

/// The closure a connection calls after each commit (`Database.onCommit`).
final class CommitHook: Sendable {
    let body: @Sendable (Int) -> Void

    init(_ body: @escaping @Sendable (Int) -> Void) {
        self.body = body
    }
}
