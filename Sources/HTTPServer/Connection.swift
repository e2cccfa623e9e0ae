internal import CMicroHTTPD

/// The connection a request arrived on, as seen by a responder while it
/// handles that request.
public struct Connection: Sendable {
    let daemon: HTTPDaemon
    let pointer: ConnectionPointer
    let context: RequestContext

    /// The client's IP address as text (`127.0.0.1`, `::1`); nil when
    /// libmicrohttpd does not know it (or the daemon is a harness's,
    /// never started, whose connections are made up).
    public var clientAddress: String? {
        guard daemon.port != 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        let length = osv_connection_client_address(pointer.raw, &buffer, buffer.count)
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Parks (suspends) this connection until someone answers it with
    /// `HTTPDaemon.resume`, or until `timeout` passes, when `onDeadline`'s
    /// answer is sent. Returns nil when the server is stopping: answer now.
    /// After parking, the responder must return `.parked`.
    public func park(timeout: Duration, onDeadline: @escaping @Sendable () -> HTTPResponse?) -> ParkedConnection? {
        daemon.park(pointer, context: context, timeout: timeout, onDeadline: onDeadline)
    }

    /// Suspends this connection until `SuspendedConnection.answer` is
    /// called: for work that always finishes soon (a write waiting for its
    /// commit), so it has no deadline, and stopping the server waits for it.
    /// Returns nil when the server is stopping: answer now. After
    /// suspending, the responder must return `.parked`.
    public func suspend() -> SuspendedConnection? {
        daemon.suspend(pointer, context: context).map { SuspendedConnection(daemon: daemon, parked: $0) }
    }
}
