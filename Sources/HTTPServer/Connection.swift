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
    public func park(timeout: Duration, onDeadline: @escaping @Sendable () -> HTTPResponse) -> ParkedConnection? {
        daemon.park(pointer, context: context, timeout: timeout, onDeadline: onDeadline)
    }
}
