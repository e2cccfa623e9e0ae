internal import CSQLite

/// The row a statement stands on, read in place while `forEachRow` hands it
/// over; it must not be kept.
public struct CurrentRow {
    let handle: OpaquePointer

    /// The value in `column`.
    public subscript(column: Int) -> SQLValue {
        let i = Int32(column)
        switch sqlite3_column_type(handle, i) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, i))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, i))
        case SQLITE_NULL: return .null
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, i))
            if let bytes = sqlite3_column_blob(handle, i), count > 0 {
                return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
            }
            return .blob([])
        default:
            if let text = sqlite3_column_text(handle, i) {
                let count = Int(sqlite3_column_bytes(handle, i))
                return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
            }
            return .null
        }
    }

    /// Whether `column` holds text.
    public func isText(_ column: Int) -> Bool {
        sqlite3_column_type(handle, Int32(column)) == SQLITE_TEXT
    }

    /// The UTF-8 bytes of the text in `column`, handed to `body` without a
    /// copy; nil when it holds no text.
    public func withText<Result>(_ column: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result? {
        let i = Int32(column)
        guard sqlite3_column_type(handle, i) == SQLITE_TEXT, let text = sqlite3_column_text(handle, i) else { return nil }
        return try body(UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, i))))
    }

    /// The text in `column`, as `SQLValue.string` reads it: nil unless it holds text.
    public func string(_ column: Int) -> String? {
        withText(column) { String(decoding: $0, as: UTF8.self) }
    }

    /// The integer in `column`, as `SQLValue.int64` reads it: nil unless it holds an integer.
    public func int64(_ column: Int) -> Int64? {
        let i = Int32(column)
        guard sqlite3_column_type(handle, i) == SQLITE_INTEGER else { return nil }
        return sqlite3_column_int64(handle, i)
    }
}
