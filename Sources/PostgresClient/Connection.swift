internal import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// One PostgreSQL connection through libpq, in the text format.
///
/// A connection is not thread-safe by itself: its owner serialises access
/// (the model store holds it behind a lock). Statements with parameters are
/// prepared once per connection and reused.
public final class Connection: @unchecked Sendable {
    private var handle: OpaquePointer?
    private var prepared: [String: String] = [:]

    /// Connects to `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`),
    /// giving up after `timeout` seconds.
    public init(url: String, timeout: Int = 5, applicationName: String = "observable-server") throws(PostgresError) {
        let keywords = ["dbname", "connect_timeout", "application_name", "keepalives_idle", "keepalives_interval", "keepalives_count"]
        let values = [url, String(timeout), applicationName, "5", "2", "3"]
        let handle = withCStrings(keywords) { keywords in
            withCStrings(values) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let handle else { throw PostgresError(message: "out of memory connecting", sqlState: nil, connectionLost: true) }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(handle)).trimmingNewlines()
            PQfinish(handle)
            throw PostgresError(message: message, sqlState: nil, connectionLost: true)
        }
        self.handle = handle
        // Notices (e.g. "relation already exists, skipping") are not errors: not printed.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit {
        close()
    }

    /// Closes the connection; idempotent.
    public func close() {
        guard let handle else { return }
        PQfinish(handle)
        self.handle = nil
        prepared.removeAll()
    }

    /// Whether the connection is open and in a good state.
    public var isOpen: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// The socket to wait on for notifications (-1 when closed).
    public var socket: Int32 {
        guard let handle else { return -1 }
        return PQsocket(handle)
    }

    private func open() throws(PostgresError) -> OpaquePointer {
        guard let handle else { throw PostgresError(message: "the connection is closed", sqlState: nil, connectionLost: true) }
        return handle
    }

    /// Runs one or more statements without parameters (a migration, `BEGIN`)
    /// in one round trip; returns the rows of the last.
    @discardableResult
    public func execute(_ sql: String) throws(PostgresError) -> Rows {
        let handle = try open()
        return try rows(PQexec(handle, sql), handle, sql: sql)
    }

    /// Runs `sql` with `$1`, `$2`… bound to `parameters` (text; nil is
    /// NULL), prepared once per connection, and returns its rows.
    @discardableResult
    public func query(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> Rows {
        let handle = try open()
        let name: String
        if let known = prepared[sql] {
            name = known
        } else {
            name = "s\(prepared.count)"
            let result = PQprepare(handle, name, sql, Int32(parameters.count), nil)
            defer { PQclear(result) }
            try check(result, handle, sql: sql)
            prepared[sql] = name
        }
        let result = withOptionalCStrings(parameters) { values in
            PQexecPrepared(handle, name, Int32(parameters.count), values, nil, nil, 0)
        }
        return try rows(result, handle, sql: sql)
    }

    /// The rows of `result`, or its error (the result freed).
    private func rows(_ result: OpaquePointer?, _ handle: OpaquePointer, sql: String) throws(PostgresError) -> Rows {
        do {
            try check(result, handle, sql: sql)
        } catch {
            PQclear(result)
            throw error
        }
        return Rows(result!)
    }

    private func check(_ result: OpaquePointer?, _ handle: OpaquePointer, sql: String) throws(PostgresError) {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_EMPTY_QUERY else { return }
        var sqlState: String?
        var message = String(cString: PQerrorMessage(handle)).trimmingNewlines()
        if let result {
            if let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))) { sqlState = String(cString: state) }
            let text = String(cString: PQresultErrorMessage(result)).trimmingNewlines()
            if !text.isEmpty { message = text }
        }
        let lost = PQstatus(handle) != CONNECTION_OK || sqlState?.hasPrefix("08") == true || sqlState?.hasPrefix("57P") == true
        throw PostgresError(message: message, sqlState: sqlState, connectionLost: lost, sql: sql)
    }

    // MARK: - Notifications

    /// Reads what the server sent and returns the notifications received
    /// (channel and payload), waiting up to `timeout` seconds for the first.
    public func notifications(waiting timeout: Double) throws(PostgresError) -> [(channel: String, payload: String)] {
        let handle = try open()
        var found = drain(handle)
        if !found.isEmpty { return found }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, Int32(max(0, timeout * 1000)))
        if ready > 0 {
            guard PQconsumeInput(handle) == 1 else {
                throw PostgresError(message: String(cString: PQerrorMessage(handle)).trimmingNewlines(), sqlState: nil, connectionLost: true)
            }
            found = drain(handle)
        }
        if PQstatus(handle) != CONNECTION_OK {
            throw PostgresError(message: "the connection was lost", sqlState: nil, connectionLost: true)
        }
        return found
    }

    private func drain(_ handle: OpaquePointer) -> [(channel: String, payload: String)] {
        var found: [(channel: String, payload: String)] = []
        while let notify = PQnotifies(handle) {
            found.append((String(cString: notify.pointee.relname), String(cString: notify.pointee.extra)))
            PQfreemem(notify)
        }
        return found
    }
}

extension String {
    fileprivate func trimmingNewlines() -> String {
        var text = Substring(self)
        while let last = text.last, last.isNewline || last == " " { text = text.dropLast() }
        return String(text)
    }
}

/// Calls `body` with `strings` as a C array of C strings.
private func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
    var pointers: [UnsafePointer<CChar>?] = strings.map { UnsafePointer(strdup($0)) }
    pointers.append(nil)
    defer { for pointer in pointers { free(UnsafeMutableRawPointer(mutating: pointer)) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// Calls `body` with `strings` as a C array of C strings, NULL for nil.
private func withOptionalCStrings<T>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
    if strings.isEmpty { return body(nil) }
    let pointers: [UnsafePointer<CChar>?] = strings.map { $0.map { UnsafePointer(strdup($0)) } ?? nil }
    defer { for pointer in pointers { free(UnsafeMutableRawPointer(mutating: pointer)) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
