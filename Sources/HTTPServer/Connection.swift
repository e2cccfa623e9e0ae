/// The connection a request arrived on, as seen by a responder while it
/// handles that request.
public struct Connection: Sendable {
    let daemon: HTTPDaemon
    let pointer: ConnectionPointer
    let context: RequestContext

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

/// A connection suspended until its answer is ready (see `Connection.suspend`).
public struct SuspendedConnection: Sendable {
    let daemon: HTTPDaemon
    let parked: ParkedConnection

    /// Sends `response` and resumes the connection; call it exactly once,
    /// from any thread, holding no lock.
    public func answer(_ response: HTTPResponse) {
        daemon.answerSuspended(parked, with: response)
    }
}
