internal import CMicroHTTPD
import Concurrency
#if canImport(Glibc)
import Glibc
#endif

/// No client starves the rest: each connection gets a record in
/// libmicrohttpd's `socket_context` when it opens (`OpenConnections`), one
/// from an address that holds its share already is refused, and a request
/// that takes too long to arrive is cut.
extension HTTPDaemon {
    /// A connection was accepted. One from an address that holds its share
    /// of connections already is answered `429` and shut at once
    /// (libmicrohttpd then reads its end and closes it); the others get a
    /// record, released when they close.
    func connectionOpened(_ connection: OpaquePointer, socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        let key = osv_client_key_of(connection)
        let socket = osv_connection_fd(connection)
        if let record = connections.open(socket: socket, address: ClientAddress(high: key.high, low: key.low)) {
            socketContext.pointee = Unmanaged.passRetained(record).toOpaque()
            return
        }
        var refusal = responder.refusal(
            status: 429,
            detail: "This address holds \(connections.limitPerAddress) connections already, the most one address may hold, "
                + "or the server's last connections are kept for addresses that hold none.",
            request: nil)
        refusal.setHeader("Retry-After", "1")
        refusal.write(closingTo: socket)
        shutdown(socket, Int32(SHUT_RDWR))
    }

    /// libmicrohttpd closes the connection's socket once this returns.
    func connectionClosed(socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let record = socketContext.pointee else { return }
        socketContext.pointee = nil
        connections.close(Unmanaged<OpenConnection>.fromOpaque(record).takeRetainedValue())
    }

    /// Tells the connection's record that its request is in (whatever
    /// comes next, it is no longer being received); false when the clock
    /// cut the connection for taking too long meanwhile (close it then).
    func requestIsIn(_ connection: OpaquePointer) -> Bool {
        guard let record = osv_connection_context(connection) else { return true }
        return Unmanaged<OpenConnection>.fromOpaque(record)._withUnsafeGuaranteedRef { $0.requestReceived() }
    }

    /// The connection's request is done; it waits for the next one.
    func requestDone(_ connection: OpaquePointer) {
        guard let record = osv_connection_context(connection) else { return }
        Unmanaged<OpenConnection>.fromOpaque(record)._withUnsafeGuaranteedRef { $0.requestFinished() }
    }

    /// Once a second (the deadline clock calls it more often): answers `408`
    /// and shuts each connection whose request has been arriving for longer
    /// than the request timeout, outside the table's lock, each once.
    func cutOverdueRequests(now: ServerClock.Instant) {
        guard let overdue = connections.overdue(now: now), !overdue.isEmpty else { return }
        for connection in overdue {
            connection.cut { responder.refusal(status: 408, detail: "The request was not received within \(configuration.requestTimeout) seconds.",
                                               request: nil) }
        }
        logger.notice("cut \(overdue.count) connection(s) sending a request for longer than \(configuration.requestTimeout) s")
    }
}
