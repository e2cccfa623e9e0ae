internal import CSQLite

/// A prepared statement: prepared in `init`, finalized in `deinit`.
public final class Statement {
    let handle: OpaquePointer
    public let sql: String
    unowned let database: Database

    init(database: Database, sql: String) throws(SQLiteError) {
        var handle: OpaquePointer?
        let rc = sqlite3_prepare_v3(database.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard rc == SQLITE_OK, let handle else {
            throw database.error(rc, sql: sql)
        }
        self.handle = handle
        self.sql = sql
        self.database = database
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Binds `values` to the parameters 1…n, replacing earlier bindings.
    public func bind(_ values: [SQLValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, index)
            case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
            case .real(let v): rc = sqlite3_bind_double(handle, index, v)
            // An explicit byte count keeps text with U+0000 whole.
            case .text(let v): rc = bindText(v, at: index)
            case .blob(let v):
                rc = v.withUnsafeBytes { bytes in
                    guard let base = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_zeroblob(handle, index, 0) }
                    return sqlite3_bind_blob64(handle, index, base, sqlite3_uint64(bytes.count), osv_sqlite_transient())
                }
            }
            guard rc == SQLITE_OK else { throw database.error(rc, sql: sql) }
        }
    }

    /// Binds the string's own UTF-8 bytes (no C string is made), copied by
    /// SQLite; an empty string is text, not NULL.
    private func bindText(_ text: String, at index: Int32) -> Int32 {
        var text = text
        return text.withUTF8 { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else {
                return sqlite3_bind_text(handle, index, "", 0, osv_sqlite_transient())
            }
            return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(handle, index, $0, Int32(bytes.count), osv_sqlite_transient())
            }
        }
    }

    /// Runs a statement that returns no rows.
    public func execute(_ values: [SQLValue] = []) throws(SQLiteError) {
        try bind(values)
        defer { sqlite3_reset(handle) }
        let rc = sqlite3_step(handle)
        guard rc == SQLITE_DONE || rc == SQLITE_ROW else { throw database.error(rc, sql: sql) }
    }

    /// Runs a query and returns every row.
    public func rows(_ values: [SQLValue] = []) throws(SQLiteError) -> [Row] {
        try bind(values)
        defer { sqlite3_reset(handle) }
        var result: [Row] = []
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE { return result }
            guard rc == SQLITE_ROW else { throw database.error(rc, sql: sql) }
            result.append(currentRow())
        }
    }

    /// Runs a query and hands `body` each row in turn, read in place: the
    /// rows are never all held at once (loading a million of them did).
    public func forEachRow(_ values: [SQLValue] = [], _ body: (CurrentRow) throws -> Void) throws {
        try bind(values)
        defer { sqlite3_reset(handle) }
        let row = CurrentRow(handle: handle)
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw database.error(rc, sql: sql) }
            try body(row)
        }
    }

    private func currentRow() -> Row {
        let row = CurrentRow(handle: handle)
        let count = Int(sqlite3_column_count(handle))
        var values: [SQLValue] = []
        values.reserveCapacity(count)
        for i in 0..<count { values.append(row[i]) }
        return Row(values: values)
    }
}

